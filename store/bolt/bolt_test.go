package bolt_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/bolt"
)

// holdEnv makes the test binary, re-executed as a child, hold the bolt file
// it names open until its stdin closes.
const holdEnv = "INFORMERDB_BOLT_TEST_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		os.Exit(holdFile(path))
	}
	if path := os.Getenv(writerEnv); path != "" {
		os.Exit(runWriter(path))
	}
	goleak.VerifyTestMain(m)
}

func holdFile(path string) int {
	s, err := bolt.Open(context.Background(), path, &store.Options{Name: "held", Codec: mustCodec()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 1
	}
	fmt.Println("ready")
	// Until the parent closes our stdin: EOF and a read error both mean it is done.
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child: close:", err)
		return 1
	}
	return 0
}

func mustCodec() store.Codec {
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	return c
}

func newPod(ns, name, rv string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, ResourceVersion: rv, Labels: labels, UID: types.UID("uid-" + ns + "-" + name),
	}}
}

func podOptions(name string) *store.Options {
	return &store.Options{
		Name:  name,
		Codec: mustCodec(),
		Indexers: cache.Indexers{
			indexer.NamespaceIndex: indexer.NamespaceIndexFunc,
			"app":                  indexer.LabelIndexFunc("app"),
		},
	}
}

func dbURL(t testing.TB, query string) string {
	t.Helper()
	return "bolt://" + filepath.Join(t.TempDir(), "data", "cache.db") + query
}

func pathOf(t testing.TB, url string) string {
	t.Helper()
	p := strings.TrimPrefix(url, "bolt://")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

func mustOpen(t testing.TB, url string, o *store.Options) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), url, o)
	if err != nil {
		t.Fatalf("store.Open(%q, %q): %v", url, o.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustClose(t testing.TB, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func wantErr(t testing.TB, op string, err, sentinel error, mentions ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v; want one wrapping %q", op, err, sentinel)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s: error %q does not mention %q", op, err, m)
		}
	}
}

func keysOf(t testing.TB, s store.Store) []string {
	t.Helper()
	keys := s.ListKeys()
	if keys == nil {
		keys = []string{}
	}
	return sortedCopy(keys)
}

func sortedCopy(in []string) []string {
	out := append([]string{}, in...)
	slices.Sort(out)
	return out
}

func TestOpenURLs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		url  string
		want error
	}{
		{"relative path", "bolt://relative/cache.db", store.ErrInvalid},
		{"unknown parameter", "bolt://" + dir + "/a.db?fsync=always", store.ErrInvalid},
		{"bad durability", "bolt://" + dir + "/a.db?durability=sometimes", store.ErrInvalid},
		{"bad cache", "bolt://" + dir + "/a.db?cache=-1", store.ErrInvalid},
		{"bad lock timeout", "bolt://" + dir + "/a.db?lock_timeout=soon", store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(t.Context(), tc.url, podOptions("pods"))
			if err == nil {
				s.Close()
				t.Fatalf("store.Open(%q) succeeded; want an error", tc.url)
			}
			wantErr(t, "Open", err, tc.want)
		})
	}
	t.Run("no codec", func(t *testing.T) {
		s, err := store.Open(t.Context(), "bolt://"+dir+"/b.db", &store.Options{Name: "pods"})
		if err == nil {
			s.Close()
			t.Fatal("store.Open without a codec succeeded")
		}
		wantErr(t, "Open", err, store.ErrInvalid, "Codec")
	})
	t.Run("store name too long", func(t *testing.T) {
		s, err := store.Open(t.Context(), "bolt://"+dir+"/d.db", podOptions(strings.Repeat("n", 40000)))
		if err == nil {
			s.Close()
			t.Fatal("store.Open with a 40,000-byte name succeeded")
		}
		wantErr(t, "Open", err, store.ErrInvalid, "too long")
		// The failed open left the file usable.
		mustOpen(t, "bolt://"+dir+"/d.db", podOptions("pods"))
	})
	t.Run("trailing slash", func(t *testing.T) {
		// A path that names a directory: cleaning the slash away would
		// create a file of that name.
		target := filepath.Join(dir, "e.db")
		s, err := store.Open(t.Context(), "bolt://"+target+"/", podOptions("pods"))
		if err == nil {
			s.Close()
			t.Fatal("store.Open of a path ending in a slash succeeded")
		}
		wantErr(t, "Open", err, store.ErrInvalid, "ends in a slash")
		t.Chdir(dir) // where a relative path would land
		s, err = bolt.Open(t.Context(), "relative/e.db/", podOptions("pods"))
		if err == nil {
			s.Close()
			t.Fatal("bolt.Open of a relative path ending in a slash succeeded")
		}
		wantErr(t, "bolt.Open", err, store.ErrInvalid, "ends in a slash")
		_, err = store.Stores(t.Context(), "bolt://"+target+"/")
		wantErr(t, "Stores", err, store.ErrInvalid, "ends in a slash")
		for _, p := range []string{target, filepath.Join(dir, "relative")} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("refused opens left %s: %v", p, err)
			}
		}
	})
	t.Run("parameters accepted", func(t *testing.T) {
		s := mustOpen(t, "bolt://"+dir+"/c.db?durability=nosync&lock_timeout=1s&cache=10", podOptions("pods"))
		if got := s.Info().Backend; got != bolt.Scheme {
			t.Errorf("Info().Backend = %q; want %q", got, bolt.Scheme)
		}
	})
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	path := filepath.Join(dir, "cache.db")
	s, err := bolt.Open(t.Context(), path, podOptions("pods"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	mustClose(t, s)
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{filepath.Dir(dir), 0o700}, {dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("mode of %s = %v; want %v", c.path, got, c.want)
		}
	}
}

// TestStoresShareFile checks that stores of one file share one bbolt
// database (a second bbolt open in the process would block on its own lock)
// and keep their own contents and resume points.
func TestStoresShareFile(t *testing.T) {
	url := dbURL(t, "?lock_timeout=200ms")
	names := []string{"v1/pods", "apps/v1/deployments", "ünï/名前", "a\x00b"}
	for round := range 2 {
		var open []store.Store
		for i, n := range names {
			s := mustOpen(t, url, podOptions(n))
			if round == 0 {
				if err := s.Replace([]interface{}{newPod("ns", fmt.Sprintf("p%d", i), "1", nil)}, fmt.Sprint(100+i)); err != nil {
					t.Fatalf("Replace into %q: %v", n, err)
				}
			}
			open = append(open, s)
		}
		for i, s := range open {
			if got, want := s.ResourceVersion(), fmt.Sprint(100+i); got != want {
				t.Errorf("round %d: store %q resume point %q; want %q", round, names[i], got, want)
			}
			if diff := cmp.Diff([]string{fmt.Sprintf("ns/p%d", i)}, keysOf(t, s)); diff != "" {
				t.Errorf("round %d: store %q keys (-want +got):\n%s", round, names[i], diff)
			}
		}
		for _, s := range open {
			mustClose(t, s)
		}
	}
}

// TestSymlinkSharesFile opens one file through a symbolic link to its
// directory: the stores share the database instead of the second waiting
// for the first's lock, and one name stays in use across both paths.
func TestSymlinkSharesFile(t *testing.T) {
	url := dbURL(t, "?lock_timeout=100ms")
	path := pathOf(t, url)
	a := mustOpen(t, url, podOptions("a"))
	if err := a.Replace([]interface{}{newPod("ns", "x", "1", nil)}, "5"); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(path), link); err != nil {
		t.Fatal(err)
	}
	linked := "bolt://" + filepath.Join(link, filepath.Base(path)) + "?lock_timeout=100ms"
	mustOpen(t, linked, podOptions("b"))
	_, err := store.Open(t.Context(), linked, podOptions("a"))
	wantErr(t, "Open of an open name through a link", err, store.ErrInUse)
}

func TestDurabilityIsPerFile(t *testing.T) {
	url := dbURL(t, "")
	mustOpen(t, url+"?durability=nosync", podOptions("a"))
	_, err := store.Open(t.Context(), url, podOptions("b"))
	wantErr(t, "Open with another durability", err, store.ErrInvalid, "durability")
	mustOpen(t, url+"?durability=nosync", podOptions("b"))
}

// TestLockedByAnotherProcess re-executes the test binary as a child that
// holds the file, and checks that Open waits lock_timeout and fails with
// ErrLocked naming the file, how long it waited and how to wait longer
// (the advice ended in a dangling "lock_timeout=)"), then succeeds once the
// child is gone.
func TestLockedByAnotherProcess(t *testing.T) {
	url := dbURL(t, "")
	path := pathOf(t, url)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Reaps the child on a failure path. On success the test has already
		// closed stdin and checked Wait, and these only repeat that.
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child: read %q, %v; want ready", line, err)
	}
	_, err = store.Open(t.Context(), url+"?lock_timeout=100ms", podOptions("pods"))
	wantErr(t, "Open of a held file", err, store.ErrLocked, path, "database is locked by another process (waited 100ms; ", "lock_timeout=<duration>", "lock_timeout=30s")
	if strings.Contains(err.Error(), "lock_timeout=)") {
		t.Errorf("Open of a held file: %q ends its advice in a dangling lock_timeout=", err)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s := mustOpen(t, url+"?lock_timeout=5s", podOptions("pods"))
	mustClose(t, s)
}

func TestCorruptFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, path string)
	}{
		{"garbage", func(t *testing.T, path string) {
			data := make([]byte, 64<<10)
			for i := range data {
				data[i] = byte(i*7 + 3)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, path string) {
			// Half of the pages in use: the file itself is longer (bbolt
			// grows it 16 MiB at a time), and cutting only its unused
			// tail damages nothing.
			if err := os.Truncate(path, usedBytes(t, path)/2); err != nil {
				t.Fatal(err)
			}
		}},

		{"truncated to one page", func(t *testing.T, path string) {
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, mode := range []string{"", "?cache=4"} {
			t.Run(tc.name+mode, func(t *testing.T) {
				url := dbURL(t, mode)
				path := pathOf(t, url)
				writePods(t, url, 300)
				tc.corrupt(t, path)

				_, err := store.Open(t.Context(), url, podOptions("pods"))
				wantErr(t, "Open of a damaged file", err, store.ErrCorrupt, path, "delete the file")
				t.Logf("error: %v", err)

				// The failed open released the file: after deleting it,
				// this process opens a fresh store at once.
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				s := mustOpen(t, url+sep(mode)+"lock_timeout=100ms", podOptions("pods"))
				if n := len(s.ListKeys()); n != 0 || s.ResourceVersion() != "" {
					t.Errorf("fresh store has %d keys, resume point %q; want empty", n, s.ResourceVersion())
				}
			})
		}
	}
}

// TestUnusedTailCut checks that cutting the unused tail of a file (bbolt
// grows files 16 MiB at a time) loses nothing: the store opens with every
// object.
func TestUnusedTailCut(t *testing.T) {
	for _, mode := range []string{"", "?cache=4"} {
		t.Run("mode="+mode, func(t *testing.T) {
			url := dbURL(t, mode)
			path := pathOf(t, url)
			writePods(t, url, 300)
			used := usedBytes(t, path)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() <= used {
				t.Fatalf("file of %d bytes has no unused tail (%d used)", fi.Size(), used)
			}
			if err := os.Truncate(path, used); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, url, podOptions("pods"))
			defer mustClose(t, s)
			if n := len(s.List()); n != 300 || s.ResourceVersion() != "7" {
				t.Errorf("after cutting the unused tail: %d objects, resume point %q; want 300 and 7", n, s.ResourceVersion())
			}
		})
	}
}

// writePods replaces the contents of store "pods" at url with n Pods, at
// resourceVersion 7, and closes it.
func writePods(t *testing.T, url string, n int) {
	t.Helper()
	s := mustOpen(t, url, podOptions("pods"))
	var objs []interface{}
	for i := range n {
		objs = append(objs, newPod("ns", fmt.Sprintf("pod-%03d", i), "1", map[string]string{"app": "a"}))
	}
	if err := s.Replace(objs, "7"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
}

// usedBytes returns the bytes of the pages a closed bolt file uses, as its
// metadata says.
func usedBytes(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	err = db.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return used
}

func sep(query string) string {
	if query == "" {
		return "?"
	}
	return "&"
}

// TestChurnReusesPages updates a fixed set of objects many times and checks
// that bbolt's free-page reuse keeps the file from growing without bound.
func TestChurnReusesPages(t *testing.T) {
	url := dbURL(t, "?durability=nosync")
	path := pathOf(t, url)
	s := mustOpen(t, url, podOptions("pods"))
	const n = 200
	pod := func(i, gen int) *corev1.Pod {
		p := newPod("ns", fmt.Sprintf("pod-%03d", i), fmt.Sprint(gen), map[string]string{"app": fmt.Sprintf("gen-%d", gen%5)})
		p.Annotations = map[string]string{"payload": strings.Repeat("x", 2000+gen%7*100)}
		return p
	}
	var list []interface{}
	for i := range n {
		list = append(list, pod(i, 0))
	}
	if err := s.Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// bbolt grows small files by doubling; measure after a first round of
	// updates has split the bulk-loaded pages.
	churn := func(gens int) {
		for gen := 1; gen <= gens; gen++ {
			var ops []store.Op
			for i := range n {
				ops = append(ops, store.Op{Type: store.OpPut, Object: pod(i, gen)})
			}
			if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(gen + 1)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	churn(3)
	base := size()
	churn(60) // 12,000 updates, 60 times the live data
	if got := size(); got > 3*base {
		t.Errorf("file grew from %d to %d bytes over 12,000 updates of %d objects; want at most 3x", base, got, n)
	}
	if got := len(s.ListKeys()); got != n {
		t.Errorf("%d keys after churn; want %d", got, n)
	}
}

// TestModesShareLayout writes in one mode and reads in the other.
func TestModesShareLayout(t *testing.T) {
	for _, tc := range []struct{ write, read string }{{"", "?cache=3"}, {"?cache=3", ""}} {
		t.Run("write"+tc.write+"/read"+tc.read, func(t *testing.T) {
			url := dbURL(t, "")
			s := mustOpen(t, url+tc.write, podOptions("pods"))
			var ops []store.Op
			for i := range 10 {
				ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(fmt.Sprintf("ns%d", i%2), fmt.Sprintf("p%d", i), "1", map[string]string{"app": fmt.Sprint(i % 3)})})
			}
			ops = append(ops, store.Op{Type: store.OpDelete, Key: "ns1/p9"})
			if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "42"}); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			s = mustOpen(t, url+tc.read, podOptions("pods"))
			if got := s.ResourceVersion(); got != "42" {
				t.Errorf("resume point %q; want 42", got)
			}
			got, err := s.IndexKeys("app", "0")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"ns0/p0", "ns0/p6", "ns1/p3"}, sortedCopy(got)); diff != "" {
				t.Errorf("IndexKeys(app, 0) (-want +got):\n%s", diff)
			}
			ns1, err := s.IndexKeys(indexer.NamespaceIndex, "ns1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"ns1/p1", "ns1/p3", "ns1/p5", "ns1/p7"}, sortedCopy(ns1)); diff != "" {
				t.Errorf("IndexKeys(namespace, ns1) (-want +got):\n%s", diff)
			}
		})
	}
}
