package deltafifo

// SetWaitHook makes f run each time a Pop is about to block, with the queue
// locked; it returns a func that removes the hook. Tests only, not parallel.
func SetWaitHook(f func()) (restore func()) {
	waitHook = f
	return func() { waitHook = nil }
}

// DequeChunk and DequeSpares are the size of a queue's chunks, and how many
// emptied ones it keeps.
const DequeChunk, DequeSpares = dequeChunk, dequeSpares

// HeldChunks returns how many chunks of queued units the FIFO holds, its
// spares included.
func (f *FIFO) HeldChunks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.units.held()
}

// SetFullHook makes f run each time a write starts waiting for room in a
// full FIFO (Options.MaxQueued), with the queue locked; it returns a func
// that removes the hook. Tests only, not parallel.
func SetFullHook(f func()) (restore func()) {
	testHookFull = f
	return func() { testHookFull = nil }
}
