package memory_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/snapfile"
	"github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		URL:        func(testing.TB) string { return "memory://" },
		Persistent: false,
	})
}

func TestConformanceFile(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		URL: func(t testing.TB) string {
			return "memory://" + filepath.Join(t.TempDir(), "db", "cache.snap")
		},
		Persistent: true,
	})
}

func podOptions(t *testing.T) *store.Options {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return &store.Options{Name: "pods", Codec: c, Indexers: cache.Indexers{"namespace": indexer.NamespaceIndexFunc}}
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, url string
		opts      *store.Options
		want      error
		says      string
	}{
		{"host instead of path", "memory://somehost/x.snap", podOptions(t), store.ErrInvalid, "three slashes"},
		{"relative path", "memory:relative/x.snap", podOptions(t), store.ErrInvalid, "three slashes"},
		{"interval without file", "memory://?snapshot_interval=1s", podOptions(t), store.ErrInvalid, "needs a file"},
		{"lock timeout without file", "memory://?lock_timeout=1s", podOptions(t), store.ErrInvalid, "lock_timeout needs a file"},
		{"bad lock timeout", "memory://" + dir + "/a.snap?lock_timeout=soon", podOptions(t), store.ErrInvalid, "lock_timeout"},
		{"bad interval", "memory://" + dir + "/a.snap?snapshot_interval=soon", podOptions(t), store.ErrInvalid, "snapshot_interval"},
		{"negative interval", "memory://" + dir + "/a.snap?snapshot_interval=-1s", podOptions(t), store.ErrInvalid, "snapshot_interval"},
		{"unknown parameter", "memory://" + dir + "/a.snap?durability=sync", podOptions(t), store.ErrInvalid, "durability"},
		{"file without codec", "memory://" + dir + "/a.snap", &store.Options{Name: "pods"}, store.ErrInvalid, "Codec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(t.Context(), tc.url, tc.opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Open error = %v; want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// TestCorruptFile: a damaged snapshot fails Open with ErrCorrupt naming the
// file, and is left as it was for inspection.
func TestCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	s, err := store.Open(t.Context(), "memory://"+path, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(pod("a", "1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated", good[:len(good)-7]},
		{"flipped byte", func() []byte { b := append([]byte(nil), good...); b[len(b)/2] ^= 0x40; return b }()},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(t.Context(), "memory://"+path, podOptions(t))
			if err == nil {
				s.Close()
				t.Fatal("Open of a corrupt snapshot succeeded")
			}
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open error = %v; want ErrCorrupt naming %s", err, path)
			}
			after, _ := os.ReadFile(path)
			if !cmp.Equal(tc.data, after) && len(tc.data)+len(after) > 0 {
				t.Error("a failed Open changed the snapshot file")
			}
		})
	}
}

// TestUndecodableObject: a snapshot whose checksum is right but whose object
// the codec cannot decode fails Open with ErrCorrupt.
func TestUndecodableObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	o, _ := podOptions(t).WithDefaults()
	meta := driver.MetaFor(o, memory.FormatVersion)
	err := snapfile.Write(path, []snapfile.Section{{
		Header: snapfile.Header{Name: "pods", Meta: meta, ResourceVersion: "3"},
		Len:    1,
		Records: func(yield func(string, []byte) bool) {
			yield("ns/a", []byte{0xff, 0xff, 0xff})
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(t.Context(), "memory://"+path, podOptions(t))
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "ns/a") {
		t.Errorf("Open error = %v; want ErrCorrupt naming the key", err)
	}
}

// TestSnapshotInterval: with snapshot_interval, committed state reaches the
// file while the store is open, resume point included.
func TestSnapshotInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	s, err := store.Open(t.Context(), "memory://"+path+"?snapshot_interval=5ms", podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit(t.Context(), store.Batch{ResourceVersion: "7", Ops: []store.Op{{Type: store.OpPut, Object: pod("a", "7")}}}); err != nil {
		t.Fatal(err)
	}
	// Poll the file (a snapshot is due every 5ms; the generous deadline only
	// bounds a broken implementation).
	var keys []string
	var hs []snapfile.Header
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		keys = nil
		hs, err = snapfile.Read(path, func(_ *snapfile.Header, key string, _ []byte) error {
			keys = append(keys, key)
			return nil
		})
		if err == nil && len(hs) == 1 && hs[0].ResourceVersion == "7" {
			break
		}
	}
	if err != nil {
		t.Fatalf("reading the periodic snapshot: %v", err)
	}
	if diff := cmp.Diff([]string{"ns/a"}, keys); diff != "" || len(hs) != 1 || hs[0].ResourceVersion != "7" {
		t.Errorf("periodic snapshot: headers %+v, keys (-want +got):\n%s", hs, diff)
	}
}

// TestSnapshotOnlyOnClose: without an interval, nothing is written before
// Close, and Close writes.
func TestSnapshotOnlyOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.snap")
	s, err := store.Open(t.Context(), "memory://"+path, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(pod("a", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("snapshot file exists before Close (stat: %v)", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no snapshot after Close: %v", err)
	}
}
