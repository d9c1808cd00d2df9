package informer

import (
	"testing"
	"time"
)

// waitWatching waits until n watches have been requested from f (see
// waitLimit: not a timing assertion). A watch is open once requested (both
// happen under f.mu), so events sent after this reach it: a cold informer
// reports synced once its list is applied, which can be before its
// reflector has opened the watch.
func (f *fakeLW) waitWatching(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		f.mu.Lock()
		got := len(f.watches)
		f.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watches requested after %v, want %d", got, waitLimit, n)
		}
		time.Sleep(time.Millisecond)
	}
}
