//go:build unix

package snapfile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
)

// flock locks belong to open file descriptions: a second Lock in this
// process conflicts with the first exactly as another process's would.

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "cache.snap")
	unlock, err := Lock(t.Context(), path, 0)
	if err != nil {
		t.Fatalf("Lock of a free file: %v", err)
	}
	_, err = Lock(t.Context(), path, 30*time.Millisecond)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path+LockSuffix) {
		t.Errorf("error %q does not name the lock file", err)
	}
	// A waiting Lock takes the file once it is released.
	released := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		unlock()
		close(released)
	}()
	unlock2, err := Lock(t.Context(), path, time.Minute)
	if err != nil {
		t.Fatalf("Lock waiting for a release: %v", err)
	}
	<-released
	unlock2()
	unlock3, err := Lock(t.Context(), path, 0)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock3()
}

// TestLockStopsWithContext checks that a Lock waiting for another process
// gives up when its context ends, long before its timeout, with the
// context's error and not ErrLocked, and leaves the lock to its holder.
func TestLockStopsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	unlock, err := Lock(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(t.Context())
	// Whether the cancel lands before or during the wait, the Lock must
	// end with it: nothing else would end a wait of an hour.
	stop := time.AfterFunc(20*time.Millisecond, cancel)
	defer stop.Stop()
	_, err = Lock(ctx, path, time.Hour)
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), path+LockSuffix) {
		t.Fatalf("Lock with its context canceled = %v, want context.Canceled naming the lock file", err)
	}
	if _, err := Lock(t.Context(), path, 0); !errors.Is(err, store.ErrLocked) {
		t.Errorf("Lock after the canceled one = %v, want ErrLocked (the holder keeps it)", err)
	}
}

// lockedElsewhere takes path's lock as a running process's stores hold it
// (until the test ends) and returns a raw driver that waits 30ms for it.
func lockedElsewhere(t *testing.T, path string) *Backend {
	t.Helper()
	unlock, err := Lock(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
	setRawLockTimeout(t, 30*time.Millisecond)
	return &Backend{Scheme: "test"}
}

// setRawLockTimeout sets rawLockTimeout until the test ends.
func setRawLockTimeout(t *testing.T, d time.Duration) {
	old := rawLockTimeout
	rawLockTimeout = d
	t.Cleanup(func() { rawLockTimeout = old })
}

func TestImportRefusesLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	d := lockedElsewhere(t, path)
	none := func() (store.Record, error) { return store.Record{}, errors.New("not reached") }
	u := mustURL(t, "test://"+path)
	err := d.Import(context.Background(), u, store.Info{Name: "pods"}, none)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Import into a locked file = %v, want ErrLocked", err)
	}
	// The raw driver refuses URL parameters: its error must not advise
	// one, and says what to do instead.
	if strings.Contains(err.Error(), "lock_timeout") || !strings.Contains(err.Error(), "close that process's stores") {
		t.Errorf("Import error %q advises lock_timeout=, which the raw driver refuses, or does not say to close the other process's stores", err)
	}
	if _, err := Read(path, func(*Header, string, []byte) error { return nil }); err == nil {
		t.Errorf("Import into a locked file wrote it")
	}

	// An Import that would wait an hour ends with its context.
	setRawLockTimeout(t, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	stop := time.AfterFunc(20*time.Millisecond, cancel)
	defer stop.Stop()
	if err := d.Import(ctx, u, store.Info{Name: "pods"}, none); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "import pods") {
		t.Errorf("Import with its context canceled while it waits = %v, want context.Canceled naming the import", err)
	}
}

func TestDropRefusesLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	if err := Write(path, sampleSections()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := lockedElsewhere(t, path)
	err = d.Drop(context.Background(), mustURL(t, "test://"+path), "pods")
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "drop pods") || !strings.Contains(err.Error(), "close that process's stores") {
		t.Fatalf("Drop from a locked file = %v, want ErrLocked naming the drop and saying what to do", err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("Drop from a locked file changed it (%v)", err)
	}
	// And a file open in this process, whichever of its stores, is
	// refused before the lock is even tried.
	d.files = map[string]*file{path: {path: path}}
	err = d.Drop(context.Background(), mustURL(t, "test://"+path), "nodes")
	if !errors.Is(err, store.ErrInUse) {
		t.Fatalf("Drop from a file open in this process = %v, want ErrInUse", err)
	}
}
