// Package writeback starts the kernel's writeback of a file's dirty pages
// while a durable commit writes them, so that the commit's sync waits only
// for what is left.
//
// bbolt and badger only fill the page cache, then wait in one sync for all
// of it to reach the disk; asked every Period to start writing what is
// dirty, the disk works while the engine still writes. It is a hint that
// changes no guarantee: the kernel may write any dirty page at any time
// anyway, and without SYNC_FILE_RANGE_WAIT_*, sync_file_range neither waits
// for pages nor checks their errors, so a write error is still the sync's.
package writeback

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Period is how often Every asks for writeback (BENCHMARKS.md, section 3).
const Period = time.Millisecond

// TestHookKick, when set by a test, is called after every kick of Every's
// goroutines, which may run while a test sets or clears it.
var TestHookKick atomic.Pointer[func()]

// WatchKicks, for tests, sets TestHookKick to signal kicks on the returned
// channel (one pending signal at most: a kick never waits for the test),
// and returns the function that clears it.
func WatchKicks() (kicks <-chan struct{}, unwatch func()) {
	ch := make(chan struct{}, 1)
	hook := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	TestHookKick.Store(&hook)
	return ch, func() { TestHookKick.Store(nil) }
}

// Every calls kick every Period on a goroutine of its own, and returns the
// function that stops it and waits for it to end; stop may be called more
// than once.
func Every(kick func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(Period)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				kick()
				if hook := TestHookKick.Load(); hook != nil {
					(*hook)()
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// Conn returns what Start needs of f, or nil where Start does nothing
// (Supported is false).
func Conn(f *os.File) syscall.RawConn {
	if !Supported || f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
