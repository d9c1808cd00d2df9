package bolt

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestWritebackOnlyForDurableWrites checks which files early writeback runs
// for: those of durable stores, not those opened with durability=nosync
// (nothing waits for their pages), and a durable store's commits still
// work with it.
func TestWritebackOnlyForDurableWrites(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		durability store.Durability
		want       bool
	}{
		{store.DurabilitySync, writebackSupported},
		{store.DurabilityNoSync, false},
	} {
		t.Run(string(tc.durability), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			s, err := Open(t.Context(), path, &store.Options{Name: "pods", Codec: codec, Durability: tc.durability})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			filesMu.Lock()
			got := files[path].writeback != nil
			filesMu.Unlock()
			if got != tc.want {
				t.Errorf("file has a writeback handle: %v; want %v", got, tc.want)
			}
			if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: pod("ns", "p", "x", "2")}}, ResourceVersion: "2"}); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if _, ok, err := s.GetByKey("ns/p"); err != nil || !ok {
				t.Fatalf("GetByKey(ns/p) after the commit: found %v, %v", ok, err)
			}
		})
	}
}

// TestEarlyWriteback checks that earlyWriteback asks for writeback every
// writebackPeriod until stopped, and that stop ends its goroutine (the
// package's TestMain fails on a leaked one).
func TestEarlyWriteback(t *testing.T) {
	earlyWriteback(nil)() // no file: nothing to start or stop
	if !writebackSupported {
		return
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	requests := make(chan struct{}, 1)
	testHookWriteback = func() {
		select {
		case requests <- struct{}{}:
		default:
		}
	}
	defer func() { testHookWriteback = nil }()
	stop := earlyWriteback(rc)
	for i := range 3 {
		select {
		case <-requests:
		case <-time.After(10 * time.Second):
			stop()
			t.Fatalf("request %d: none within 10s (period %v)", i+1, writebackPeriod)
		}
	}
	stop()
	// On a closed file it does nothing, and does not fail.
	f.Close()
	startWriteback(rc)
}
