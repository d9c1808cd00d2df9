package writeback

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestEvery checks that Every kicks every Period until stopped, that stop
// ends its goroutine (TestMain fails on a leaked one) and may be called
// again, and that Start works on a file with dirty pages and on a closed
// one.
func TestEvery(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	rc := Conn(f)
	if got := rc != nil; got != Supported {
		t.Fatalf("Conn of an open file: %v; want %v (Supported)", got, Supported)
	}
	kicks, clearHook := WatchKicks()
	defer clearHook()
	started := 0
	stop := Every(func() {
		started++ // on Every's goroutine only
		if rc != nil {
			Start(rc)
		}
	})
	for i := range 3 {
		select {
		case <-kicks:
		case <-time.After(10 * time.Second):
			stop()
			t.Fatalf("kick %d: none within 10s (Period %v)", i+1, Period)
		}
	}
	stop()
	stop()
	if started < 3 {
		t.Errorf("%d kicks; want at least 3", started)
	}
	// On a closed file it does nothing, and does not fail.
	f.Close()
	if rc != nil {
		Start(rc)
	}
}
