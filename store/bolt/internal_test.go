package bolt

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

func TestRecordRoundTrip(t *testing.T) {
	long := strings.Repeat("k", maxInline+1)
	for _, tc := range []struct {
		name string
		key  string
		vals [][]string
	}{
		{"no indexes", "ns/a", nil},
		{"empty values", "ns/a", [][]string{nil, nil}},
		{"values", "ns/a", [][]string{{"ns"}, {"x", "", "nul\x00"}}},
		{"long key", long, [][]string{{strings.Repeat("v", 70000)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := appendRecord(nil, tc.key, tc.vals)
			gotKey, gotVals, err := decodeRecord(rec, len(tc.vals))
			if err != nil {
				t.Fatalf("decodeRecord: %v", err)
			}
			wantKey := ""
			if len(tc.key) > maxInline {
				wantKey = tc.key
			}
			if gotKey != wantKey {
				t.Errorf("key %q; want %q", short(gotKey), short(wantKey))
			}
			// Empty and nil value lists are the same to an index.
			want := tc.vals
			for i := range want {
				if len(want[i]) == 0 {
					want[i] = nil
				}
			}
			if diff := cmp.Diff(want, gotVals); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:40], len(s))
	}
	return s
}

func TestDecodeRecordRejectsDamage(t *testing.T) {
	good := appendRecord(nil, "ns/a", [][]string{{"x", "yy"}})
	for _, tc := range []struct {
		name string
		data []byte
		want int
	}{
		{"empty", nil, 1},
		{"bad flag", append([]byte{7}, good[1:]...), 1},
		{"wrong index count", good, 2},
		{"truncated", good[:len(good)-1], 1},
		{"trailing bytes", append(append([]byte{}, good...), 0), 1},
		{"huge length", []byte{recordInline, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeRecord(tc.data, tc.want)
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("decodeRecord(%q) error %v; want ErrCorrupt", tc.data, err)
			}
		})
	}
}

func TestIndexEntryKeys(t *testing.T) {
	// Values that are prefixes of each other, or contain NUL, must not share
	// a prefix: the entries of "a" are not those of "a\x00b".
	values := []string{"", "a", "a\x00b", "ab", strings.Repeat("z", maxInline+5)}
	for _, v := range values {
		for _, w := range values {
			if v == w {
				continue
			}
			if k := indexEntryKey(w, 7); strings.HasPrefix(string(k), string(indexEntryPrefix(v))) {
				t.Errorf("entry of value %q starts with the prefix of value %q", short(w), short(v))
			}
		}
		k := indexEntryKey(v, 1<<40+7)
		gotV, gotSeq, err := splitIndexEntry(k)
		if err != nil || string(gotV) != string(boltKey(v)) || gotSeq != 1<<40+7 {
			t.Errorf("splitIndexEntry(entry of %q) = %q, %d, %v", short(v), gotV, gotSeq, err)
		}
		if _, _, err := splitIndexEntry(k[:len(k)-1]); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("splitIndexEntry(truncated entry of %q): error %v; want ErrCorrupt", short(v), err)
		}
	}
	if a, b := boltKey(strings.Repeat("x", maxInline+1)), boltKey(strings.Repeat("x", maxInline+2)); string(a) == string(b) || len(a) <= maxInline {
		t.Errorf("long keys: digests collide or are not longer than maxInline")
	}
}

func pod(ns, name, app, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: map[string]string{"app": app}}}
}

func openBoundedForTest(t *testing.T, path string, codec store.Codec, size int) *bounded {
	t.Helper()
	o, err := (&store.Options{
		Name: "pods", Codec: codec, CacheSize: size, Durability: store.DurabilityNoSync,
		Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app")},
	}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s, err := open(t.Context(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*bounded)
}

// TestBoundedReadsOnlyWhatTheyNeed checks that the bounded mode keeps at
// most CacheSize decoded objects and serves index reads from the persisted
// entries, decoding only the objects it returns.
func TestBoundedReadsOnlyWhatTheyNeed(t *testing.T) {
	base, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	codec := &storetest.DecodeCounter{Codec: base}
	path := filepath.Join(t.TempDir(), "pods.db")
	s := openBoundedForTest(t, path, codec, 2)
	var ops []store.Op
	for i := range 100 {
		app := "common"
		if i%25 == 0 {
			app = "rare"
		}
		ops = append(ops, store.Op{Type: store.OpPut, Object: pod("ns", fmt.Sprintf("p%03d", i), app, "1")})
	}
	if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "9"}); err != nil {
		t.Fatal(err)
	}
	if n := s.CacheLen(); n > 2 {
		t.Errorf("cache holds %d objects after a commit; want at most 2", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBoundedForTest(t, path, codec, 2)
	codec.Decodes.Store(0)

	keys, err := s.IndexKeys("app", "rare")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/p000", "ns/p025", "ns/p050", "ns/p075"}, keys); diff != "" {
		t.Errorf("IndexKeys(app, rare) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"common", "rare"}, slices.Sorted(slices.Values(s.ListIndexFuncValues("app")))); diff != "" {
		t.Errorf("ListIndexFuncValues(app) (-want +got):\n%s", diff)
	}
	if n := codec.Decodes.Load(); n != 0 {
		t.Errorf("IndexKeys and ListIndexFuncValues decoded %d objects; want 0", n)
	}
	list, err := s.ByIndex("app", "rare")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 {
		t.Errorf("ByIndex(app, rare) returned %d objects; want 4", len(list))
	}
	if n := codec.Decodes.Load(); n != 4 {
		t.Errorf("ByIndex of 4 objects decoded %d; want 4 (no scan)", n)
	}
	for i := range 10 {
		if _, ok, err := s.GetByKey(fmt.Sprintf("ns/p%03d", i)); !ok || err != nil {
			t.Fatalf("GetByKey: %v, %v", ok, err)
		}
	}
	if n := s.CacheLen(); n != 2 {
		t.Errorf("cache holds %d objects after 10 Gets; want 2", n)
	}
	codec.Decodes.Store(0)
	if _, _, err := s.GetByKey("ns/p009"); err != nil {
		t.Fatal(err)
	}
	if n := codec.Decodes.Load(); n != 0 {
		t.Errorf("Get of the most recently read object decoded %d times; want 0 (cached)", n)
	}
}

// TestBoundedCacheNeverStale races readers that miss the cache against a
// writer updating the same key: the cache must end with the last write.
func TestBoundedCacheNeverStale(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	s := openBoundedForTest(t, filepath.Join(t.TempDir(), "pods.db"), codec, 1)
	if err := s.Add(pod("ns", "other", "a", "1")); err != nil {
		t.Fatal(err)
	}
	const updates = 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Evict, then miss on the hot key.
				for _, key := range []string{"ns/other", "ns/hot"} {
					if _, _, err := s.GetByKey(key); err != nil {
						t.Errorf("GetByKey(%q) during updates: %v", key, err)
						return
					}
				}
			}
		}()
	}
	for i := 1; i <= updates; i++ {
		if err := s.Update(pod("ns", "hot", "a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	obj, ok, err := s.GetByKey("ns/hot")
	if err != nil || !ok {
		t.Fatalf("GetByKey(ns/hot) = %v, %v", ok, err)
	}
	if got := obj.(*corev1.Pod).ResourceVersion; got != fmt.Sprint(updates) {
		t.Errorf("GetByKey(ns/hot) has resourceVersion %s; want %d (a stale object stayed cached)", got, updates)
	}
}

// TestBoundedListIndexValuesDuringAddIndexers lists the values of an index
// of long (digest) values while AddIndexers adds indexes sorting before it:
// each rewrites every key record for the larger set and shifts the index's
// position. Resolving a long value decodes its key record with the index
// count and position of the set; taken from one set and a transaction of
// another, the decode fails as "corrupt" and the list comes back nil.
func TestBoundedListIndexValuesDuringAddIndexers(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	s := openBoundedForTest(t, filepath.Join(t.TempDir(), "pods.db"), codec, 2)
	long := strings.Repeat("V", 2000)
	for i := range 50 {
		if err := s.Add(pod("n", fmt.Sprint("p", i), long, "1")); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	bad := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if v := s.ListIndexFuncValues("app"); len(v) != 1 {
				select {
				case bad <- fmt.Sprintf("ListIndexFuncValues(app) = %d values, want 1", len(v)):
				default:
				}
				return
			}
		}
	}()
	for i := range 200 {
		name := fmt.Sprintf("a%03d", i) // sorts before "app": shifts its position
		if err := s.AddIndexers(cache.Indexers{name: indexer.LabelIndexFunc("m")}); err != nil {
			t.Fatal(err)
		}
		select {
		case msg := <-bad:
			close(stop)
			<-done
			t.Fatalf("after %d AddIndexers: %s", i+1, msg)
		default:
		}
	}
	close(stop)
	<-done
}

// TestDamagedRecords writes garbage into one object and one object's key
// record of a valid file: the default mode refuses to open
// (ErrCorrupt naming the file and the key), the bounded mode opens and
// fails the reads that meet the damage.
func TestDamagedRecords(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bucket []byte
	}{{"object", bucketObjects}, {"key record", bucketKeys}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.db")
			s := openBoundedForTest(t, path, codec, 1)
			for _, n := range []string{"good", "bad"} {
				if err := s.Add(pod("ns", n, "a", "1")); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			editFile(t, path, func(tx *bbolt.Tx) error {
				b, err := storeBuckets(tx, "pods")
				if err != nil {
					return err
				}
				k := []byte("ns/bad")
				if tc.name == "object" {
					seq, err := recordSeq(b.keys.Get(k))
					if err != nil {
						return err
					}
					k = seqKey(seq)
				}
				return b.store.Bucket(tc.bucket).Put(k, []byte("\xff\xfe garbage"))
			})

			b := openBoundedForTest(t, path, codec, 1)
			if _, _, err := b.GetByKey("ns/good"); err != nil {
				t.Errorf("bounded GetByKey(ns/good): %v", err)
			}
			var readErr error
			if tc.name == "object" {
				_, _, readErr = b.GetByKey("ns/bad")
			} else {
				readErr = b.Delete(pod("ns", "bad", "a", "1"))
			}
			if !errors.Is(readErr, store.ErrCorrupt) {
				t.Errorf("bounded read of the damaged record: error %v; want ErrCorrupt", readErr)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			// The default mode loads every object: the damage fails the open.
			o, err := (&store.Options{Name: "pods", Codec: codec, Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app")}}).WithDefaults()
			if err != nil {
				t.Fatal(err)
			}
			_, err = open(t.Context(), path, o)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "ns/bad") {
				t.Errorf("default open: error %v; want ErrCorrupt naming %s and ns/bad", err, path)
			}
		})
	}
}
