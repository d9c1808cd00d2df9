package badger

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// failVlogSync does what badger's value-log writer does when the fsync
// after a write fails: it logs the failure, and nothing else.
func failVlogSync(sh *sharedDB) {
	sh.db.Opts().Logger.Errorf(badgerVlogSyncFailed, syscall.EIO)
}

// wantSyncFault checks that err is the error of a write after (or during)
// a write that may not have reached the disk for cause.
func wantSyncFault(t *testing.T, what string, err, cause error) {
	t.Helper()
	if !errors.Is(err, cause) || !errors.Is(err, store.ErrWritesStopped) || !strings.Contains(err.Error(), "opened again") {
		t.Errorf("%s = %v, want an error wrapping store.ErrWritesStopped and %v that says to open the database again", what, err, cause)
	}
}

// openWithFault opens the store pods-a in dir, commits pods 1 and 2 with
// resume points 10 and 20 (the second with hook set, if any, as
// testHookCommitted) and returns the store and that second commit's error.
func openWithFault(t *testing.T, dir string, hook func(sh *sharedDB) error) (store.Store, error) {
	t.Helper()
	a, err := Open(t.Context(), dir, podOptions(t, "pods-a", 0))
	mustOK(t, "Open a", err)
	mustOK(t, "commit", putPod(t, a, 1, "10"))
	testHookCommitted = hook
	defer func() { testHookCommitted = nil }()
	return a, putPod(t, a, 2, "20")
}

func putPod(t *testing.T, s store.Store, i int, rv string) error {
	return s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(i, rv, "x")}}, ResourceVersion: rv})
}

// wantStore checks s's resume point and contents.
func wantStore(t *testing.T, what string, s store.Store, rv string, want map[string]string) {
	t.Helper()
	if got := s.ResourceVersion(); got != rv {
		t.Errorf("%s: %s: ResourceVersion = %q, want %q", what, s.Info().Name, got, rv)
	}
	if diff := cmp.Diff(want, contents(t, s)); diff != "" {
		t.Errorf("%s: %s: contents (-want +got):\n%s", what, s.Info().Name, diff)
	}
}

// TestVlogSyncFailureFailsWrites makes badger report a failed fsync of its
// value log the way it does, through its logger and nothing else, between
// two writes: no write of the database succeeds from then on, in either
// mode and in any store of the directory, and none is made, until the
// database is opened again.
func TestVlogSyncFailureFailsWrites(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(t.Context(), dir, podOptions(t, "pods-a", 0))
	mustOK(t, "Open a", err)
	b, err := Open(t.Context(), dir, podOptions(t, "pods-b", 5)) // bounded mode
	mustOK(t, "Open b", err)
	mustOK(t, "commit a", putPod(t, a, 1, "10"))
	mustOK(t, "commit b", putPod(t, b, 1, "10"))

	failVlogSync(spaceOf(t, a).sh)
	wantSyncFault(t, "commit a", putPod(t, a, 2, "20"), syscall.EIO)
	wantSyncFault(t, "commit a again", putPod(t, a, 2, "20"), syscall.EIO) // a retry fails too
	wantSyncFault(t, "commit b", putPod(t, b, 2, "20"), syscall.EIO)
	wantSyncFault(t, "AddIndexers a", a.AddIndexers(cache.Indexers{"node": indexer.FieldIndexFunc("spec.nodeName")}), syscall.EIO)
	wantSyncFault(t, "Replace b", b.Replace(nil, "30"), syscall.EIO)
	// Reads go on.
	one := map[string]string{"ns-1/pod-000001": "10/x"}
	wantStore(t, "after the fault", a, "10", one)
	wantStore(t, "after the fault", b, "10", one)

	info := a.Info()
	mustOK(t, "close a", a.Close())
	// b keeps the database open: the raw writes of this process (snapshot
	// restore, drop) are refused too.
	url := "badger://" + dir
	wantSyncFault(t, "Drop", store.Drop(t.Context(), url, "pods-a"), syscall.EIO)
	info.Name = "restored"
	wantSyncFault(t, "Import", store.Import(t.Context(), url, info, func() (store.Record, error) { return store.Record{}, io.EOF }), syscall.EIO)
	mustOK(t, "close b", b.Close())
	for _, name := range []string{"pods-a", "pods-b"} {
		s, err := Open(t.Context(), dir, podOptions(t, name, 0))
		mustOK(t, "reopen "+name, err)
		wantStore(t, "reopened", s, "10", one)
		mustOK(t, "commit after reopening", putPod(t, s, 3, "30"))
		mustOK(t, "close "+name, s.Close())
	}
}

// commitFaults are the two ways a commit's own transaction may fail to
// reach the disk after badger wrote it: a failed fsync of the value log,
// which badger only logs, and an error its write goroutine returns (the
// memtable's log failed to sync).
var commitFaults = []struct {
	name string
	hook func(sh *sharedDB) error
	want error
}{
	{"value log fsync", func(sh *sharedDB) error { failVlogSync(sh); return nil }, syscall.EIO},
	{"write goroutine", func(*sharedDB) error { return errWriteGoroutine }, errWriteGoroutine},
}

// errWriteGoroutine stands for an error of badger's write goroutine.
var errWriteGoroutine = errors.New("writeRequests err: input/output error")

// TestSyncFailureDuringCommit makes a commit's own transaction fail to
// reach the disk after badger wrote it: the commit fails although badger
// has it, the default mode's reads do not show it, later writes fail, and
// the database is opened again with it.
func TestSyncFailureDuringCommit(t *testing.T) {
	for _, fault := range commitFaults {
		t.Run(fault.name, func(t *testing.T) {
			dir := t.TempDir()
			a, err := openWithFault(t, dir, fault.hook)
			wantSyncFault(t, "the commit", err, fault.want)
			wantSyncFault(t, "a later commit", putPod(t, a, 3, "30"), fault.want)
			one := map[string]string{"ns-1/pod-000001": "10/x"}
			wantStore(t, "after the fault", a, "10", one)
			mustOK(t, "close", a.Close())

			a, err = Open(t.Context(), dir, podOptions(t, "pods-a", 0))
			mustOK(t, "reopen", err)
			defer func() { mustOK(t, "close", a.Close()) }()
			wantStore(t, "reopened", a, "20", map[string]string{"ns-1/pod-000001": "10/x", "ns-2/pod-000002": "20/x"})
		})
	}
}

// TestSyncFailureDuringSwitch makes the transaction that switches a store
// to a new generation (AddIndexers rewrites the value records into one)
// fail to reach the disk after badger wrote it: the write fails, but the
// new generation, which the meta record names, must not be deleted as a
// failed write's would be, or the reopened store would have lost its
// objects.
func TestSyncFailureDuringSwitch(t *testing.T) {
	for _, fault := range commitFaults {
		t.Run(fault.name, func(t *testing.T) {
			dir := t.TempDir()
			a, err := openWithFault(t, dir, nil)
			mustOK(t, "commit", err)
			testHookCommitted = fault.hook
			err = a.AddIndexers(cache.Indexers{"node": indexer.FieldIndexFunc("spec.nodeName")})
			testHookCommitted = nil
			wantSyncFault(t, "AddIndexers", err, fault.want)
			mustOK(t, "close", a.Close())

			opts := podOptions(t, "pods-a", 0)
			opts.Indexers["node"] = indexer.FieldIndexFunc("spec.nodeName")
			a, err = Open(t.Context(), dir, opts)
			mustOK(t, "reopen", err)
			defer func() { mustOK(t, "close", a.Close()) }()
			wantStore(t, "reopened", a, "20", map[string]string{"ns-1/pod-000001": "10/x", "ns-2/pod-000002": "20/x"})
			checkIndexes(t, a)
		})
	}
}

// TestSyncFaultKeepsFirstCause checks what record makes of the arguments it
// may get: the first failure is kept, an error is wrapped, anything else is
// formatted.
func TestSyncFaultKeepsFirstCause(t *testing.T) {
	var f syncFault
	if err := f.failed(); err != nil {
		t.Fatalf("new fault: failed() = %v, want nil", err)
	}
	f.record([]interface{}{syscall.EIO})
	f.record([]interface{}{syscall.ENOSPC})
	if err := f.failed(); !errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOSPC) {
		t.Errorf("after EIO then ENOSPC: failed() = %v, want the first, EIO", err)
	}
	var g syncFault
	g.record(nil)
	if err := g.failed(); err == nil || !strings.Contains(err.Error(), "fsync of the value log failed") {
		t.Errorf("after a record without arguments: failed() = %v, want the failure named", err)
	}
}

// TestBadgerLogsVlogSyncFailure reads the value-log writer of the badger
// module this package is built with: syncFault relies on badger logging a
// failed fsync with exactly badgerVlogSyncFailed. When an upgrade changes
// that, this test fails and the detection must be revisited (if badger now
// returns the error, syncFault can go).
func TestBadgerLogsVlogSyncFailure(t *testing.T) {
	// The module's directory as this module's go.mod resolves it
	// (replacements included).
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/dgraph-io/badger/v4").Output()
	if err != nil {
		t.Fatalf("go list badger's module directory: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "value.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read badger's value-log writer: %v", err)
	}
	call := "vlog.opt.Errorf(" + strconv.Quote(badgerVlogSyncFailed) + ", err)"
	if !strings.Contains(string(src), call) {
		t.Errorf("%s no longer has %s: the value-log fsync failure is logged differently (or returned); revisit syncFault", path, call)
	}
}

// TestSyncFailureDuringRebuild makes a write batch, which writes a relist's
// new generation, fail to reach the disk after badger wrote it: the
// relist fails, and so do later writes; the store keeps what it had, and
// the new generation, not current, is left to the next open to delete.
func TestSyncFailureDuringRebuild(t *testing.T) {
	for _, fault := range commitFaults {
		t.Run(fault.name, func(t *testing.T) {
			dir := t.TempDir()
			a, err := openWithFault(t, dir, nil)
			mustOK(t, "commit", err)
			testHookFlushed = fault.hook
			err = a.Replace([]interface{}{newPod(3, "30", "x")}, "30")
			testHookFlushed = nil
			wantSyncFault(t, "Replace", err, fault.want)
			wantSyncFault(t, "a later commit", putPod(t, a, 4, "40"), fault.want)
			two := map[string]string{"ns-1/pod-000001": "10/x", "ns-2/pod-000002": "20/x"}
			wantStore(t, "after the fault", a, "20", two)
			mustOK(t, "close", a.Close())

			a, err = Open(t.Context(), dir, podOptions(t, "pods-a", 0))
			mustOK(t, "reopen", err)
			defer func() { mustOK(t, "close", a.Close()) }()
			wantStore(t, "reopened", a, "20", two)
			if gens := generationsOf(t, a); len(gens) != 1 {
				t.Errorf("generations after reopening = %v, want only the current one", gens)
			}
		})
	}
}
