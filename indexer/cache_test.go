package indexer_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// labelsIndex gives every "key=value" label: a multi-value index.
func labelsIndex(obj interface{}) ([]string, error) {
	p := obj.(*corev1.Pod)
	var out []string
	for k, v := range p.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

func newCache(t *testing.T) (*indexer.Cache, *indexer.Preparer) {
	t.Helper()
	set := mustIndexSet(t, cache.Indexers{"labels": labelsIndex, "app": indexer.LabelIndexFunc("app")})
	return indexer.NewCache(set, nil), &indexer.Preparer{KeyFunc: cache.MetaNamespaceKeyFunc, Indexes: set}
}

func apply(t *testing.T, c *indexer.Cache, p *indexer.Preparer, ops ...store.Op) {
	t.Helper()
	ps, err := p.Prepare("test", ops)
	if err != nil {
		t.Fatal(err)
	}
	indexer.ApplyCache(c, ps)
}

func put(obj interface{}) store.Op { return store.Op{Type: store.OpPut, Object: obj} }
func del(obj interface{}) store.Op { return store.Op{Type: store.OpDelete, Object: obj} }

// indexState is every index value of every index with its sorted keys.
func indexState(t *testing.T, c *indexer.Cache) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	for _, name := range c.Indexes().Names() {
		out[name] = map[string][]string{}
		for _, v := range c.ListIndexFuncValues(name) {
			keys, err := c.IndexKeys(name, v)
			if err != nil {
				t.Fatal(err)
			}
			out[name][v] = keys
			objs, err := c.ByIndex(name, v)
			if err != nil || len(objs) != len(keys) {
				t.Errorf("ByIndex(%q, %q) = %d objects, %v; IndexKeys has %d", name, v, len(objs), err, len(keys))
			}
		}
	}
	return out
}

func TestCacheIndexMaintenance(t *testing.T) {
	c, p := newCache(t)
	apply(t, c, p,
		put(pod("ns", "a", "app=web", "tier=front")),
		put(pod("ns", "b", "app=web")),
		put(pod("ns", "c", "tier=front")),
	)
	want := map[string]map[string][]string{
		"app":    {"web": {"ns/a", "ns/b"}},
		"labels": {"app=web": {"ns/a", "ns/b"}, "tier=front": {"ns/a", "ns/c"}},
	}
	if diff := cmp.Diff(want, indexState(t, c)); diff != "" {
		t.Errorf("after adds (-want +got):\n%s", diff)
	}

	// An update moves a from its old values to its new ones.
	apply(t, c, p, put(pod("ns", "a", "app=api", "tier=front", "x=y")))
	want = map[string]map[string][]string{
		"app":    {"web": {"ns/b"}, "api": {"ns/a"}},
		"labels": {"app=web": {"ns/b"}, "app=api": {"ns/a"}, "tier=front": {"ns/a", "ns/c"}, "x=y": {"ns/a"}},
	}
	if diff := cmp.Diff(want, indexState(t, c)); diff != "" {
		t.Errorf("after an update (-want +got):\n%s", diff)
	}

	// Deletes drop entries, and values left without keys disappear.
	apply(t, c, p, del(pod("ns", "a")), del(pod("ns", "absent")))
	want = map[string]map[string][]string{
		"app":    {"web": {"ns/b"}},
		"labels": {"app=web": {"ns/b"}, "tier=front": {"ns/c"}},
	}
	if diff := cmp.Diff(want, indexState(t, c)); diff != "" {
		t.Errorf("after a delete (-want +got):\n%s", diff)
	}

	// Same key several times in one Apply: the last op wins.
	apply(t, c, p, put(pod("ns", "d", "app=one")), put(pod("ns", "d", "app=two")), del(pod("ns", "c")), put(pod("ns", "c", "app=three")))
	want = map[string]map[string][]string{
		"app":    {"web": {"ns/b"}, "two": {"ns/d"}, "three": {"ns/c"}},
		"labels": {"app=web": {"ns/b"}, "app=two": {"ns/d"}, "app=three": {"ns/c"}},
	}
	if diff := cmp.Diff(want, indexState(t, c)); diff != "" {
		t.Errorf("after ops on one key (-want +got):\n%s", diff)
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d; want 3", c.Len())
	}

	// Index(obj) is the union over obj's values.
	objs, err := c.Index("labels", pod("x", "probe", "app=two", "app2=none"))
	if err != nil || len(objs) != 1 {
		t.Errorf("Index(labels, probe) = %d objects, %v; want 1", len(objs), err)
	}
	objs, err = c.Index("labels", pod("x", "probe", "app=web", "n=1"))
	if err != nil || len(objs) != 1 {
		t.Errorf("Index(labels) = %d objects, %v", len(objs), err)
	}
}

// TestCacheFirstLargeApply: the first Apply to an empty cache, when large
// (a cold start's relist; the cache sizes its maps for it), and a large one
// after it end in the state the same operations reach one at a time,
// deletes and repeated keys included.
func TestCacheFirstLargeApply(t *testing.T) {
	const n = 5000 // above the size from which Apply sizes its maps
	var ops []store.Op
	for i := range n {
		ops = append(ops, put(pod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("app=a%d", i%7))))
	}
	ops = append(ops,
		del(pod("ns", "p1")), del(pod("ns", "absent")),
		put(pod("ns", "p2", "app=moved")), del(pod("ns", "p3")), put(pod("ns", "p3", "app=back")))

	// A second large Apply, to a cache that is not empty, keeps what the
	// first wrote.
	var more []store.Op
	for i := range n {
		more = append(more, put(pod("ns", fmt.Sprintf("q%d", i), "app=q")))
	}

	batch, p := newCache(t)
	apply(t, batch, p, ops...)
	apply(t, batch, p, more...)
	single, _ := newCache(t)
	for _, op := range append(ops, more...) {
		apply(t, single, p, op)
	}
	if diff := cmp.Diff(indexState(t, single), indexState(t, batch)); diff != "" {
		t.Errorf("indexes after one large Apply (-one at a time +batch):\n%s", diff)
	}
	want, got := single.ListKeys(), batch.ListKeys()
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys after one large Apply (-one at a time +batch):\n%s", diff)
	}
	if len(got) != 2*n-1 {
		t.Errorf("%d keys, want %d", len(got), 2*n-1)
	}
}

func TestCacheReplace(t *testing.T) {
	c, p := newCache(t)
	apply(t, c, p, put(pod("ns", "a", "app=old")), put(pod("ns", "b", "app=old")))
	ps, err := p.Prepare("replace", []store.Op{put(pod("ns", "b", "app=new")), put(pod("ns", "z", "app=new"))})
	if err != nil {
		t.Fatal(err)
	}
	indexer.ReplaceCache(c, ps)
	keys := c.ListKeys()
	sort.Strings(keys)
	if diff := cmp.Diff([]string{"ns/b", "ns/z"}, keys); diff != "" {
		t.Errorf("keys after Replace (-want +got):\n%s", diff)
	}
	want := map[string]map[string][]string{
		"app":    {"new": {"ns/b", "ns/z"}},
		"labels": {"app=new": {"ns/b", "ns/z"}},
	}
	if diff := cmp.Diff(want, indexState(t, c)); diff != "" {
		t.Errorf("after Replace (-want +got):\n%s", diff)
	}
}

// addIndexes adds more to c as Base.AddIndexers does: PrepareIndexes, then
// SetIndexes, so that nothing changes when a function fails.
func addIndexes(c *indexer.Cache, more cache.Indexers) error {
	set, vals, err := indexer.PrepareIndexes(c, more)
	if err != nil {
		return err
	}
	indexer.SetIndexes(c, set, vals)
	return nil
}

func TestCacheAddIndexes(t *testing.T) {
	c, p := newCache(t)
	apply(t, c, p, put(pod("ns", "a", "zone=east")), put(pod("ns", "b", "zone=west")), put(pod("ns", "bad", "zone=fail")))
	before := indexState(t, c)

	failing := func(obj interface{}) ([]string, error) {
		if obj.(*corev1.Pod).Labels["zone"] == "fail" {
			return nil, errors.New("cannot index")
		}
		return []string{obj.(*corev1.Pod).Labels["zone"]}, nil
	}
	err := addIndexes(c, cache.Indexers{"zone": failing})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("AddIndexes failing on a stored object: %v; want ErrInvalid", err)
	}
	if diff := cmp.Diff([]string{"app", "labels"}, c.Indexes().Names()); diff != "" {
		t.Errorf("a failed AddIndexes changed the index set (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, indexState(t, c)); diff != "" {
		t.Errorf("a failed AddIndexes changed the entries (-before +after):\n%s", diff)
	}
	if err := addIndexes(c, cache.Indexers{"app": failing}); !errors.Is(err, store.ErrIndexExists) {
		t.Errorf("AddIndexes of an existing name: %v; want ErrIndexExists", err)
	}

	apply(t, c, p, del(pod("ns", "bad")))
	if err := addIndexes(c, cache.Indexers{"zone": failing}); err != nil {
		t.Fatalf("AddIndexes: %v", err)
	}
	got := indexState(t, c)
	if diff := cmp.Diff(map[string][]string{"east": {"ns/a"}, "west": {"ns/b"}}, got["zone"]); diff != "" {
		t.Errorf("backfilled index (-want +got):\n%s", diff)
	}
	// The older indexes keep working after the switch, and writes maintain
	// the new one.
	p.Indexes = c.Indexes()
	apply(t, c, p, put(pod("ns", "a", "zone=west", "app=x")))
	got = indexState(t, c)
	if diff := cmp.Diff(map[string][]string{"west": {"ns/a", "ns/b"}}, got["zone"]); diff != "" {
		t.Errorf("zone after an update (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"x": {"ns/a"}}, got["app"]); diff != "" {
		t.Errorf("app after an update (-want +got):\n%s", diff)
	}
}

func TestCacheUnknownIndex(t *testing.T) {
	c, _ := newCache(t)
	if _, err := c.ByIndex("nope", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ByIndex: %v; want ErrNotFound", err)
	}
	if _, err := c.IndexKeys("nope", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("IndexKeys: %v; want ErrNotFound", err)
	}
	if _, err := c.Index("nope", pod("a", "b")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Index: %v; want ErrNotFound", err)
	}
	if _, err := c.Index("app", nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Index of nil: %v; want ErrInvalid", err)
	}
	if v := c.ListIndexFuncValues("nope"); v == nil || len(v) != 0 {
		t.Errorf("ListIndexFuncValues(unknown) = %#v; want empty, not nil, as client-go", v)
	}
	if diff := cmp.Diff([]string{}, c.ListIndexFuncValues("app"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ListIndexFuncValues of an empty cache: %s", diff)
	}
}
