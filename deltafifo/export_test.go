package deltafifo

import "unsafe"

// SetWaitHook makes f run each time a Pop is about to block, with the queue
// locked; it returns a func that removes the hook. Tests only, not parallel.
func SetWaitHook(f func()) (restore func()) {
	waitHook = f
	return func() { waitHook = nil }
}

// ArrayStart returns the address of the queue's backing array, to tell
// when it is reallocated.
func (f *FIFO) ArrayStart() uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return uintptr(unsafe.Pointer(unsafe.SliceData(f.units.buf)))
}

// SetFullHook makes f run each time a write starts waiting for room in a
// full FIFO (Options.MaxQueued), with the queue locked; it returns a func
// that removes the hook. Tests only, not parallel.
func SetFullHook(f func()) (restore func()) {
	testHookFull = f
	return func() { testHookFull = nil }
}
