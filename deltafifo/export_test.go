package deltafifo

// SetWaitHook makes f run each time a Pop is about to block, with the queue
// locked; it returns a func that removes the hook. Tests only, not parallel.
func SetWaitHook(f func()) (restore func()) {
	waitHook = f
	return func() { waitHook = nil }
}
