package bolt

import (
	"fmt"
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
)

// fileState is what a store's buckets hold, read straight from the file:
// the object keys, whether the store keeps index entries (the "entries"
// record), and per index the entries "value key" both as the index buckets
// hold them and as the key records say they should be. Reading it checks
// that key records, objects and index entries agree on sequence numbers.
type fileState struct {
	Keys        []string
	KeepEntries bool
	Entries     map[string][]string
	FromRecords map[string][]string
}

func readFileState(t *testing.T, f *file, name string, names []string) fileState {
	t.Helper()
	st := fileState{Entries: map[string][]string{}, FromRecords: map[string][]string{}}
	err := f.db.View(func(tx *bbolt.Tx) error {
		b, err := storeBuckets(tx, name)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("store %q missing", name)
		}
		st.KeepEntries = b.entries
		objects := map[uint64]string{}
		if err := b.keys.ForEach(func(k, rec []byte) error {
			rec, err := b.open("key record", k, rec)
			if err != nil {
				return err
			}
			seq, full, vals, err := decodeKeyRecord(rec, len(names))
			if err != nil {
				return err
			}
			if full == "" {
				full = string(k)
			}
			if b.objects.Get(seqKey(seq)) == nil {
				return fmt.Errorf("key record %q without object %d", k, seq)
			}
			if other, ok := objects[seq]; ok {
				return fmt.Errorf("keys %q and %q share object %d", other, full, seq)
			}
			objects[seq] = full
			st.Keys = append(st.Keys, full)
			for i, vs := range vals {
				for _, v := range vs {
					st.FromRecords[names[i]] = append(st.FromRecords[names[i]], v+" "+full)
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if n := b.objects.Stats().KeyN; n != len(objects) {
			return fmt.Errorf("%d objects, %d key records", n, len(objects))
		}
		next, err := nextSeq(b)
		if err != nil {
			return err
		}
		for seq := range objects {
			if seq >= next {
				return fmt.Errorf("object %d not below the next sequence number %d", seq, next)
			}
		}
		for _, n := range names {
			ib := b.index.Bucket([]byte(n))
			if ib == nil {
				return fmt.Errorf("index bucket %q missing", n)
			}
			if err := ib.ForEach(func(k, key []byte) error {
				v, seq, err := splitIndexEntry(k)
				if err != nil {
					return err
				}
				if key, err = b.open("index entry", k, key); err != nil {
					return err
				}
				if objects[seq] != string(key) {
					return fmt.Errorf("index %q entry %q names %q, object %d is %q", n, k, key, seq, objects[seq])
				}
				st.Entries[n] = append(st.Entries[n], string(v)+" "+string(key))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", f.path, err)
	}
	for _, m := range []map[string][]string{st.Entries, st.FromRecords} {
		for _, es := range m {
			slices.Sort(es)
		}
	}
	return st
}

// TestCommitWritesNetEffect checks the file after batches that touch keys
// more than once: writeOps writes each key's net effect in sorted order, and
// the objects, key records and index entries it leaves must be exactly
// those of applying the ops one by one. The default mode keeps no index
// entries on disk (its index is in memory), the bounded mode keeps them.
func TestCommitWritesNetEffect(t *testing.T) {
	for _, cacheSize := range []int{0, 2} {
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) { testCommitWritesNetEffect(t, cacheSize) })
	}
}

func testCommitWritesNetEffect(t *testing.T, cacheSize int) {
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
	s, err := open(t.Context(), filepath.Join(t.TempDir(), "pods.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := fileOf(s)
	names := []string{"app", cache.NamespaceIndex}

	// model is the expected contents: key -> app label.
	model := map[string]string{}
	put := func(ns, name, app string) store.Op {
		return store.Op{Type: store.OpPut, Object: pod(ns, name, app, "1")}
	}
	del := func(key string) store.Op { return store.Op{Type: store.OpDelete, Key: key} }
	for _, tc := range []struct {
		name string
		ops  []store.Op
	}{
		{"seed out of order", []store.Op{put("b", "2", "x"), put("a", "1", "x"), put("c", "3", "y"), put("a", "0", "z")}},
		{"put twice", []store.Op{put("a", "1", "y"), put("a", "1", "w")}},
		{"put then delete", []store.Op{put("d", "4", "x"), del("d/4")}},
		{"delete then put", []store.Op{del("b/2"), put("b", "2", "v")}},
		{"update back to stored values", []store.Op{put("c", "3", "x"), put("c", "3", "y")}},
		{"delete twice and absent", []store.Op{del("a/0"), del("a/0"), del("e/9")}},
		{"many keys in reverse", func() []store.Op {
			var ops []store.Op
			for i := 40; i > 0; i-- {
				ops = append(ops, put(fmt.Sprintf("n%d", i%3), fmt.Sprintf("p%02d", i), fmt.Sprintf("app%d", i%4)))
			}
			return append(ops, del("n1/p10"), put("n1", "p10", "late"))
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Commit(t.Context(), store.Batch{Ops: tc.ops, ResourceVersion: "1"}); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			for _, op := range tc.ops {
				if op.Type == store.OpDelete {
					delete(model, op.Key)
					continue
				}
				p := op.Object.(*corev1.Pod)
				model[p.Namespace+"/"+p.Name] = p.Labels["app"]
			}
			want := fileState{KeepEntries: cacheSize > 0, Entries: map[string][]string{}, FromRecords: map[string][]string{}}
			for key, app := range model {
				want.Keys = append(want.Keys, key)
				ns, _, _ := strings.Cut(key, "/")
				want.FromRecords["app"] = append(want.FromRecords["app"], app+" "+key)
				want.FromRecords[cache.NamespaceIndex] = append(want.FromRecords[cache.NamespaceIndex], ns+" "+key)
			}
			slices.Sort(want.Keys)
			for _, es := range want.FromRecords {
				slices.Sort(es)
			}
			if want.KeepEntries {
				want.Entries = want.FromRecords
			}
			got := readFileState(t, f, "pods", names)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("file after the batch (-want +got):\n%s", diff)
			}
		})
	}
}

// fileOf returns the file of a bolt store of either mode.
func fileOf(s store.Store) *file {
	if d, ok := s.(*defaultStore); ok {
		return d.file
	}
	return s.(*bounded).file
}

// seqs returns the sequence number of every key of the store name.
func seqs(t *testing.T, f *file, name string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := f.db.View(func(tx *bbolt.Tx) error {
		b, err := storeBuckets(tx, name)
		if err != nil {
			return err
		}
		return b.keys.ForEach(func(k, rec []byte) error {
			seq, err := recordSeq(rec)
			out[string(k)] = seq
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSequenceNumbers checks how objects are numbered: new objects after
// every stored one, in key order within a Commit; an update keeps its
// number, an object deleted and created again gets a new one; Replace
// numbers from 0 in key order; and a reopened store goes on from where it
// was.
func TestSequenceNumbers(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pods.db")
	o, err := (&store.Options{Name: "pods", Codec: codec, Durability: store.DurabilityNoSync,
		Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app")}}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []int{0, 10} {
		t.Run(fmt.Sprintf("cache=%d", mode), func(t *testing.T) {
			o := o
			o.CacheSize = mode
			o.Name = fmt.Sprintf("pods-%d", mode)
			reopen := func() (store.Store, *file) {
				s, err := open(t.Context(), path, o)
				if err != nil {
					t.Fatal(err)
				}
				if d, ok := s.(*defaultStore); ok {
					return s, d.file
				}
				return s, s.(*bounded).file
			}
			s, f := reopen()
			commit := func(ops ...store.Op) {
				t.Helper()
				if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "1"}); err != nil {
					t.Fatal(err)
				}
			}
			put := func(name, app string) store.Op {
				return store.Op{Type: store.OpPut, Object: pod("ns", name, app, "1")}
			}
			check := func(want map[string]uint64) {
				t.Helper()
				if diff := cmp.Diff(want, seqs(t, f, o.Name)); diff != "" {
					t.Errorf("sequence numbers (-want +got):\n%s", diff)
				}
			}
			commit(put("c", "x"), put("a", "x"), put("b", "y"))
			check(map[string]uint64{"ns/a": 0, "ns/b": 1, "ns/c": 2})
			commit(put("a", "z"), store.Op{Type: store.OpDelete, Key: "ns/b"}, put("d", "x"))
			check(map[string]uint64{"ns/a": 0, "ns/c": 2, "ns/d": 3})
			commit(put("b", "y"))
			check(map[string]uint64{"ns/a": 0, "ns/b": 4, "ns/c": 2, "ns/d": 3})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, f = reopen()
			commit(put("e", "y"))
			check(map[string]uint64{"ns/a": 0, "ns/b": 4, "ns/c": 2, "ns/d": 3, "ns/e": 5})
			if err := s.Replace([]interface{}{pod("ns", "z", "x", "1"), pod("ns", "y", "x", "1")}, "2"); err != nil {
				t.Fatal(err)
			}
			check(map[string]uint64{"ns/y": 0, "ns/z": 1})
			commit(put("a", "x"))
			check(map[string]uint64{"ns/a": 2, "ns/y": 0, "ns/z": 1})
			if got, err := s.ByIndex("app", "x"); err != nil || len(got) != 3 {
				t.Errorf("ByIndex(app, x) = %d objects, %v; want 3", len(got), err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
