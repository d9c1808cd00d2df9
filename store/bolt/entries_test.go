package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/recsum"
)

// entriesOptions opens the store "pods" with two indexes, bounded when
// cacheSize > 0.
func entriesOptions(t *testing.T, cacheSize int) store.Options {
	t.Helper()
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := (&store.Options{
		Name: "pods", Codec: codec, Durability: store.DurabilityNoSync, CacheSize: cacheSize,
		Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app"), cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// indexView is what a store answers for its indexes, read through the
// store API: per index, every value with its keys.
func indexView(t *testing.T, s store.Store) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	for _, idx := range []string{"app", cache.NamespaceIndex} {
		out[idx] = map[string][]string{}
		for _, v := range s.ListIndexFuncValues(idx) {
			keys, err := s.IndexKeys(idx, v)
			if err != nil {
				t.Fatalf("IndexKeys(%s, %s): %v", idx, v, err)
			}
			objs, err := s.ByIndex(idx, v)
			if err != nil {
				t.Fatalf("ByIndex(%s, %s): %v", idx, v, err)
			}
			if len(objs) != len(keys) {
				t.Errorf("ByIndex(%s, %s): %d objects, IndexKeys %d keys", idx, v, len(objs), len(keys))
			}
			slices.Sort(keys)
			out[idx][v] = keys
		}
	}
	return out
}

// TestEntriesFollowMode switches one store between the modes, changing it in
// each (new objects, deletes, index values changed): the default mode
// leaves no index entries on disk, the bounded mode builds them at open
// from the key records and keeps them, and in every phase both the file and
// the store's answers match a model of the objects.
func TestEntriesFollowMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.db")
	model := map[string]string{} // key -> app
	for phase, cacheSize := range []int{0, 3, 0, 0, 3, 3, 0} {
		o := entriesOptions(t, cacheSize)
		s, err := open(t.Context(), path, o)
		if err != nil {
			t.Fatalf("phase %d: open: %v", phase, err)
		}
		var ops []store.Op
		for i := range 6 {
			ns, name := fmt.Sprintf("ns%d", i%2), fmt.Sprintf("p%d-%d", phase, i)
			app := fmt.Sprintf("app%d", (phase+i)%3)
			ops = append(ops, store.Op{Type: store.OpPut, Object: pod(ns, name, app, "1")})
			model[ns+"/"+name] = app
		}
		// Change an object of an earlier phase, and delete one.
		if phase > 0 {
			ops = append(ops, store.Op{Type: store.OpPut, Object: pod("ns0", fmt.Sprintf("p%d-0", phase-1), "moved", "2")})
			model[fmt.Sprintf("ns0/p%d-0", phase-1)] = "moved"
			ops = append(ops, store.Op{Type: store.OpDelete, Key: fmt.Sprintf("ns1/p%d-1", phase-1)})
			delete(model, fmt.Sprintf("ns1/p%d-1", phase-1))
		}
		if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(phase + 10)}); err != nil {
			t.Fatalf("phase %d: Commit: %v", phase, err)
		}

		want := map[string]map[string][]string{"app": {}, cache.NamespaceIndex: {}}
		wantFile := fileState{KeepEntries: cacheSize > 0, Entries: map[string][]string{}, FromRecords: map[string][]string{}}
		for key, app := range model {
			ns, _, _ := strings.Cut(key, "/")
			want["app"][app] = append(want["app"][app], key)
			want[cache.NamespaceIndex][ns] = append(want[cache.NamespaceIndex][ns], key)
			wantFile.Keys = append(wantFile.Keys, key)
			wantFile.FromRecords["app"] = append(wantFile.FromRecords["app"], app+" "+key)
			wantFile.FromRecords[cache.NamespaceIndex] = append(wantFile.FromRecords[cache.NamespaceIndex], ns+" "+key)
		}
		for _, m := range want {
			for _, keys := range m {
				slices.Sort(keys)
			}
		}
		slices.Sort(wantFile.Keys)
		for _, es := range wantFile.FromRecords {
			slices.Sort(es)
		}
		if wantFile.KeepEntries {
			wantFile.Entries = wantFile.FromRecords
		}
		if diff := cmp.Diff(want, indexView(t, s)); diff != "" {
			t.Errorf("phase %d (cache=%d): indexes (-want +got):\n%s", phase, cacheSize, diff)
		}
		got := readFileState(t, fileOf(s), "pods", []string{"app", cache.NamespaceIndex})
		if diff := cmp.Diff(wantFile, got); diff != "" {
			t.Errorf("phase %d (cache=%d): file (-want +got):\n%s", phase, cacheSize, diff)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFormatVersion2Upgraded opens a store of format version 2 (the same
// buckets, with every index entry and no "entries" record): the raw driver
// reads it, and each mode opens it as version 3, the default mode dropping
// the entries it does not use and the bounded mode keeping them.
func TestFormatVersion2Upgraded(t *testing.T) {
	for _, cacheSize := range []int{0, 3} {
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.db")
			s := openFivePods(t, path)
			wantIndexes := indexView(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			setFormat2(t, path)
			u := &url.URL{Scheme: Scheme, Path: path}
			infos, err := Raw().Stores(t.Context(), u)
			if err != nil || len(infos) != 1 || infos[0].FormatVersion != 2 {
				t.Fatalf("raw Stores of a version 2 file: %v, %v; want one store of version 2", infos, err)
			}

			s, err = open(t.Context(), path, entriesOptions(t, cacheSize))
			if err != nil {
				t.Fatalf("open a version 2 store: %v", err)
			}
			defer s.Close()
			if diff := cmp.Diff(wantIndexes, indexView(t, s)); diff != "" {
				t.Errorf("indexes after the upgrade (-want +got):\n%s", diff)
			}
			got := readFileState(t, fileOf(s), "pods", []string{"app", cache.NamespaceIndex})
			if got.KeepEntries != (cacheSize > 0) || (cacheSize > 0) != (len(got.Entries) > 0) {
				t.Errorf("after the upgrade: keeps entries %v, %d index entries; want %v", got.KeepEntries, len(got.Entries), cacheSize > 0)
			}
			err = fileOf(s).db.View(func(tx *bbolt.Tx) error {
				b, err := storeBuckets(tx, "pods")
				if err != nil {
					return err
				}
				m, err := getMeta(b)
				if err != nil {
					return err
				}
				if m.FormatVersion != FormatVersion {
					return fmt.Errorf("format version %d after the upgrade, want %d", m.FormatVersion, FormatVersion)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// openFivePods opens the store "pods" of the file at path in the bounded
// mode, which keeps index entries, and adds five Pods to it.
func openFivePods(t *testing.T, path string) store.Store {
	t.Helper()
	s, err := open(t.Context(), path, entriesOptions(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.Add(pod(fmt.Sprintf("ns%d", i%2), fmt.Sprint("p", i), fmt.Sprint("app", i%3), "1")); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// setFormat2 turns the store "pods" of the file at path, which keeps its
// index entries, into what format version 2 wrote: version 2 in the
// metadata, no "entries" record and no record frames.
func setFormat2(t *testing.T, path string) {
	t.Helper()
	editFile(t, path, func(tx *bbolt.Tx) error {
		b, err := storeBuckets(tx, "pods")
		if err != nil {
			return err
		}
		if !b.entries {
			return fmt.Errorf("the store keeps no index entries")
		}
		if err := writeOldFormat(b, formatSeqEntries); err != nil {
			return err
		}
		return b.meta.Delete(keyEntries)
	})
}

// writeOldFormat makes b a store of an older format version: its records
// without frames, and version in its metadata.
func writeOldFormat(b *buckets, version int) error {
	m, err := getMeta(b)
	if err != nil {
		return err
	}
	m.FormatVersion = version
	if err := unsealAll(b); err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.meta.Put(keyMeta, data)
}

// unsealAll strips the frame of every record of b, as format version 3 and
// older stored them (sealAll undone), and drops the "sealed" record.
func unsealAll(b *buckets) error {
	strip := func(bk *bbolt.Bucket) error {
		var ks, vs [][]byte
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil || bytes.Equal(k, keySealed) && bk == b.meta {
				continue
			}
			val, ok := recsum.Open(k, v)
			if !ok {
				return fmt.Errorf("record %q: bad frame", k)
			}
			ks, vs = append(ks, bytes.Clone(k)), append(vs, bytes.Clone(val))
		}
		for i := range ks {
			if err := bk.Put(ks[i], vs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, bk := range []*bbolt.Bucket{b.meta, b.keys, b.objects} {
		if err := strip(bk); err != nil {
			return err
		}
	}
	if err := b.index.ForEachBucket(func(name []byte) error { return strip(b.index.Bucket(name)) }); err != nil {
		return err
	}
	b.sealed = false
	return b.meta.Delete(keySealed)
}

// editFile runs fn in a read-write transaction on the bbolt file at path,
// behind the backend's back (the file must not be open).
func editFile(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if err2 := db.Close(); err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnreadableStoreNotUpgraded opens, in the default mode, stores that a
// default-mode open would upgrade (one that keeps index entries, and one of
// format version 2) but with an object that does not decode. The open
// fails, and leaves the file as it was: its index entries, its "entries"
// record and its format version are still there for the bounded mode, an
// older build, or a snapshot to read.
func TestUnreadableStoreNotUpgraded(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("version2=%v", v2), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.db")
			s := openFivePods(t, path)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v2 {
				setFormat2(t, path)
			}
			editFile(t, path, func(tx *bbolt.Tx) error {
				b, err := storeBuckets(tx, "pods")
				if err != nil {
					return err
				}
				k, _ := b.objects.Cursor().Last()
				return b.objects.Put(k, []byte("not a protobuf object"))
			})
			before := rawFileState(t, path)

			s, err := open(t.Context(), path, entriesOptions(t, 0))
			if err == nil {
				s.Close()
				t.Fatal("default-mode open of a store with an object that does not decode: no error")
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("open: %v, want ErrCorrupt", err)
			}
			if diff := cmp.Diff(before, rawFileState(t, path)); diff != "" {
				t.Errorf("the failed open changed the store (-before +after):\n%s", diff)
			}
		})
	}
}

// rawFileState is every key and value of the store "pods" in the bbolt file
// at path (which must not be open), by bucket path.
func rawFileState(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	editFile(t, path, func(tx *bbolt.Tx) error {
		var walk func(prefix string, b *bbolt.Bucket) error
		walk = func(prefix string, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					return walk(prefix+string(k)+"/", b.Bucket(k))
				}
				out[prefix+string(k)] = string(v)
				return nil
			})
		}
		return walk("", tx.Bucket(bucketStores))
	})
	return out
}

// TestChangedIndexFunctionStored opens, in the default mode, a store whose
// app index function computes something else under the same name: the
// store serves the new values and stores them, so that the bounded mode,
// which reads the stored values, serves the same afterwards.
func TestChangedIndexFunctionStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.db")
	s := openFivePods(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v2 := func(cacheSize int) store.Options {
		o := entriesOptions(t, cacheSize)
		o.Indexers["app"] = func(obj interface{}) ([]string, error) {
			return []string{"v2-" + obj.(*corev1.Pod).Labels["app"]}, nil
		}
		return o
	}
	s, err := open(t.Context(), path, v2(0))
	if err != nil {
		t.Fatal(err)
	}
	got := indexView(t, s)
	if keys := got["app"]["v2-app0"]; !slices.Equal(keys, []string{"ns0/p0", "ns1/p3"}) {
		t.Errorf("default mode: IndexKeys(app, v2-app0) = %q under the new function; want [ns0/p0 ns1/p3]", keys)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = open(t.Context(), path, v2(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if diff := cmp.Diff(got, indexView(t, s)); diff != "" {
		t.Errorf("the bounded mode after the default mode's open (-default +bounded):\n%s", diff)
	}
}
