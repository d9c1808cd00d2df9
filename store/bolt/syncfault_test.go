package bolt

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestCommitSyncFailureFailsWrites makes a commit fail the way bbolt
// reports a failed fdatasync after writing the commit's pages: that commit
// and every later write of the file fail, in every store of it and in
// either mode, until the file is opened again, which reads back what
// reached the disk.
func TestCommitSyncFailureFailsWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string, cacheSize int) store.Store {
		t.Helper()
		s, err := Open(t.Context(), path, &store.Options{
			Name: name, Codec: codec, CacheSize: cacheSize,
			Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app")},
		})
		if err != nil {
			t.Fatalf("Open %s: %v", name, err)
		}
		return s
	}
	closeStore := func(s store.Store) {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatalf("Close %s: %v", s.Info().Name, err)
		}
	}
	put := func(s store.Store, name, rv string) error {
		return s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: pod("ns", name, "x", rv)}}, ResourceVersion: rv})
	}
	keys := func(s store.Store) []string {
		k := s.ListKeys()
		slices.Sort(k)
		return k
	}
	a, b := open("pods", 0), open("other", 5) // b in the bounded mode
	if err := put(a, "p1", "10"); err != nil {
		t.Fatalf("commit: %v", err)
	}
	testHookCommitErr = func() error { return syscall.EIO }
	err = put(a, "p2", "20")
	testHookCommitErr = nil
	wantFault := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EIO) || !errors.Is(err, store.ErrWritesStopped) || !strings.Contains(err.Error(), "opened again") {
			t.Errorf("%s = %v, want an error wrapping store.ErrWritesStopped and EIO that says to open the file again", what, err)
		}
	}
	wantFault("the commit that failed to sync", err)
	wantFault("a later commit", put(a, "p3", "30"))
	wantFault("a commit of another store of the file", put(b, "q1", "40"))
	wantFault("AddIndexers", a.AddIndexers(cache.Indexers{"tier": indexer.LabelIndexFunc("tier")}))
	if rv := a.ResourceVersion(); rv != "10" {
		t.Errorf("ResourceVersion after the failures = %q, want 10", rv)
	}
	if diff := cmp.Diff([]string{"ns/p1"}, keys(a)); diff != "" {
		t.Errorf("keys after the failures (-want +got):\n%s", diff)
	}
	info := a.Info()
	closeStore(a)
	// b keeps the file open: the raw writes of this process (snapshot
	// restore, drop) go through the same file and are refused too.
	url := "bolt://" + path
	wantFault("Drop", store.Drop(t.Context(), url, "pods"))
	info.Name = "restored"
	wantFault("Import", store.Import(t.Context(), url, info, func() (store.Record, error) { return store.Record{}, io.EOF }))
	closeStore(b)

	// The failed commit's pages reached the disk here: the reopened file
	// has it. Writes work again.
	a = open("pods", 0)
	defer closeStore(a)
	if rv := a.ResourceVersion(); rv != "20" {
		t.Errorf("reopened: ResourceVersion = %q, want 20", rv)
	}
	if err := put(a, "p3", "30"); err != nil {
		t.Fatalf("commit after reopening: %v", err)
	}
	if diff := cmp.Diff([]string{"ns/p1", "ns/p2", "ns/p3"}, keys(a)); diff != "" {
		t.Errorf("keys after reopening (-want +got):\n%s", diff)
	}
}

// TestCommitFailuresThatAreNotSyncFailures checks which commit errors
// isSyncFailure takes for a failed sync: fdatasync's bare errno and EIO
// from anywhere; not a write refused for want of space, which leaves the
// file as it was and may be retried.
func TestCommitFailuresThatAreNotSyncFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{syscall.EIO, true},
		{syscall.ENOSPC, true}, // from fdatasync
		{&os.PathError{Op: "write", Path: "cache.db", Err: syscall.EIO}, true},
		{&os.PathError{Op: "write", Path: "cache.db", Err: syscall.ENOSPC}, false},
		{errors.New("file resize error: " + syscall.ENOSPC.Error()), false}, // bbolt's grow, formatted with %s
		{errors.New("database not open"), false},
	} {
		if got := isSyncFailure(tc.err); got != tc.want {
			t.Errorf("isSyncFailure(%#v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
