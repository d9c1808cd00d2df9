package memdb_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/memdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tagsIndexFunc is a multi-value index: the comma-separated "tags" label,
// repeats included, as a user's index function may return them.
func tagsIndexFunc(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	v, ok := m.GetLabels()["tags"]
	if !ok {
		return nil, nil
	}
	return strings.Split(v, ","), nil
}

func labelIndexFunc(label string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if v, ok := m.GetLabels()[label]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}

func testIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"tags":               tagsIndexFunc,
		"app":                labelIndexFunc("app"),
	}
}

func open(t *testing.T, indexers cache.Indexers) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), "memdb://", &store.Options{Indexers: indexers})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func keyOf(t testing.TB, obj interface{}) string {
	t.Helper()
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Fatalf("key of %T: %v", obj, err)
	}
	return k
}

func sortedKeys(t testing.TB, objs []interface{}) []string {
	t.Helper()
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, keyOf(t, o))
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// compareWithClientGo checks that got answers every read as want, client-go's
// indexer with the same contents, does. probes are objects passed to Index.
func compareWithClientGo(t *testing.T, got store.Store, want cache.Indexer, probes []interface{}) {
	t.Helper()
	if diff := cmp.Diff(sorted(want.ListKeys()), sorted(got.ListKeys())); diff != "" {
		t.Errorf("ListKeys (-client-go +memdb):\n%s", diff)
	}
	if diff := cmp.Diff(sortedKeys(t, want.List()), sortedKeys(t, got.List())); diff != "" {
		t.Errorf("List keys (-client-go +memdb):\n%s", diff)
	}
	checkCount(t, got)
	for _, k := range want.ListKeys() {
		wo, wok, _ := want.GetByKey(k)
		o, ok, err := got.GetByKey(k)
		if err != nil || ok != wok || o != wo {
			t.Errorf("GetByKey(%q) = %p, %v, %v; want %p, %v, nil (the stored object itself)", k, o, ok, err, wo, wok)
		}
	}
	for name := range want.GetIndexers() {
		wantVals := sorted(want.ListIndexFuncValues(name))
		gotVals := sorted(got.ListIndexFuncValues(name))
		if diff := cmp.Diff(wantVals, gotVals); diff != "" {
			t.Errorf("ListIndexFuncValues(%q) (-client-go +memdb):\n%s", name, diff)
		}
		for _, v := range append(wantVals, "no-such-value") {
			wk, _ := want.IndexKeys(name, v)
			gk, err := got.IndexKeys(name, v)
			if err != nil {
				t.Errorf("IndexKeys(%q, %q): %v", name, v, err)
			}
			if diff := cmp.Diff(wk, gk, cmpNilEmpty); diff != "" {
				t.Errorf("IndexKeys(%q, %q) (-client-go +memdb):\n%s", name, v, diff)
			}
			wb, _ := want.ByIndex(name, v)
			gb, err := got.ByIndex(name, v)
			if err != nil {
				t.Errorf("ByIndex(%q, %q): %v", name, v, err)
			}
			if diff := cmp.Diff(sortedKeys(t, wb), sortedKeys(t, gb)); diff != "" {
				t.Errorf("ByIndex(%q, %q) keys (-client-go +memdb):\n%s", name, v, diff)
			}
		}
		for _, p := range probes {
			wi, werr := want.Index(name, p)
			gi, err := got.Index(name, p)
			if (werr == nil) != (err == nil) {
				t.Errorf("Index(%q, %s) error = %v; client-go: %v", name, keyOf(t, p), err, werr)
			}
			if diff := cmp.Diff(sortedKeys(t, wi), sortedKeys(t, gi)); diff != "" {
				t.Errorf("Index(%q, %s) keys (-client-go +memdb):\n%s", name, keyOf(t, p), diff)
			}
		}
	}
}

// checkCount checks the object count the store records, which sizes List.
func checkCount(t *testing.T, s store.Store) {
	t.Helper()
	keys, _, _, count, ok := memdb.SnapshotForTest(s)
	if !ok || count != len(keys) {
		t.Errorf("recorded object count = %d (ok %v); the snapshot holds %d objects", count, ok, len(keys))
	}
}

var cmpNilEmpty = cmp.Transformer("nilEmpty", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

func TestClientGoSemantics(t *testing.T) {
	s := open(t, testIndexers())
	ref := cache.NewIndexer(cache.MetaNamespaceKeyFunc, testIndexers())
	a1 := newPod("ns1", "a", "1", "app=web", "tags=x,y,x")
	b1 := newPod("ns1", "b", "2", "app=db", "tags=y")
	c1 := newPod("ns2", "c", "3", "app=web")
	a2 := newPod("ns1", "a", "4", "app=web", "tags=z")
	b2 := newPod("ns1", "b", "5", "tags=y,y")
	d1 := newPod("", "d", "6", "tags=x,z")
	probes := []interface{}{
		newPod("ns1", "probe", "", "app=web", "tags=x,y"),
		newPod("ns3", "probe", "", "tags=z,z"),
		newPod("ns2", "probe", ""),
	}
	steps := []struct {
		name string
		do   func(i cache.Indexer) error
	}{
		{"add a", func(i cache.Indexer) error { return i.Add(a1) }},
		{"add b", func(i cache.Indexer) error { return i.Add(b1) }},
		{"add c", func(i cache.Indexer) error { return i.Add(c1) }},
		{"update a, tags change", func(i cache.Indexer) error { return i.Update(a2) }},
		{"update b, label removed, repeated tag", func(i cache.Indexer) error { return i.Update(b2) }},
		{"delete c", func(i cache.Indexer) error { return i.Delete(c1) }},
		{"delete absent", func(i cache.Indexer) error { return i.Delete(newPod("ns9", "absent", "")) }},
		{"add cluster-scoped", func(i cache.Indexer) error { return i.Add(d1) }},
		{"replace", func(i cache.Indexer) error { return i.Replace([]interface{}{b1, c1, d1}, "10") }},
		{"replace with empty", func(i cache.Indexer) error { return i.Replace(nil, "11") }},
		{"add after replace", func(i cache.Indexer) error { return i.Add(a1) }},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(ref); err != nil {
				t.Fatalf("client-go: %v", err)
			}
			if err := st.do(s); err != nil {
				t.Fatalf("memdb: %v", err)
			}
			compareWithClientGo(t, s, ref, probes)
		})
	}
}

// state is everything a read can observe, for "the store is unchanged".
type state struct {
	Keys    []string
	Entries map[string]map[string][]string
	RV      string
	Indexes []string
}

func stateOf(t *testing.T, s store.Store) state {
	t.Helper()
	st := state{Keys: sorted(s.ListKeys()), Entries: map[string]map[string][]string{}, RV: s.ResourceVersion(), Indexes: s.Info().Indexes}
	for name := range s.GetIndexers() {
		m := map[string][]string{}
		for _, v := range s.ListIndexFuncValues(name) {
			keys, err := s.IndexKeys(name, v)
			if err != nil {
				t.Fatalf("IndexKeys(%q, %q): %v", name, v, err)
			}
			m[v] = keys
		}
		st.Entries[name] = m
	}
	return st
}

func TestBadInputLeavesStoreUnchanged(t *testing.T) {
	failing := func(obj interface{}) ([]string, error) {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == "bad" {
			return nil, errors.New("no index for bad")
		}
		return nil, nil
	}
	panicking := func(obj interface{}) ([]string, error) {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == "boom" {
			panic("index function bug")
		}
		return nil, nil
	}
	var typedNil *corev1.Pod
	cases := []struct {
		name    string
		write   func(s store.Store) error
		wantMsg string
	}{
		{"add nil", func(s store.Store) error { return s.Add(nil) }, "store: add: nil object"},
		{"add typed nil", func(s store.Store) error { return s.Add(typedNil) }, "store: add: nil object"},
		{"update non-object", func(s store.Store) error { return s.Update("not an object") }, "store: update string: key function"},
		{"add tombstone", func(s store.Store) error {
			return s.Add(cache.DeletedFinalStateUnknown{Key: "ns1/a", Obj: newPod("ns1", "a", "")})
		}, "store: add: cannot store"},
		{"add index function error", func(s store.Store) error { return s.Add(newPod("ns1", "bad", "")) }, `store: add ns1/bad: indexer: index "failing"`},
		{"add index function panic", func(s store.Store) error { return s.Add(newPod("ns1", "boom", "")) }, `store: add ns1/boom: indexer: index "panicking"`},
		{"delete nil", func(s store.Store) error { return s.Delete(nil) }, "store: delete: delete needs an object or a key"},
		{"replace with one bad", func(s store.Store) error {
			return s.Replace([]interface{}{newPod("ns1", "new", ""), newPod("ns1", "bad", "")}, "99")
		}, `store: replace ns1/bad`},
		{"commit with one bad", func(s store.Store) error {
			return s.Commit(t.Context(), store.Batch{ResourceVersion: "99", Ops: []store.Op{
				{Type: store.OpDelete, Object: newPod("ns1", "a", "")},
				{Type: store.OpPut, Object: newPod("ns1", "new", "")},
				{Type: store.OpPut, Object: nil},
			}})
		}, "store: commit: nil object"},
		{"commit unknown op", func(s store.Store) error {
			return s.Commit(t.Context(), store.Batch{ResourceVersion: "99", Ops: []store.Op{{Type: 42, Object: newPod("ns1", "a", "")}}})
		}, "store: commit: unknown op type 42"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := testIndexers()
			ix["failing"] = failing
			ix["panicking"] = panicking
			s := open(t, ix)
			if err := s.Replace([]interface{}{newPod("ns1", "a", "1", "app=web", "tags=x,y"), newPod("ns2", "b", "2", "tags=y")}, "7"); err != nil {
				t.Fatalf("Replace: %v", err)
			}
			before := stateOf(t, s)
			err := tc.write(s)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("error = %v; want one wrapping store.ErrInvalid", err)
			}
			if !strings.HasPrefix(err.Error(), tc.wantMsg) {
				t.Errorf("error = %q; want it to start with %q", err, tc.wantMsg)
			}
			if diff := cmp.Diff(before, stateOf(t, s)); diff != "" {
				t.Errorf("store changed by a failed write (-before +after):\n%s", diff)
			}
		})
	}
}

func TestGetBadInput(t *testing.T) {
	s := open(t, nil)
	var typedNil *corev1.Pod
	for _, obj := range []interface{}{nil, typedNil, 42} {
		_, _, err := s.Get(obj)
		if !errors.Is(err, store.ErrInvalid) || !strings.HasPrefix(err.Error(), "store: get") {
			t.Errorf("Get(%#v) error = %v; want store: get ...: ErrInvalid", obj, err)
		}
	}
}

func TestUnknownIndex(t *testing.T) {
	s := open(t, testIndexers())
	if err := s.Add(newPod("ns1", "a", "1", "app=web")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ByIndex("nope", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ByIndex of unknown index: error = %v; want ErrNotFound", err)
	}
	if _, err := s.IndexKeys("nope", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("IndexKeys of unknown index: error = %v; want ErrNotFound", err)
	}
	if _, err := s.Index("nope", newPod("ns1", "a", "")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Index of unknown index: error = %v; want ErrNotFound", err)
	}
	if got := s.ListIndexFuncValues("nope"); got == nil || len(got) != 0 {
		t.Errorf("ListIndexFuncValues of unknown index = %#v; want empty, not nil, as client-go", got)
	}
	if _, err := s.Index("app", nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Index with nil object: error = %v; want ErrInvalid", err)
	}
	if _, err := s.Index("app", "not an object"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Index with a non-object: error = %v; want ErrInvalid", err)
	}
}

func TestAddIndexers(t *testing.T) {
	s := open(t, cache.Indexers{"app": labelIndexFunc("app")})
	ref := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"app": labelIndexFunc("app")})
	objs := []interface{}{
		newPod("ns1", "a", "1", "app=web", "tags=x,y,x"),
		newPod("ns1", "b", "2", "app=db", "tags=y"),
		newPod("ns2", "c", "3"),
	}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
		if err := ref.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(t.Context(), store.Batch{ResourceVersion: "5"}); err != nil {
		t.Fatal(err)
	}

	t.Run("failure leaves no trace", func(t *testing.T) {
		before := stateOf(t, s)
		err := s.AddIndexers(cache.Indexers{
			"tags": tagsIndexFunc,
			"bad": func(obj interface{}) ([]string, error) {
				if keyOf(t, obj) == "ns1/b" {
					return nil, errors.New("cannot index b")
				}
				return []string{"v"}, nil
			},
		})
		if !errors.Is(err, store.ErrInvalid) || !strings.HasPrefix(err.Error(), "store: add indexers: backfill") {
			t.Fatalf("AddIndexers with a failing function: error = %v; want store: add indexers: backfill ...: ErrInvalid", err)
		}
		if diff := cmp.Diff(before, stateOf(t, s)); diff != "" {
			t.Errorf("store changed (-before +after):\n%s", diff)
		}
		if got := s.ListIndexFuncValues("tags"); len(got) != 0 {
			t.Errorf("ListIndexFuncValues of the index that failed to be added = %q; want none", got)
		}
	})
	t.Run("backfill", func(t *testing.T) {
		more := cache.Indexers{"tags": tagsIndexFunc, cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		if err := s.AddIndexers(more); err != nil {
			t.Fatalf("AddIndexers: %v", err)
		}
		if err := ref.AddIndexers(more); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"app", "namespace", "tags"}, s.Info().Indexes); diff != "" {
			t.Errorf("Info().Indexes (-want +got):\n%s", diff)
		}
		if got := s.ResourceVersion(); got != "5" {
			t.Errorf("ResourceVersion after AddIndexers = %q; want 5 (unchanged)", got)
		}
		compareWithClientGo(t, s, ref, objs)
		// Writes after the index set changed keep every index right.
		upd := newPod("ns1", "a", "9", "app=db", "tags=z")
		for _, i := range []cache.Indexer{s, ref} {
			if err := i.Update(upd); err != nil {
				t.Fatal(err)
			}
			if err := i.Delete(objs[1]); err != nil {
				t.Fatal(err)
			}
		}
		compareWithClientGo(t, s, ref, objs)
	})
	t.Run("nothing to add", func(t *testing.T) {
		before := stateOf(t, s)
		if err := s.AddIndexers(cache.Indexers{}); err != nil {
			t.Errorf("AddIndexers of nothing: %v", err)
		}
		if err := s.AddIndexers(cache.Indexers{"nil function": nil}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("AddIndexers of a nil function: error = %v; want ErrInvalid", err)
		}
		if diff := cmp.Diff(before, stateOf(t, s)); diff != "" {
			t.Errorf("store changed (-before +after):\n%s", diff)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		before := stateOf(t, s)
		err := s.AddIndexers(cache.Indexers{"fresh": tagsIndexFunc, "app": labelIndexFunc("other")})
		if !errors.Is(err, store.ErrIndexExists) {
			t.Fatalf("AddIndexers with a taken name: error = %v; want ErrIndexExists", err)
		}
		if diff := cmp.Diff(before, stateOf(t, s)); diff != "" {
			t.Errorf("store changed (-before +after):\n%s", diff)
		}
	})
}

func TestResumePointAndReplace(t *testing.T) {
	s := open(t, testIndexers())
	ctx := t.Context()
	// wantSeen is LastStoreSyncResourceVersion, which moves as client-go's
	// (the storetest rule LastStoreSyncResourceVersion pins it for every
	// backend).
	step := func(name string, do func() error, wantRV, wantSeen string, wantKeys []string) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := s.ResourceVersion(); got != wantRV {
			t.Errorf("%s: ResourceVersion = %q; want %q", name, got, wantRV)
		}
		if got := s.LastStoreSyncResourceVersion(); got != wantSeen {
			t.Errorf("%s: LastStoreSyncResourceVersion = %q; want %q", name, got, wantSeen)
		}
		if diff := cmp.Diff(wantKeys, sorted(s.ListKeys()), cmpNilEmpty); diff != "" {
			t.Errorf("%s: keys (-want +got):\n%s", name, diff)
		}
		checkCount(t, s)
	}
	step("new", func() error { return nil }, "", "", nil)
	step("add", func() error { return s.Add(newPod("ns", "a", "3")) }, "", "3", []string{"ns/a"})
	step("commit", func() error {
		return s.Commit(ctx, store.Batch{ResourceVersion: "4", Ops: []store.Op{
			{Type: store.OpPut, Object: newPod("ns", "b", "4")},
			{Type: store.OpDelete, Key: "ns/absent"},
			{Type: store.OpDelete, Object: cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: newPod("ns", "a", "3")}},
		}})
	}, "4", "4", []string{"ns/b"})
	step("commit without rv", func() error {
		return s.Commit(ctx, store.Batch{Ops: []store.Op{{Type: store.OpPut, Key: "custom", Object: newPod("ns", "c", "5")}}})
	}, "4", "5", []string{"custom", "ns/b"})
	step("bookmark", func() error { s.Bookmark("8"); return nil }, "8", "8", []string{"custom", "ns/b"})
	step("replace", func() error {
		return s.Replace([]interface{}{newPod("ns", "x", "9"), newPod("ns", "b", "9")}, "9")
	}, "9", "9", []string{"ns/b", "ns/x"})
	step("commit delete by key", func() error {
		return s.Commit(ctx, store.Batch{ResourceVersion: "10", Ops: []store.Op{{Type: store.OpDelete, Key: "ns/x"}}})
	}, "10", "10", []string{"ns/b"})

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(canceled, store.Batch{ResourceVersion: "11", Ops: []store.Op{{Type: store.OpDelete, Key: "ns/b"}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a canceled context: error = %v; want context.Canceled", err)
	}
	if got := s.ResourceVersion(); got != "10" {
		t.Errorf("ResourceVersion after a canceled Commit = %q; want 10", got)
	}
	info := s.Info()
	if info.Backend != "memdb" || info.Name != store.DefaultName || info.ResourceVersion != "10" || info.FormatVersion != memdb.FormatVersion {
		t.Errorf("Info() = %+v; want backend memdb, name %q, resourceVersion 10, format %d", info, store.DefaultName, memdb.FormatVersion)
	}
}

func TestClosed(t *testing.T) {
	s, err := memdb.New(&store.Options{Indexers: testIndexers()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(newPod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	errs := map[string]error{
		"Add":         s.Add(newPod("ns", "b", "1")),
		"Update":      s.Update(newPod("ns", "a", "2")),
		"Delete":      s.Delete(newPod("ns", "a", "")),
		"Replace":     s.Replace(nil, "5"),
		"Commit":      s.Commit(t.Context(), store.Batch{ResourceVersion: "5"}),
		"AddIndexers": s.AddIndexers(cache.Indexers{"x": tagsIndexFunc}),
		"Resync":      s.Resync(),
	}
	_, _, errs["GetByKey"] = s.GetByKey("ns/a")
	_, _, errs["Get"] = s.Get(newPod("ns", "a", ""))
	_, errs["ByIndex"] = s.ByIndex("app", "web")
	_, errs["IndexKeys"] = s.IndexKeys("app", "web")
	_, errs["Index"] = s.Index("app", newPod("ns", "a", ""))
	for name, err := range errs {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: error = %v; want ErrClosed", name, err)
		}
	}
	s.Bookmark("6") // must not panic
	if got := s.List(); got != nil {
		t.Errorf("List after Close = %v; want nil", got)
	}
	if got := s.ListKeys(); got != nil {
		t.Errorf("ListKeys after Close = %v; want nil", got)
	}
	if got := s.ListIndexFuncValues("app"); got != nil {
		t.Errorf("ListIndexFuncValues after Close = %v; want nil", got)
	}
	if got := s.ResourceVersion(); got != "" {
		t.Errorf("ResourceVersion after Close = %q; want empty", got)
	}
}

func TestOpenURL(t *testing.T) {
	cases := []struct {
		url     string
		wantErr error
	}{
		{"memdb://", nil},
		{"memdb:///", nil},
		{"memdb://?durability=sync", store.ErrInvalid},
		{"memdb://?bogus=1", store.ErrInvalid},
		{"memdb://somehost", store.ErrInvalid},
		{"memdb:///var/lib/x.snap", store.ErrInvalid}, // no codec
		{"memdb://?snapshot_interval=1s", store.ErrInvalid},
		{"memdb://?lock_timeout=1s", store.ErrInvalid},
		{"memdb:///tmp/x.snap?lock_timeout=soon", store.ErrInvalid},
		{"memdb:///tmp/x.snap?snapshot_interval=-1s", store.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			s, err := store.Open(t.Context(), tc.url, nil)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open(%q) error = %v; want %v", tc.url, err, tc.wantErr)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "store: open ") || !strings.Contains(err.Error(), "memdb://") {
					t.Errorf("error %q does not name the operation and URL", err)
				}
				return
			}
			defer s.Close()
			if got := s.Info().Backend; got != memdb.Scheme {
				t.Errorf("Info().Backend = %q; want %q", got, memdb.Scheme)
			}
			// Without a file nothing is on disk: no size to report.
			if _, err := s.(store.DiskSizer).DiskSize(); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("DiskSize of a store without a file: error = %v; want ErrInvalid", err)
			}
		})
	}
	if _, err := memdb.New(&store.Options{KeyFunc: cache.MetaNamespaceKeyFunc}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("New with a KeyFunc and no KeyFuncName: error = %v; want ErrInvalid", err)
	}
	if _, err := memdb.New(&store.Options{Indexers: cache.Indexers{"x": nil}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("New with a nil index function: error = %v; want ErrInvalid", err)
	}
}

// TestUnusualIndexValues checks values and keys that would break a naive
// encoding of (index, value, key): separators, prefixes of each other,
// empty strings.
func TestUnusualIndexValues(t *testing.T) {
	valuesIndex := func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return strings.Split(m.GetAnnotations()["vals"], "|"), nil
	}
	ix := cache.Indexers{"v": valuesIndex, "v\x00": valuesIndex}
	s := open(t, ix)
	ref := cache.NewIndexer(cache.MetaNamespaceKeyFunc, ix)
	mk := func(ns, name, vals string) *corev1.Pod {
		p := newPod(ns, name, "1")
		p.Annotations = map[string]string{"vals": vals}
		return p
	}
	objs := []interface{}{
		mk("a", "b", "x|x\x00|"),
		mk("a\x00", "b", "x\x00y|\x01"),
		mk("a", "b\x00", "xy|x"),
		mk("", "a", "\x00|"),
	}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
		if err := ref.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	compareWithClientGo(t, s, ref, objs)
	for _, i := range []cache.Indexer{s, ref} {
		if err := i.Delete(objs[0]); err != nil {
			t.Fatal(err)
		}
	}
	compareWithClientGo(t, s, ref, objs[1:])
}

func TestExport(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memdb.New(&store.Options{Name: "pods", Codec: codec, Indexers: cache.Indexers{"tags": tagsIndexFunc}})
	if err != nil {
		t.Fatal(err)
	}
	objs := []*corev1.Pod{newPod("ns", "a", "1", "tags=x,y"), newPod("ns", "b", "2")}
	if err := s.Replace([]interface{}{objs[0], objs[1]}, "2"); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Key    string
		Name   string
		Values [][]string
	}
	var got []rec
	info, err := s.(store.Exporter).Export(t.Context(), func(r store.Record) error {
		obj, err := codec.Decode(r.Data)
		if err != nil {
			return err
		}
		got = append(got, rec{r.Key, obj.(*corev1.Pod).Name, r.Values})
		return nil
	})
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	want := []rec{{"ns/a", "a", [][]string{{"x", "y"}}}, {"ns/b", "b", [][]string{nil}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exported records (-want +got):\n%s", diff)
	}
	if info.ResourceVersion != "2" || info.Name != "pods" || info.Codec != "protobuf" || !cmp.Equal(info.Indexes, []string{"tags"}) {
		t.Errorf("Export info = %+v; want name pods, codec protobuf, resourceVersion 2, indexes [tags]", info)
	}
	stop := errors.New("stop")
	if _, err := s.(store.Exporter).Export(t.Context(), func(store.Record) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Export whose callback fails: error = %v; want the callback's", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.(store.Exporter).Export(t.Context(), func(store.Record) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Export after Close: error = %v; want ErrClosed", err)
	}

	noCodec := open(t, nil)
	if _, err := noCodec.(store.Exporter).Export(t.Context(), func(store.Record) error { return nil }); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Export without a codec: error = %v; want ErrInvalid", err)
	}
}
