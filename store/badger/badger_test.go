package badger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

func dirURL(dir, query string) string {
	return "badger://" + (&url.URL{Path: dir}).EscapedPath() + query
}

// smallConfig makes badger's transaction limit small (about 2,400 entries)
// and its files small, so tests reach ErrTxnTooBig and value-log GC with
// little data.
func smallConfig() dbConfig {
	cfg := defaultDBConfig()
	cfg.memTableSize = 1 << 20
	cfg.valueLogFileSize = 1 << 20
	cfg.gcInterval = 0
	return cfg
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		url     string
		wantErr error
		errHas  string
	}{
		{"plain", dirURL(filepath.Join(dir, "a"), ""), nil, ""},
		{"all parameters", dirURL(filepath.Join(dir, "b"), "?durability=nosync&lock_timeout=1s&cache=10&gc_interval=1m"), nil, ""},
		{"unknown parameter", dirURL(filepath.Join(dir, "c"), "?no_such=1"), store.ErrInvalid, `"no_such"`},
		{"bad gc_interval", dirURL(filepath.Join(dir, "d"), "?gc_interval=often"), store.ErrInvalid, "gc_interval"},
		{"bad durability", dirURL(filepath.Join(dir, "e"), "?durability=maybe"), store.ErrInvalid, "durability"},
		{"relative path", "badger://relative/dir", store.ErrInvalid, "three slashes"},
		{"no path", "badger://", store.ErrInvalid, "three slashes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(t.Context(), tc.url, &store.Options{Codec: podCodec(t)})
			if tc.wantErr == nil {
				mustOK(t, "Open", err)
				if got := s.Info().Backend; got != Scheme {
					t.Errorf("Info().Backend = %q, want %q", got, Scheme)
				}
				mustOK(t, "Close", s.Close())
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want an error wrapping %v", tc.url, tc.wantErr)
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("Open(%q) = %v, want an error wrapping %v and containing %q", tc.url, err, tc.wantErr, tc.errHas)
			}
		})
	}
}

// TestDurability checks which badger setting each durability maps to:
// SyncWrites on by default (badger's own default is off).
func TestDurability(t *testing.T) {
	for _, tc := range []struct {
		query    string
		wantSync bool
	}{{"", true}, {"?durability=sync", true}, {"?durability=nosync", false}} {
		t.Run(tc.query, func(t *testing.T) {
			s, err := store.Open(t.Context(), dirURL(t.TempDir(), tc.query), &store.Options{Codec: podCodec(t)})
			mustOK(t, "Open", err)
			defer s.Close()
			if got := spaceOf(t, s).sh.db.Opts().SyncWrites; got != tc.wantSync {
				t.Errorf("badger SyncWrites = %v, want %v", got, tc.wantSync)
			}
		})
	}
}

func TestOpenNeedsCodec(t *testing.T) {
	_, err := Open(t.Context(), t.TempDir(), nil)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "Codec") {
		t.Errorf("Open without codec = %v, want ErrInvalid naming the codec", err)
	}
}

// TestAddIndexersRefusesLongNames adds an index whose name Open refuses
// (longer than maxNameLen), in both modes: AddIndexers must refuse it too,
// writing nothing, or the store could not be opened again with the index
// set it records.
func TestAddIndexersRefusesLongNames(t *testing.T) {
	for _, cacheSize := range []int{0, 3} {
		t.Run(fmt.Sprint("cache", cacheSize), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(t.Context(), dir, podOptions(t, "pods", cacheSize))
			mustOK(t, "Open", err)
			mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
			long := strings.Repeat("i", maxNameLen+1)
			err = s.AddIndexers(cache.Indexers{long: indexer.LabelIndexFunc("app")})
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "add indexers") {
				t.Errorf("AddIndexers with a %d-byte name = %v, want ErrInvalid naming the operation", len(long), err)
			}
			if _, ok := s.GetIndexers()[long]; ok {
				t.Errorf("GetIndexers after the refused AddIndexers has the long name")
			}
			mustOK(t, "Close", s.Close())
			// Reopening with the index set the store holds must work.
			s, err = Open(t.Context(), dir, podOptions(t, "pods", cacheSize))
			if err != nil {
				t.Fatalf("reopen after the refused AddIndexers: %v", err)
			}
			defer s.Close()
			if got := s.Info().Indexes; slices.Contains(got, long) {
				t.Errorf("reopened store records the long index name")
			}
		})
	}
}

func TestSharedDatabase(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	a, err := Open(ctx, dir, podOptions(t, "pods-a", 0))
	mustOK(t, "Open a", err)
	b, err := Open(ctx, dir, podOptions(t, "pods-a\x00b", 2)) // a name with "a" as prefix, bounded mode
	mustOK(t, "Open b", err)
	if spaceOf(t, a).sh != spaceOf(t, b).sh {
		t.Errorf("stores of one directory opened two badger databases")
	}

	if _, err := Open(ctx, dir, podOptions(t, "pods-a", 0)); !errors.Is(err, store.ErrInUse) {
		t.Errorf("second Open of pods-a = %v, want ErrInUse", err)
	}
	nosync := podOptions(t, "other", 0)
	nosync.Durability = store.DurabilityNoSync
	if _, err := Open(ctx, dir, nosync); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "durability") {
		t.Errorf("Open with another durability = %v, want ErrInvalid naming durability", err)
	}

	mustOK(t, "commit a", a.Commit(ctx, store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(1, "10", "x")}}, ResourceVersion: "10"}))
	mustOK(t, "commit b", b.Commit(ctx, store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(2, "20", "y")}}, ResourceVersion: "20"}))
	mustOK(t, "close a", a.Close())

	_, _, open := registry.Lookup(dir)
	if !open {
		t.Fatalf("database closed while store b is open")
	}
	a, err = Open(ctx, dir, podOptions(t, "pods-a", 0))
	mustOK(t, "reopen a", err)

	for _, tc := range []struct {
		s    store.Store
		rv   string
		want map[string]string
	}{
		{a, "10", map[string]string{"ns-1/pod-000001": "10/x"}},
		{b, "20", map[string]string{"ns-2/pod-000002": "20/y"}},
	} {
		if got := tc.s.ResourceVersion(); got != tc.rv {
			t.Errorf("%s: ResourceVersion = %q, want %q", tc.s.Info().Name, got, tc.rv)
		}
		if diff := cmp.Diff(tc.want, contents(t, tc.s)); diff != "" {
			t.Errorf("%s: contents (-want +got):\n%s", tc.s.Info().Name, diff)
		}
		checkIndexes(t, tc.s)
	}
	mustOK(t, "close a", a.Close())
	mustOK(t, "close b", b.Close())
	_, _, open = registry.Lookup(dir)
	if open {
		t.Errorf("database still open after its last store closed")
	}
}

// TestLargeWrites checks writes larger than one badger transaction: they go
// through a new generation, are atomic, leave one generation behind and
// keep indexes exact, in both modes and across a reopen.
func TestLargeWrites(t *testing.T) {
	const n = 1000 // about 5 badger entries each: over smallConfig's limit
	for _, cacheSize := range []int{0, 5} {
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) {
			dir := t.TempDir()
			ctx := t.Context()
			s, err := open(ctx, dir, podOptions(t, "pods", cacheSize), smallConfig())
			mustOK(t, "Open", err)

			list := make([]interface{}, n)
			want := map[string]string{}
			for i := range list {
				p := newPod(i, "1", fmt.Sprintf("app-%d", i%7))
				list[i] = p
				want[p.Namespace+"/"+p.Name] = "1/" + p.Labels["app"]
			}
			mustOK(t, "Replace", s.Replace(list, "100"))
			if diff := cmp.Diff([]uint64{2}, generationsOf(t, s)); diff != "" {
				t.Errorf("generations after Replace (-want +got):\n%s", diff)
			}

			// A Commit too large for one transaction: delete some
			// objects, leave some, update the others (some of them with
			// the same index values), add some. The new generation copies
			// only what the Commit does not write.
			ops := make([]store.Op, 0, n+50)
			for i := 0; i < n; i++ {
				switch i % 10 {
				case 0:
					ops = append(ops, store.Op{Type: store.OpDelete, Key: fmt.Sprintf("ns-%d/pod-%06d", i%10, i)})
					delete(want, fmt.Sprintf("ns-%d/pod-%06d", i%10, i))
					continue
				case 1:
					continue
				}
				p := newPod(i, "2", fmt.Sprintf("app-%d", i%5))
				ops = append(ops, store.Op{Type: store.OpPut, Object: p})
				want[p.Namespace+"/"+p.Name] = "2/" + p.Labels["app"]
			}
			for i := n; i < n+50; i++ {
				p := newPod(i, "2", "new")
				ops = append(ops, store.Op{Type: store.OpPut, Object: p})
				want[p.Namespace+"/"+p.Name] = "2/new"
			}
			mustOK(t, "Commit", s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: "200"}))
			if diff := cmp.Diff([]uint64{3}, generationsOf(t, s)); diff != "" {
				t.Errorf("generations after large Commit (-want +got):\n%s", diff)
			}
			check := func(s store.Store) {
				t.Helper()
				if got := s.ResourceVersion(); got != "200" {
					t.Errorf("ResourceVersion = %q, want 200", got)
				}
				if diff := cmp.Diff(want, contents(t, s)); diff != "" {
					t.Errorf("contents (-want +got):\n%s", diff)
				}
				checkIndexes(t, s)
			}
			check(s)
			mustOK(t, "Close", s.Close())
			s, err = open(ctx, dir, podOptions(t, "pods", cacheSize), smallConfig())
			mustOK(t, "reopen", err)
			defer s.Close()
			check(s)
		})
	}
}

// TestOldGenerationDeletedInBackground checks that a write that switches
// to a new generation (here a Commit too large for one transaction, as a
// relist after 410 Gone is) returns without waiting for the deletion of the
// old one, and that Close waits for that deletion.
func TestOldGenerationDeletedInBackground(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s, err := open(ctx, dir, podOptions(t, "pods", 0), smallConfig())
	mustOK(t, "Open", err)
	const n = 1000 // over smallConfig's transaction limit
	list := make([]interface{}, n)
	ops := make([]store.Op, n)
	for i := range n {
		list[i] = newPod(i, "1", "a")
		ops[i] = store.Op{Type: store.OpPut, Object: newPod(i, "2", "b")}
	}
	mustOK(t, "Replace", s.Replace(list, "1"))
	gens := generationsOf(t, s)

	release := make(chan struct{})
	var deleted []uint64 // written by the hook before deletedCh closes
	deletedCh := make(chan struct{})
	testHookGenDeleted = func(gen uint64) {
		<-release
		deleted = append(deleted, gen)
		close(deletedCh)
	}
	t.Cleanup(func() { testHookGenDeleted = nil })
	committed := make(chan error, 1)
	go func() { committed <- s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: "2"}) }()
	select {
	case err := <-committed:
		mustOK(t, "Commit", err)
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("Commit waited for the deletion of the old generation")
	}
	if got := s.ResourceVersion(); got != "2" {
		t.Errorf("ResourceVersion = %q after the Commit, want 2", got)
	}

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// A Close that does not wait returns within this second (it closes
	// the database under the deletion); one that waits cannot return.
	select {
	case err := <-closed:
		close(release)
		t.Fatalf("Close returned (%v) while the old generation was being deleted", err)
	case <-deletedCh:
		t.Fatal("the deletion ended before it was released")
	case <-time.After(time.Second):
	}
	close(release)
	mustOK(t, "Close", <-closed)
	select {
	case <-deletedCh:
	default:
		t.Fatal("Close returned before the deletion of the old generation ended")
	}
	if diff := cmp.Diff(gens, deleted); diff != "" {
		t.Errorf("generations deleted (-want +got):\n%s", diff)
	}
}

// TestRawWriteWaitsForOldGeneration checks that a raw write (an Import),
// which switches generations but has no store to close, releases the
// database only once the old generation's deletion is over: closing it
// under the deletion made badger panic (DB Closed).
func TestRawWriteWaitsForOldGeneration(t *testing.T) {
	dir := t.TempDir()
	release, deleted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookGenDeleted = func(uint64) {
		<-release
		once.Do(func() { close(deleted) })
	}
	t.Cleanup(func() { testHookGenDeleted = nil })
	imported := make(chan error, 1)
	go func() {
		imported <- store.Import(t.Context(), dirURL(dir, ""), store.Info{Name: "other", Codec: "json"}, func() (store.Record, error) {
			return store.Record{}, io.EOF
		})
	}()
	// An Import that does not wait returns within this second; one that
	// waits cannot return.
	select {
	case err := <-imported:
		close(release)
		t.Fatalf("Import returned (%v) while the old generation was being deleted", err)
	case <-time.After(time.Second):
	}
	close(release)
	mustOK(t, "Import", <-imported)
	select {
	case <-deleted:
	default:
		t.Fatal("Import returned before the deletion of the old generation ended")
	}
}

// TestGarbageGenerations checks that generations left by a large write that
// crashed before (or after) its switch are ignored and deleted on open.
func TestGarbageGenerations(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s, err := Open(ctx, dir, podOptions(t, "pods", 0))
	mustOK(t, "Open", err)
	mustOK(t, "Commit", s.Commit(ctx, store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(1, "5", "x")}}, ResourceVersion: "5"}))
	sp := spaceOf(t, s)
	// What a crashed Replace leaves: a half-written generation 7 that
	// was never switched to.
	k := sp.k.withGen(7)
	mustOK(t, "write garbage", sp.sh.db.Update(func(txn *badger.Txn) error {
		p := newPod(2, "9", "garbage")
		data, err := podCodec(t).Encode(p)
		if err != nil {
			return err
		}
		if err := setSealed(txn, k.obj("ns-2/pod-000002"), data); err != nil {
			return err
		}
		ek, ev := k.entry("app", "garbage", "ns-2/pod-000002")
		return setSealed(txn, ek, ev)
	}))
	mustOK(t, "Close", s.Close())

	s, err = Open(ctx, dir, podOptions(t, "pods", 0))
	mustOK(t, "reopen", err)
	defer s.Close()
	if diff := cmp.Diff(map[string]string{"ns-1/pod-000001": "5/x"}, contents(t, s)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
	if got := s.ResourceVersion(); got != "5" {
		t.Errorf("ResourceVersion = %q, want 5", got)
	}
	if diff := cmp.Diff([]uint64{1}, generationsOf(t, s)); diff != "" {
		t.Errorf("generations after reopen (-want +got):\n%s", diff)
	}
	// The next large write must not reuse the garbage's number blindly:
	// it allocates past every generation seen.
	if got := spaceOf(t, s).nextGen; got != 8 {
		t.Errorf("nextGen = %d, want 8", got)
	}
}

// TestResetDropsOldGeneration checks that a scope change empties the store,
// reports it, and removes the old keys.
func TestResetDropsOldGeneration(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	o := podOptions(t, "pods", 0)
	o.Scope = "cluster-a"
	s, err := Open(ctx, dir, o)
	mustOK(t, "Open", err)
	mustOK(t, "Replace", s.Replace([]interface{}{newPod(1, "3", "x"), newPod(2, "3", "y")}, "3"))
	mustOK(t, "Close", s.Close())

	o.Scope = "cluster-b"
	s, err = Open(ctx, dir, o)
	mustOK(t, "reopen", err)
	defer s.Close()
	if s.Info().Reset == "" || len(s.List()) != 0 || s.ResourceVersion() != "" {
		t.Errorf("after scope change: Reset=%q, %d objects, rv %q; want a reason, none, \"\"", s.Info().Reset, len(s.List()), s.ResourceVersion())
	}
	gens := generationsOf(t, s)
	if len(gens) != 0 {
		t.Errorf("generations with keys after reset = %v, want none", gens)
	}
}

// holdDir re-executes the test binary as a child that opens the database
// in dir (see TestMain) and holds it until release is called or the test
// ends; release waits for the child to exit.
func holdDir(t *testing.T, dir string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	mustOK(t, "StdinPipe", err)
	stdout, err := cmd.StdoutPipe()
	mustOK(t, "StdoutPipe", err)
	mustOK(t, "start child", cmd.Start())
	var once sync.Once
	release = func() {
		once.Do(func() {
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("child holding %s: %v", dir, err)
			}
		})
	}
	t.Cleanup(release)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v; want ready", line, err)
	}
	return release
}

// TestLockedByAnotherProcess re-executes the test binary as a child that
// holds the directory open.
// TestLockWaitBlocksNoOtherDatabase: see
// storetest.CheckLockWaitBlocksNoOtherDatabase, with another process
// holding the directory.
func TestLockWaitBlocksNoOtherDatabase(t *testing.T) {
	storetest.CheckLockWaitBlocksNoOtherDatabase(t,
		func(path string) string { return "badger://" + path },
		func(t *testing.T, path string) func() {
			if err := os.MkdirAll(path, 0o700); err != nil {
				t.Fatal(err)
			}
			return holdDir(t, path)
		})
}

func TestLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	release := holdDir(t, dir)

	o := podOptions(t, "pods", 0)
	o.LockTimeout = 300 * time.Millisecond
	s, err := Open(t.Context(), dir, o)
	if err == nil {
		s.Close()
		t.Fatalf("Open of a directory held by another process succeeded")
	}
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open = %v, want ErrLocked naming %s", err, dir)
	}
	// How long it waited, and how to wait longer.
	for _, want := range []string{"database is locked by another process (waited 300ms; ", "lock_timeout=<duration>", "lock_timeout=30s"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("Open = %q, want it to say %q", err, want)
		}
	}

	// Once the child lets go, a waiting Open succeeds.
	o.LockTimeout = 30 * time.Second
	done := make(chan error, 1)
	go func() {
		s, err := Open(context.Background(), dir, o)
		if err == nil {
			err = s.Close()
		}
		done <- err
	}()
	// While that Open waits for the lock, stores of other directories open
	// and close.
	for {
		_, waiting, _ := registry.Lookup(dir)
		if waiting {
			break
		}
		runtime.Gosched()
	}
	other := make(chan error, 1)
	go func() {
		s, err := Open(context.Background(), t.TempDir(), podOptions(t, "pods", 0))
		if err == nil {
			err = s.Close()
		}
		other <- err
	}()
	blocked := false
	select {
	case err := <-other:
		mustOK(t, "Open of another directory while one waits for its lock", err)
	case <-time.After(20 * time.Second):
		blocked = true
		t.Errorf("Open of another directory blocked behind an Open waiting for a lock")
	}

	release()
	if err := <-done; err != nil {
		t.Errorf("Open after the child exited: %v", err)
	}
	if blocked {
		if err := <-other; err != nil {
			t.Errorf("Open of another directory, late: %v", err)
		}
	}
}

// TestCorruptDirectory damages whole files of a closed database. The
// MANIFEST and single tables are damaged in TestDamagedFiles.
func TestCorruptDirectory(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
	}{
		{"garbage sst", func(t *testing.T, dir string) {
			for _, f := range globOne(t, dir, "*.sst") {
				overwrite(t, f, 0)
			}
		}},
		{"garbage vlog", func(t *testing.T, dir string) {
			for _, f := range globOne(t, dir, "*.vlog") {
				overwrite(t, f, 0)
			}
		}},
		{"garbage vlog entries", func(t *testing.T, dir string) {
			for _, f := range globOne(t, dir, "*.vlog") {
				overwrite(t, f, 20) // past the file header
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := t.Context()
			s, err := open(ctx, dir, podOptions(t, "pods", 0), smallConfig())
			mustOK(t, "Open", err)
			list := make([]interface{}, 2000)
			for i := range list {
				list[i] = newPod(i, "1", "x")
			}
			mustOK(t, "Replace", s.Replace(list, "1"))
			mustOK(t, "Close", s.Close())
			tc.corrupt(t, dir)

			s, err = open(ctx, dir, podOptions(t, "pods", 0), smallConfig())
			if err == nil {
				s.Close()
				t.Fatalf("Open of a corrupt directory succeeded")
			}
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "delete the directory") {
				t.Errorf("Open = %v, want ErrCorrupt naming %s and how to start over", err, dir)
			}
			_, _, open := registry.Lookup(dir)
			if open {
				t.Errorf("a failed Open left the database registered")
			}
		})
	}
}

func globOne(t *testing.T, dir, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	mustOK(t, "Glob", err)
	if len(files) == 0 {
		t.Fatalf("no %s file in %s", pattern, dir)
	}
	return files
}

// overwrite fills the file from offset on with a repeating pattern,
// keeping its size.
func overwrite(t *testing.T, path string, offset int64) {
	t.Helper()
	fi, err := os.Stat(path)
	mustOK(t, "Stat", err)
	n := fi.Size() - offset
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", int(n/4+1)))[:n]
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	mustOK(t, "OpenFile", err)
	_, err = f.WriteAt(junk, offset)
	mustOK(t, "WriteAt", err)
	mustOK(t, "Close", f.Close())
}

func TestFileModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(t.Context(), dir, podOptions(t, "pods", 0))
	mustOK(t, "Open", err)
	mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
	mustOK(t, "Close", s.Close())

	fi, err := os.Stat(dir)
	mustOK(t, "Stat", err)
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode %v, want 0700", got)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", d.Name(), got)
		}
		return nil
	})
	mustOK(t, "WalkDir", err)
}

// TestValueLogGC churns updates over a fixed key set and checks that, with
// garbage collection run, the directory stays bounded.
func TestValueLogGC(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	cfg := smallConfig()
	// Badger learns which value-log entries are garbage only when
	// compactions drop the keys pointing to them: small memtables make
	// compactions frequent.
	cfg.memTableSize = 256 << 10
	s, err := open(ctx, dir, podOptions(t, "pods", 0), cfg)
	mustOK(t, "Open", err)
	defer s.Close()
	sh := spaceOf(t, s).sh

	const keys, rounds = 100, 300 // ~3 KiB each: 90 MiB written over 0.3 MiB live
	churn := func(round int) {
		ops := make([]store.Op, keys)
		for i := range ops {
			ops[i] = store.Op{Type: store.OpPut, Object: newPod(i, fmt.Sprint(round), "x")}
		}
		mustOK(t, "Commit", s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(round)}))
	}
	var peak, firstHalfPeak int64
	rewritten := 0
	for r := 1; r <= rounds; r++ {
		churn(r)
		if r%10 == 0 {
			// Garbage is known once compactions have dropped the keys
			// of older rounds, which background compactions do at their
			// own pace (far behind on a fast run): compact now, so that
			// what is measured is the GC, not the scheduler.
			mustOK(t, "Flatten", sh.db.Flatten(1))
			rewritten += sh.runGC(nil)
			size := dirSize(t, dir)
			peak = max(peak, size)
			if r <= rounds/2 {
				firstHalfPeak = peak
			}
			t.Logf("round %d: %.1f MiB", r, float64(size)/(1<<20))
		}
	}
	if rewritten == 0 {
		t.Errorf("value-log GC rewrote no file after %d rounds of updates", rounds)
	}
	// Without GC the value log alone would hold every round (90 MiB).
	if peak > 30<<20 {
		t.Errorf("directory peaked at %.1f MiB with GC; want it under 30 MiB, a third of what was written", float64(peak)/(1<<20))
	}
	// Bounded, not merely slower to grow: twice the writes, the same peak
	// (within one value-log file).
	if peak > firstHalfPeak+cfg.valueLogFileSize {
		t.Errorf("directory peaked at %.1f MiB over %d rounds, %.1f MiB over the first %d: GC does not keep up", float64(peak)/(1<<20), rounds, float64(firstHalfPeak)/(1<<20), rounds/2)
	}
	t.Logf("rewrote %d value-log files; directory peak %.1f MiB (%.1f MiB in the first half)", rewritten, float64(peak)/(1<<20), float64(firstHalfPeak)/(1<<20))
}

// TestGCLoopStops checks the GC goroutine runs on its interval and stops
// with the last store (goleak checks the rest).
func TestGCLoopStops(t *testing.T) {
	cfg := smallConfig()
	cfg.gcInterval = time.Millisecond
	s, err := open(t.Context(), t.TempDir(), podOptions(t, "pods", 0), cfg)
	mustOK(t, "Open", err)
	sh := spaceOf(t, s).sh
	if sh.gcDone == nil {
		t.Fatalf("no GC goroutine with gc_interval=1ms")
	}
	mustOK(t, "Close", s.Close())
	select {
	case <-sh.gcDone:
	default:
		t.Errorf("GC goroutine still running after Close")
	}
}

// TestKillDuringLargeWrites kills (SIGKILL) a child process at random
// instants while it writes rounds too large for one badger transaction,
// then checks the invariants on reopen: every object belongs to the round
// the resume point names (writes are atomic and the resume point matches
// them), no round that returned is lost (durability=sync), and the index
// entries agree with the objects.
func TestKillDuringLargeWrites(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	lastDone := 0
	for kill := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		mustOK(t, "StdoutPipe", err)
		mustOK(t, "start child", cmd.Start())
		started := time.Now()
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// Let at least one round finish, then kill at a random instant
		// of the following two (a Replace and a Commit): the first
		// round, open included, tells how long a round takes here.
		first, ok := <-lines
		if !ok || strings.HasPrefix(first, "error") {
			t.Fatalf("child %d: %q", kill, first)
		}
		round := time.Since(started)
		deadline := time.After(time.Duration(rng.Int64N(int64(2 * round))))
		done := first
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break wait
				}
				if strings.HasPrefix(l, "error") {
					t.Fatalf("child %d: %s", kill, l)
				}
				done = l
			case <-deadline:
				break wait
			}
		}
		mustOK(t, "kill", cmd.Process.Signal(syscall.SIGKILL))
		for l := range lines {
			done = l
		}
		_ = cmd.Wait()
		n, err := strconv.Atoi(done)
		mustOK(t, "round number", err)
		if n <= lastDone {
			t.Errorf("kill %d: child went from round %d back to %d", kill, lastDone, n)
		}
		lastDone = n

		s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
		mustOK(t, "reopen after kill", err)
		rv := s.ResourceVersion()
		r, err := strconv.Atoi(rv)
		if err != nil || r < lastDone {
			t.Errorf("kill %d: resume point %q; round %d had returned", kill, rv, lastDone)
		}
		objs := s.List()
		if len(objs) != crashObjects {
			t.Errorf("kill %d: %d objects, want %d", kill, len(objs), crashObjects)
		}
		for _, obj := range objs {
			p := obj.(*corev1.Pod)
			if p.ResourceVersion != rv || p.Labels["app"] != rv {
				t.Fatalf("kill %d: object %s/%s of round %s under resume point %s", kill, p.Namespace, p.Name, p.ResourceVersion, rv)
			}
		}
		checkIndexes(t, s)
		if gens := generationsOf(t, s); len(gens) != 1 {
			t.Errorf("kill %d: generations %v after open, want only the current one", kill, gens)
		}
		t.Logf("kill %d: after round %d returned; reopened at %s", kill, lastDone, rv)
		mustOK(t, "Close", s.Close())
	}
}

// TestFailedLargeWriteLeavesNoTrace makes a large write fail after it has
// written part of its new generation: the store keeps its contents and
// resume point, and the partial generation is deleted.
func TestFailedLargeWriteLeavesNoTrace(t *testing.T) {
	ctx := t.Context()
	s, err := open(ctx, t.TempDir(), podOptions(t, "pods", 0), smallConfig())
	mustOK(t, "Open", err)
	defer func() { s.Close() }() // the s of the reopen at the end
	mustOK(t, "Replace", s.Replace([]interface{}{newPod(1, "1", "x"), newPod(2, "1", "y")}, "1"))
	before := contents(t, s)
	sp := spaceOf(t, s)
	gensBefore := generationsOf(t, s)

	boom := errors.New("boom")
	err = sp.rebuild(ctx, true, false, nil, func(w writer, nk keys) error {
		for i := range 3000 { // more than one badger transaction
			p := newPod(i, "9", "partial")
			data, err := podCodec(t).Encode(p)
			if err != nil {
				return err
			}
			if err := setSealed(w, nk.obj(p.Namespace+"/"+p.Name), data); err != nil {
				return err
			}
		}
		return boom
	}, func(m *metaRecord) { m.ResourceVersion = "9" })
	if !errors.Is(err, boom) {
		t.Fatalf("rebuild = %v, want the fill error", err)
	}
	if diff := cmp.Diff(gensBefore, generationsOf(t, s)); diff != "" {
		t.Errorf("generations after the failed write (-before +after):\n%s", diff)
	}
	if got := s.ResourceVersion(); got != "1" {
		t.Errorf("ResourceVersion = %q, want 1", got)
	}
	if diff := cmp.Diff(before, contents(t, s)); diff != "" {
		t.Errorf("contents changed (-before +after):\n%s", diff)
	}
	// What is stored agrees: reopen and read it back from badger.
	dir := sp.sh.dir
	mustOK(t, "Close", s.Close())
	s, err = open(ctx, dir, podOptions(t, "pods", 2), smallConfig())
	mustOK(t, "reopen", err)
	if diff := cmp.Diff(before, contents(t, s)); diff != "" {
		t.Errorf("contents after reopen (-before +after):\n%s", diff)
	}
	if got := s.ResourceVersion(); got != "1" {
		t.Errorf("ResourceVersion after reopen = %q, want 1", got)
	}
	if diff := cmp.Diff(gensBefore, generationsOf(t, s)); diff != "" {
		t.Errorf("generations after reopen (-before +after):\n%s", diff)
	}
}

// TestBackgroundWaitWhileStarting checks that background.Wait may run while
// other goroutines start work (the stores of one database close and write
// independently), which a sync.WaitGroup forbids, and returns only once
// what was started before it is over.
func TestBackgroundWaitWhileStarting(t *testing.T) {
	var b background
	var running atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				running.Add(1)
				b.Go(func() { running.Add(-1) })
				b.Wait()
			}
		})
	}
	wg.Wait()
	b.Wait()
	if n := running.Load(); n != 0 {
		t.Fatalf("%d goroutines still running after Wait", n)
	}
}
