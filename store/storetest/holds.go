package storetest

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// Reopen is what else an open of a store of Pods may find changed since the
// store was written.
type Reopen struct {
	Name   string
	Change func(o *store.Options)
	// Reset says the open must empty the store.
	Reset bool
}

// Reopens are the changes that make an open rewrite a store of Pods
// indexed by namespace and by the label "app" (index "app"): another index
// set (its values rebuilt), another scope (emptied), a key function or the
// app index function computing something else under the same name (found
// by the open's checks of the stored objects), and combinations.
func Reopens() []Reopen {
	nameIndex := func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.Pod).Name}, nil }
	otherApp := func(obj interface{}) ([]string, error) {
		return []string{"v2-" + obj.(*corev1.Pod).Labels["app"]}, nil
	}
	otherKey := func(obj interface{}) (string, error) {
		k, err := cache.MetaNamespaceKeyFunc(obj)
		return "v2:" + k, err
	}
	return []Reopen{
		{"none", func(*store.Options) {}, false},
		{"index set", func(o *store.Options) {
			delete(o.Indexers, cache.NamespaceIndex)
			o.Indexers["name"] = nameIndex
		}, false},
		{"scope", func(o *store.Options) { o.Scope = "cluster-b" }, true},
		{"index set and scope", func(o *store.Options) {
			o.Indexers["name"] = nameIndex
			o.Scope = "cluster-b"
		}, true},
		{"key function", func(o *store.Options) { o.KeyFunc = otherKey }, true},
		{"index set and key function", func(o *store.Options) {
			o.Indexers["name"] = nameIndex
			o.KeyFunc = otherKey
		}, true},
		{"index function", func(o *store.Options) { o.Indexers["app"] = otherApp }, false},
		{"index function and index set", func(o *store.Options) {
			o.Indexers["app"] = otherApp
			o.Indexers["name"] = nameIndex
		}, false},
		{"index function and scope", func(o *store.Options) {
			o.Indexers["app"] = otherApp
			o.Scope = "cluster-b"
		}, true},
	}
}

// Summary is what a test compares of an object (its name and
// resourceVersion, say): two objects with one summary are the same to it.
type Summary func(obj interface{}) string

// Holds checks that s, opened with o, holds exactly want at the resume point
// rv, read every way a user reads it: ListKeys, List, GetByKey, and per index
// of o, ListIndexFuncValues, IndexKeys and ByIndex; and that no read failed
// (store.ReadFailer). Objects are compared by sum; failures are reported
// with t.Errorf, prefixed with when.
func Holds[T any](t testing.TB, when string, s store.Store, o store.Options, want []T, rv string, sum Summary) {
	t.Helper()
	wantObjs, wantIdx := expected(t, o, want, sum)
	if got := s.ResourceVersion(); got != rv {
		t.Errorf("%s: resume point %q, want %q", when, got, rv)
	}
	keys := s.ListKeys()
	slices.Sort(keys)
	if want := slices.Sorted(maps.Keys(wantObjs)); !slices.Equal(keys, want) {
		t.Errorf("%s: ListKeys %.300q, want %.300q", when, keys, want)
	}
	gotObjs := map[string]string{}
	for _, obj := range s.List() {
		gotObjs[mustKey(t, o, obj)] = sum(obj)
	}
	if diff := cmp.Diff(wantObjs, gotObjs); diff != "" {
		t.Errorf("%s: List (-want +got):\n%s", when, diff)
	}
	for key, want := range wantObjs {
		obj, ok, err := s.GetByKey(key)
		if err != nil || !ok {
			t.Errorf("%s: GetByKey(%.40q): exists %v, %v", when, key, ok, err)
			continue
		}
		if got := sum(obj); got != want {
			t.Errorf("%s: GetByKey(%.40q) = %s, want %s", when, key, got, want)
		}
	}
	gotIdx := noValues(o)
	for name := range o.Indexers {
		for _, v := range s.ListIndexFuncValues(name) {
			ikeys, err := s.IndexKeys(name, v)
			if err != nil {
				t.Errorf("%s: IndexKeys(%s, %.40s): %v", when, name, v, err)
			}
			objs, err := s.ByIndex(name, v)
			if err != nil {
				t.Errorf("%s: ByIndex(%s, %.40s): %v", when, name, v, err)
			}
			var bkeys []string
			for _, obj := range objs {
				key := mustKey(t, o, obj)
				if sum(obj) != wantObjs[key] {
					t.Errorf("%s: ByIndex(%s, %.40s) holds %s, want %s", when, name, v, sum(obj), wantObjs[key])
				}
				bkeys = append(bkeys, key)
			}
			slices.Sort(ikeys)
			slices.Sort(bkeys)
			if !slices.Equal(ikeys, bkeys) {
				t.Errorf("%s: index %s value %.40s: IndexKeys %.200q, ByIndex %.200q", when, name, v, ikeys, bkeys)
			}
			gotIdx[name][v] = ikeys
		}
	}
	if diff := cmp.Diff(wantIdx, gotIdx); diff != "" {
		t.Errorf("%s: indexes (-want +got):\n%s", when, diff)
	}
	if rf, ok := s.(store.ReadFailer); ok {
		if err := rf.ReadErr(); err != nil {
			t.Errorf("%s: a read failed: %v", when, err)
		}
	}
}

// Reopened checks that s, just opened with o over a store that held want
// at the resume point rv, was emptied (Info().Reset says why) exactly when
// reset, and then holds want at rv; an emptied store is first refilled as
// an informer's relist would, with want at the resume point relistRV. It
// returns the resume point s holds.
func Reopened[T any](t testing.TB, s store.Store, o store.Options, reset bool, want []T, rv, relistRV string, sum Summary) string {
	t.Helper()
	checkReset(t, s, reset, "after the open")
	if reset {
		Holds(t, "after the emptying open", s, o, []T(nil), "", sum)
		Put(t, s, want, relistRV)
		rv = relistRV
	}
	Holds(t, "after the open", s, o, want, rv, sum)
	return rv
}

// Put stores objs with the resume point rv in one Commit.
func Put[T any](t testing.TB, s store.Store, objs []T, rv string) {
	t.Helper()
	if err := s.Commit(context.Background(), store.Batch{Ops: puts(objs...), ResourceVersion: rv}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// RawHolds checks that d reads the closed store o.Name of the database at u,
// last opened with o, as one of format version formatVersion holding exactly
// want at the resume point rv: Export's Info, records and their index values
// (in the sorted order of the index names), and the index entries that
// entries (the backend's IndexEntries) reads.
func RawHolds[T any](t testing.TB, d store.RawDriver, u *url.URL, formatVersion int, o store.Options, want []T, rv string, sum Summary,
	entries func(ctx context.Context, u *url.URL, name string, fn func(index, value, key string) error) error) {
	t.Helper()
	ctx := context.Background()
	wantObjs, wantIdx := expected(t, o, want, sum)
	indexes := slices.Sorted(maps.Keys(o.Indexers))
	gotObjs, gotIdx := map[string]string{}, noValues(o)
	info, err := d.Export(ctx, u, o.Name, func(r store.Record) error {
		obj, err := indexer.Decode(o.Codec, r.Data)
		if err != nil {
			return fmt.Errorf("decode %.40q: %w", r.Key, err)
		}
		gotObjs[r.Key] = sum(obj)
		if len(r.Values) != len(indexes) {
			return fmt.Errorf("record %.40q: values of %d indexes, want %d", r.Key, len(r.Values), len(indexes))
		}
		for i, vals := range r.Values {
			for _, v := range vals {
				gotIdx[indexes[i]][v] = append(gotIdx[indexes[i]][v], r.Key)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("raw Export: %v", err)
	}
	if info.FormatVersion != formatVersion || info.ResourceVersion != rv || info.Scope != o.Scope || !slices.Equal(info.Indexes, indexes) {
		t.Errorf("raw Export: format version %d, resume point %q, scope %q, indexes %q; want %d, %q, %q, %q",
			info.FormatVersion, info.ResourceVersion, info.Scope, info.Indexes, formatVersion, rv, o.Scope, indexes)
	}
	if diff := cmp.Diff(wantObjs, gotObjs); diff != "" {
		t.Errorf("raw Export: objects (-want +got):\n%s", diff)
	}
	sortKeys(gotIdx)
	if diff := cmp.Diff(wantIdx, gotIdx); diff != "" {
		t.Errorf("raw Export: index values (-want +got):\n%s", diff)
	}

	gotEntries := noValues(o)
	err = entries(ctx, u, o.Name, func(index, value, key string) error {
		if gotEntries[index] == nil {
			return fmt.Errorf("entry of unknown index %q", index)
		}
		gotEntries[index][value] = append(gotEntries[index][value], key)
		return nil
	})
	if err != nil {
		t.Fatalf("raw IndexEntries: %v", err)
	}
	sortKeys(gotEntries)
	if diff := cmp.Diff(wantIdx, gotEntries); diff != "" {
		t.Errorf("raw IndexEntries (cache=%d) (-want +got):\n%s", o.CacheSize, diff)
	}
}

// expected is what a store opened with o holding want must hold: each key's
// summary, and per index, per value, the sorted keys.
func expected[T any](t testing.TB, o store.Options, want []T, sum Summary) (objs map[string]string, idx map[string]map[string][]string) {
	t.Helper()
	objs, idx = map[string]string{}, noValues(o)
	for _, obj := range want {
		key := mustKey(t, o, obj)
		objs[key] = sum(obj)
		for name, fn := range o.Indexers {
			vals, err := fn(obj)
			if err != nil {
				t.Fatalf("index function %s: %v", name, err)
			}
			for _, v := range vals {
				idx[name][v] = append(idx[name][v], key)
			}
		}
	}
	sortKeys(idx)
	return objs, idx
}

// noValues returns, per index of o, an empty map of values to keys.
func noValues(o store.Options) map[string]map[string][]string {
	idx := map[string]map[string][]string{}
	for name := range o.Indexers {
		idx[name] = map[string][]string{}
	}
	return idx
}

func mustKey(t testing.TB, o store.Options, obj interface{}) string {
	t.Helper()
	key, err := o.KeyFunc(obj)
	if err != nil {
		t.Fatalf("key of %T: %v", obj, err)
	}
	return key
}

// sortKeys sorts the keys of every value of every index of idx.
func sortKeys(idx map[string]map[string][]string) {
	for _, m := range idx {
		for _, keys := range m {
			slices.Sort(keys)
		}
	}
}
