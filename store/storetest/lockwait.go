package storetest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
)

// CheckLockWaitBlocksNoOtherDatabase checks that an Open waiting for
// another process's lock holds up nothing else in this process. url(path)
// is the URL of the backend's database at path (a file or a directory
// under a fresh directory); hold(path) takes the database's lock as
// another process would (a lock of this process through another open file
// description conflicts the same way) and returns its release. While an
// Open of the held database waits, a store of another database opens,
// works and closes, and a second Open of the held database waits too;
// once the lock is released, both open, sharing the database.
func CheckLockWaitBlocksNoOtherDatabase(t *testing.T, url func(path string) string, hold func(t *testing.T, path string) (release func())) {
	t.Helper()
	dir := t.TempDir()
	held, other := filepath.Join(dir, "held"), filepath.Join(dir, "other")
	codec := podCodec(t)
	release := hold(t, held)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	withTimeout := func(path string) string { return withParam(url(path), "lock_timeout=1m") }
	type result struct {
		s   store.Store
		err error
	}
	openAsync := func(path, name string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			s, err := store.Open(t.Context(), withTimeout(path), &store.Options{Name: name, Codec: codec})
			ch <- result{s, err}
		}()
		return ch
	}
	// No hook tells when the first Open waits for the lock; the second
	// either waits for the first or, if it came first, is the one waiting
	// for the lock. Both must still be waiting below, either way.
	first := openAsync(held, "pods")
	second := openAsync(held, "nodes")

	// The held database's Opens wait a minute; one that blocks the other
	// database for as long fails here first.
	select {
	case r := <-openAsync(other, "pods"):
		if r.err != nil {
			t.Fatalf("Open of another database: %v", r.err)
		}
		if err := r.s.Add(newPod("ns", "a", "1")); err != nil {
			t.Errorf("Add to the store of another database: %v", err)
		} else if _, ok, err := r.s.GetByKey("ns/a"); !ok || err != nil {
			t.Errorf("GetByKey of what was added to the store of another database: %v, %v", ok, err)
		}
		if err := r.s.Close(); err != nil {
			t.Errorf("Close of the store of another database: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open of another database waited for the lock of the held one")
	}
	select {
	case r := <-first:
		t.Fatalf("Open of the held database returned while it was held: %v", r.err)
	case r := <-second:
		t.Fatalf("second Open of the held database returned while it was held: %v", r.err)
	default:
	}

	release()
	released = true
	for i, ch := range []<-chan result{first, second} {
		r := <-ch
		if r.err != nil {
			t.Fatalf("Open %d of the held database once released: %v", i+1, r.err)
		}
		defer r.s.Close()
		if err := r.s.Add(newPod("ns", "b", "1")); err != nil {
			t.Errorf("Add through Open %d of the held database: %v", i+1, err)
		}
	}
}
