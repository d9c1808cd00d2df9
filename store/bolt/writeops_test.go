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
// the object keys, and per index the entries "value key" both as the index
// buckets hold them and as the values records say they should be.
type fileState struct {
	Keys        []string
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
		if err := b.objects.ForEach(func(k, _ []byte) error {
			key, err := fullKey(b, k)
			st.Keys = append(st.Keys, key)
			return err
		}); err != nil {
			return err
		}
		if err := b.values.ForEach(func(k, rec []byte) error {
			if b.objects.Get(k) == nil {
				return fmt.Errorf("values record %q without object", k)
			}
			full, vals, err := decodeRecord(rec, len(names))
			if err != nil {
				return err
			}
			if full == "" {
				full = string(k)
			}
			for i, vs := range vals {
				for _, v := range vs {
					st.FromRecords[names[i]] = append(st.FromRecords[names[i]], v+" "+full)
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for _, n := range names {
			ib := b.index.Bucket([]byte(n))
			if ib == nil {
				return fmt.Errorf("index bucket %q missing", n)
			}
			if err := ib.ForEach(func(k, _ []byte) error {
				v, kf, err := splitIndexEntry(k)
				if err != nil {
					return err
				}
				key, err := fullKey(b, kf)
				st.Entries[n] = append(st.Entries[n], string(v)+" "+key)
				return err
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
// the objects, values records and index entries it leaves must be exactly
// those of applying the ops one by one.
func TestCommitWritesNetEffect(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := (&store.Options{
		Name: "pods", Codec: codec, Durability: store.DurabilityNoSync,
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
	f := s.(*defaultStore).file
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
			want := fileState{Entries: map[string][]string{}}
			for key, app := range model {
				want.Keys = append(want.Keys, key)
				ns, _, _ := strings.Cut(key, "/")
				want.Entries["app"] = append(want.Entries["app"], app+" "+key)
				want.Entries[cache.NamespaceIndex] = append(want.Entries[cache.NamespaceIndex], ns+" "+key)
			}
			slices.Sort(want.Keys)
			for _, es := range want.Entries {
				slices.Sort(es)
			}
			want.FromRecords = want.Entries
			got := readFileState(t, f, "pods", names)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("file after the batch (-want +got):\n%s", diff)
			}
		})
	}
}
