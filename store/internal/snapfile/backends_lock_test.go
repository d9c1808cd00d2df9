//go:build unix

package snapfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// TestFileLockedByAnotherProcess holds a snapshot file's lock as another
// process would (flock locks belong to open file descriptions, so a Lock of
// this process conflicts with the stores' as another process's does):
// Open waits lock_timeout and fails with ErrLocked, opens once the lock is
// released, and holds the lock itself until its file's last store closes,
// and a failed Open does not keep it. An Open waiting for the lock stops
// when its context ends.
func TestFileLockedByAnotherProcess(t *testing.T) {
	for _, b := range backends {
		t.Run(b.scheme, func(t *testing.T) { checkFileLocking(t, b.scheme, b.formatVersion) })
	}
}

func checkFileLocking(t *testing.T, scheme string, formatVersion int) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	opts := func(name string) *store.Options { return &store.Options{Name: name, Codec: codec} }
	url := scheme + "://" + path + "?lock_timeout=30ms"

	unlock, err := snapfile.Lock(t.Context(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(t.Context(), url, opts("pods")); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Open of a file another process holds = %v, want ErrLocked", err)
	} else if !strings.Contains(err.Error(), "lock_timeout=") {
		// Open takes the parameter (with a file): the error says so.
		t.Errorf("Open error %q does not say how to wait longer (lock_timeout=)", err)
	}
	// An Open that would wait an hour ends with its context.
	ctx, cancel := context.WithCancel(t.Context())
	stop := time.AfterFunc(20*time.Millisecond, cancel)
	defer stop.Stop()
	if _, err := store.Open(ctx, scheme+"://"+path+"?lock_timeout=1h", opts("pods")); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrLocked) {
		t.Fatalf("Open with its context canceled while it waits = %v, want context.Canceled", err)
	}
	unlock()

	pods, err := store.Open(t.Context(), url, opts("pods"))
	if err != nil {
		t.Fatalf("Open after the other process released the file: %v", err)
	}
	nodes, err := store.Open(t.Context(), url, opts("nodes")) // same process: shares the lock
	if err != nil {
		t.Fatalf("Open of a second store of the file: %v", err)
	}
	for _, s := range []store.Store{pods, nodes} {
		if _, err := snapfile.Lock(t.Context(), path, 0); !errors.Is(err, store.ErrLocked) {
			t.Fatalf("another process's Lock while a store is open = %v, want ErrLocked", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err = snapfile.Lock(t.Context(), path, 0)
	if err != nil {
		t.Fatalf("another process's Lock after the last store closed: %v", err)
	}
	unlock()

	// Opens that fail after taking the lock release it: a damaged file,
	// and a file whose object does not decode.
	o, err := opts("pods").WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	undecodable := []snapfile.Section{{
		Header: snapfile.Header{Name: "pods", Meta: driver.MetaFor(o, formatVersion)},
		Len:    1,
		Records: func(yield func(string, []byte) bool) {
			yield("ns/a", []byte{0xff, 0xff, 0xff})
		},
	}}
	for _, damage := range []func() error{
		func() error { return os.WriteFile(path, []byte("not a snapshot file"), 0o600) },
		func() error { return snapfile.Write(path, undecodable) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		if s, err := store.Open(t.Context(), url, opts("pods")); !errors.Is(err, store.ErrCorrupt) {
			if err == nil {
				s.Close()
			}
			t.Fatalf("Open of a damaged file = %v, want ErrCorrupt", err)
		}
		unlock, err = snapfile.Lock(t.Context(), path, 0)
		if err != nil {
			t.Fatalf("Lock after a failed Open: %v", err)
		}
		unlock()
	}
}
