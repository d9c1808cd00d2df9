package memdb_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

func podCodec(t testing.TB) store.Codec {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fileOptions(t testing.TB, name string) *store.Options {
	return &store.Options{Name: name, Codec: podCodec(t), Indexers: cache.Indexers{"app": labelIndexFunc("app")}}
}

// openFile opens name in the file at path and closes it at the end of the
// test (a second Close is a no-op).
func openFile(t *testing.T, path, name string) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), "memdb://"+path, fileOptions(t, name))
	if err != nil {
		t.Fatalf("Open %s in %s: %v", name, path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustClose(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func contents(t *testing.T, s store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range s.List() {
		p := o.(*corev1.Pod)
		out[keyOf(t, p)] = p.ResourceVersion + " app=" + p.Labels["app"]
	}
	return out
}

// TestFileReopenWhileFileOpen reopens a store closed while another store
// keeps the file open: its state comes from the process, not the file, and
// the other store's snapshot on Close saves both.
func TestFileReopenWhileFileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.snap")
	a := openFile(t, path, "a")
	b := openFile(t, path, "b")
	if err := a.Commit(t.Context(), store.Batch{ResourceVersion: "5", Ops: []store.Op{
		{Type: store.OpPut, Object: newPod("ns", "x", "4", "app=web")},
		{Type: store.OpPut, Object: newPod("ns", "y", "5", "app=db")},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Replace([]interface{}{newPod("ns", "z", "7", "app=web")}, "7"); err != nil {
		t.Fatal(err)
	}
	wantA := map[string]string{"ns/x": "4 app=web", "ns/y": "5 app=db"}
	wantB := map[string]string{"ns/z": "7 app=web"}
	mustClose(t, a)
	a = openFile(t, path, "a")
	if diff := cmp.Diff(wantA, contents(t, a)); diff != "" {
		t.Errorf("a reopened while b is open (-want +got):\n%s", diff)
	}
	if got, _ := a.IndexKeys("app", "web"); !cmp.Equal(got, []string{"ns/x"}) {
		t.Errorf("IndexKeys(app, web) of reopened a = %q; want [ns/x]", got)
	}
	if rv := a.ResourceVersion(); rv != "5" {
		t.Errorf("resume point of reopened a = %q; want 5", rv)
	}
	if err := a.Delete(newPod("ns", "y", "")); err != nil {
		t.Fatal(err)
	}
	delete(wantA, "ns/y")
	mustClose(t, a)
	mustClose(t, b) // the last snapshot: a's frozen state and b's

	a = openFile(t, path, "a")
	b = openFile(t, path, "b")
	if diff := cmp.Diff(wantA, contents(t, a)); diff != "" {
		t.Errorf("a after every store was closed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, contents(t, b)); diff != "" {
		t.Errorf("b after every store was closed (-want +got):\n%s", diff)
	}
	if a.ResourceVersion() != "5" || b.ResourceVersion() != "7" {
		t.Errorf("resume points = %q, %q; want 5, 7", a.ResourceVersion(), b.ResourceVersion())
	}
}

func TestFileDamaged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	s := openFile(t, good, "pods")
	for i := 0; i < 20; i++ {
		if err := s.Add(newPod("ns", "p"+strconv.Itoa(i), "1", "app=web")); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte{}, data...)
	flipped[len(flipped)/2] ^= 0x40
	cases := map[string][]byte{
		"truncated":    data[:len(data)-9],
		"flipped byte": flipped,
		"garbage":      []byte("this is not a snapshot file at all"),
		"empty":        {},
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".snap")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(t.Context(), "memdb://"+path, fileOptions(t, "pods"))
			if err == nil {
				s.Close()
				t.Fatal("Open of a damaged file succeeded")
			}
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open error = %v; want ErrCorrupt naming %s", err, path)
			}
			after, err := os.ReadFile(path)
			if err != nil || string(after) != string(content) {
				t.Errorf("the damaged file was changed by the failed Open (err %v)", err)
			}
		})
	}
}

// TestFileRejectsWhatTheCodecCannotEncode: in file mode every put is encoded
// when it is written, so an object the codec rejects fails its write instead
// of a later snapshot.
func TestFileRejectsWhatTheCodecCannotEncode(t *testing.T) {
	s := openFile(t, filepath.Join(t.TempDir(), "db.snap"), "pods")
	if err := s.Add(newPod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	err := s.Add(cm)
	if !errors.Is(err, store.ErrInvalid) || !strings.HasPrefix(err.Error(), "store: add ns/cm: encode") {
		t.Fatalf("Add of a ConfigMap to a Pod store: error = %v; want store: add ns/cm: encode ...: ErrInvalid", err)
	}
	if diff := cmp.Diff([]string{"ns/a"}, s.ListKeys()); diff != "" {
		t.Errorf("keys after the rejected Add (-want +got):\n%s", diff)
	}
}

// TestFileSnapshotsAreOneState writes periodic snapshots while commits stream
// in, each giving every object the same new generation and resume point, and
// checks that every snapshot read back holds one generation equal to its
// resume point.
func TestFileSnapshotsAreOneState(t *testing.T) {
	const objects = 50
	path := filepath.Join(t.TempDir(), "db.snap")
	s, err := store.Open(t.Context(), "memdb://"+path+"?snapshot_interval=2ms", fileOptions(t, "pods"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[string]bool{} // resume points of the snapshots read
	last := 0                 // the last generation committed
	for g := 1; len(seen) < 3; g++ {
		if err := t.Context().Err(); err != nil {
			t.Fatalf("saw snapshots of %d states before the test's deadline: %v", len(seen), err)
		}
		ops := make([]store.Op, objects)
		for i := range ops {
			ops[i] = store.Op{Type: store.OpPut, Object: newPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(g), "app=web", "gen="+strconv.Itoa(g))}
		}
		if err := s.Commit(t.Context(), store.Batch{ResourceVersion: strconv.Itoa(g), Ops: ops}); err != nil {
			t.Fatal(err)
		}
		last = g
		if _, err := os.Stat(path); err != nil {
			continue // no snapshot yet
		}
		codec := podCodec(t)
		n := 0
		headers, err := snapfile.Read(path, func(h *snapfile.Header, key string, data []byte) error {
			obj, err := codec.Decode(data)
			if err != nil {
				return err
			}
			if gen := obj.(*corev1.Pod).Labels["gen"]; gen != h.ResourceVersion {
				t.Errorf("snapshot with resume point %s holds %s of generation %s", h.ResourceVersion, key, gen)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatalf("reading a snapshot: %v", err)
		}
		if len(headers) != 1 {
			t.Fatalf("snapshot has %d sections; want 1", len(headers))
		}
		if headers[0].ResourceVersion == "" {
			// A snapshot of the empty store, taken before the first
			// commit.
			if n != 0 {
				t.Fatalf("snapshot without a resume point has %d records; want 0", n)
			}
			continue
		}
		if n != objects {
			t.Fatalf("snapshot with resume point %s has %d records; want %d", headers[0].ResourceVersion, n, objects)
		}
		seen[headers[0].ResourceVersion] = true
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The snapshot of Close holds the last commit.
	s2, err := store.Open(t.Context(), "memdb://"+path, fileOptions(t, "pods"))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if rv := s2.ResourceVersion(); rv != strconv.Itoa(last) {
		t.Errorf("resume point after reopening = %q; want %d, the last commit's", rv, last)
	}
	if n := len(s2.ListKeys()); n != objects {
		t.Errorf("reopened store has %d objects; want %d", n, objects)
	}
}
