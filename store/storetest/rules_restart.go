package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Restart/Survives", persistent: true, contract: "restart: objects, index entries and the resume point survive Close and Open", fn: testRestartSurvives},
	rule{name: "Restart/Empty", persistent: true, contract: "restart: a store closed without writes reopens empty with no resume point", fn: testRestartEmpty},
	rule{name: "Restart/AfterReplace", persistent: true, contract: "restart: objects dropped by Replace and deleted objects stay gone", fn: testRestartAfterReplace},
	rule{name: "Restart/Types", persistent: true, contract: "restart: unstructured objects (int64 numbers kept) and plain structs with a custom key function decode as stored", fn: testRestartTypes},
	rule{name: "Restart/UnusualKeysAndLarge", persistent: true, contract: "restart: unusual keys and index values, and 1 MiB objects survive", fn: testRestartUnusual},
	rule{name: "Restart/IndexSetChange", persistent: true, contract: "restart: reopening with another index set rebuilds the indexes (new ones queryable, removed ones gone) and keeps objects and resume point", fn: testRestartIndexSetChange},
	rule{name: "Restart/IndexFuncChange", persistent: true, contract: "restart: reopening with an index function that computes something else under the same name serves, and keeps, the new function's values (invariant 7)", fn: testRestartIndexFuncChange},
	rule{name: "Restart/KeyFuncChange", persistent: true, contract: "restart: reopening with a key function that computes other keys under the same KeyFuncName gives an empty store with no resume point and Info().Reset saying why, never objects under keys the function does not compute", fn: testRestartKeyFuncChange},
	rule{name: "Restart/Incompatible", persistent: true, contract: "restart: reopening with another codec, object type or key function fails with ErrIncompatible and destroys nothing", fn: testRestartIncompatible},
	rule{name: "Restart/ScopeChange", persistent: true, contract: "restart: reopening with another Scope gives an empty store with no resume point and Info().Reset saying why", fn: testRestartScopeChange},
	rule{name: "Restart/TwoNames", persistent: true, contract: "database: two stores with different Names in one database are independent, each with its own resume point", fn: testRestartTwoNames},
	rule{name: "Restart/DiskSize", persistent: true, contract: "store.DiskSizer: persistent backends tell the bytes their database takes on disk, at least those of the objects stored", fn: testDiskSize},
	rule{name: "Restart/InUse", persistent: true, contract: "database: opening the same Name twice in one process fails with ErrInUse; it opens again after Close", fn: testRestartInUse},
	rule{name: "Restart/ConcurrentOpens", persistent: true, contract: "database: stores of one database opened, written and closed concurrently, as a factory's informers start and stop (run with -race), each reopen with their last commit; a name held open is refused with ErrInUse throughout; raw listings running meanwhile succeed", fn: testRestartConcurrentOpens},
	rule{name: "Restart/AfterAddIndexers", persistent: true, contract: "restart: indexes added with AddIndexers and maintained by later writes are right after a restart that keeps them, and gone after one that does not", fn: testRestartAfterAddIndexers},
	rule{name: "Restart/OpaqueResumePoint", persistent: true, contract: "restart: the resume point is kept byte for byte, whatever its content", fn: testRestartOpaqueRV},
	rule{name: "Restart/LargeBatch", persistent: true, contract: "restart: a large Replace and a large Commit survive", fn: testRestartLargeBatch},
)

// reopen closes s and opens the store again at u with opts.
func (h *harness) reopen(t *testing.T, s store.Store, u string, opts *store.Options) store.Store {
	t.Helper()
	closeStore(t, s)
	return h.open(t, u, opts)
}

func testRestartSurvives(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	objs := seed(t, s)
	d := newPod("ns", "d", "6", "app=db", "tier=back")
	mustOK(t, "Add", s.Add(d))
	mustOK(t, "Update", s.Update(newPod("ns", "a", "7", "app=api")))
	mustOK(t, "Delete", s.Delete(objs[2]))
	s.Bookmark("8")
	before := contents(t, s)
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkDiff(t, before, contents(t, s), "objects after restart")
	checkRV(t, s, "8")
	checkReset(t, s, false, "after a plain restart")
	for _, tc := range []struct {
		index, value string
		want         []string
	}{
		{idxApp, "db", []string{"ns/b", "ns/d"}},
		{idxApp, "api", []string{"ns/a"}},
		{idxApp, "web", nil},
		{idxLabels, "tier=back", []string{"ns/d"}},
		{idxNamespace, "ns", []string{"ns/a", "ns/b", "ns/d"}},
	} {
		checkDiff(t, tc.want, indexKeys(t, s, tc.index, tc.value), "IndexKeys(%q, %q) after restart", tc.index, tc.value)
	}
	CheckIndexes(t, s)
	// The reopened store takes writes that survive the next restart too.
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "9", Ops: []store.Op{{Type: store.OpDelete, Key: "ns/b"}}}))
	before = contents(t, s)
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkDiff(t, before, contents(t, s), "objects after the second restart")
	checkRV(t, s, "9")
	CheckIndexes(t, s)
}

func testRestartEmpty(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkContents(t, s, map[string]string{})
	checkRV(t, s, "")
	CheckIndexes(t, s)
}

func testRestartAfterReplace(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	seed(t, s)
	x, y := newPod("ns", "x", "20", "app=x"), newPod("ns", "b", "21", "app=y")
	mustOK(t, "Replace", s.Replace([]interface{}{x, y}, "22"))
	mustOK(t, "Delete", s.Delete(x))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkContents(t, s, want(t, y))
	checkRV(t, s, "22")
	CheckIndexes(t, s)
}

func testRestartTypes(t *testing.T, h *harness) {
	t.Run("unstructured", func(t *testing.T) {
		u := h.url(t)
		s := h.open(t, u, unstructuredOptions("widgets"))
		a := newUnstructured("ns", "a", "1", "web", 1<<53+1)
		mustOK(t, "Add", s.Add(a))
		s = h.reopen(t, s, u, unstructuredOptions("widgets"))
		checkContents(t, s, want(t, a))
		checkUnstructured(t, s, "ns/a", 1<<53+1)
		CheckIndexes(t, s)
	})
	t.Run("plain struct", func(t *testing.T) {
		u := h.url(t)
		s := h.open(t, u, widgetOptions(t, "widgets"))
		w := widget{Name: "w/1\x00", Size: -5, Tags: []string{"a", "b"}}
		mustOK(t, "Add", s.Add(w))
		s = h.reopen(t, s, u, widgetOptions(t, "widgets"))
		checkDiff(t, map[string]widget{w.Name: w}, widgetContents(t, s), "widgets after restart")
		CheckIndexes(t, s)
	})
}

func testRestartUnusual(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	var objs []interface{}
	for _, v := range unusualStrings() {
		objs = append(objs, newPod("ns", v, "1", "app="+v), newPod(v, "n", "1", "app="+v), newPod("", v, "1"))
	}
	big := newPod("ns", "big", "1", "app=big")
	big.Annotations = map[string]string{"payload": strings.Repeat("z", 1<<20)}
	objs = append(objs, big)
	for _, o := range objs {
		mustOK(t, "Add", s.Add(o))
	}
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkContents(t, s, want(t, objs...))
	CheckIndexes(t, s)
}

// zonedPods opens a fresh database with three Pods labelled with an app and
// a zone committed at resourceVersion 3, and returns its URL, the store and
// its contents.
func (h *harness) zonedPods(t *testing.T) (string, store.Store, map[string]string) {
	t.Helper()
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "3", Ops: []store.Op{
		{Type: store.OpPut, Object: newPod("ns", "a", "1", "app=web", "zone=east")},
		{Type: store.OpPut, Object: newPod("ns", "b", "2", "app=db", "zone=west")},
		{Type: store.OpPut, Object: newPod("ns", "c", "3", "zone=east")},
	}}))
	return u, s, contents(t, s)
}

func testRestartIndexSetChange(t *testing.T, h *harness) {
	u, s, before := h.zonedPods(t)

	changed := podOptions(t, "pods")
	delete(changed.Indexers, idxApp)
	changed.Indexers["zone"] = labelIndex("zone")
	s = h.reopen(t, s, u, changed)
	checkDiff(t, before, contents(t, s), "objects after an index set change")
	checkRV(t, s, "3")
	checkReset(t, s, false, "after an index set change")
	checkDiff(t, []string{"ns/a", "ns/c"}, indexKeys(t, s, "zone", "east"), "IndexKeys(zone, east) of the new index")
	if _, err := s.ByIndex(idxApp, "web"); err == nil {
		t.Error("the removed index app is still queryable")
	}
	checkDiff(t, []string{idxGuard, idxLabels, idxNamespace, "zone"}, s.Info().Indexes, "Info().Indexes")
	CheckIndexes(t, s)
	// Writes under the new set, then back to the old set: the old index is
	// rebuilt from the objects as they are now.
	mustOK(t, "Update", s.Update(newPod("ns", "c", "4", "app=web", "zone=west")))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkDiff(t, []string{"ns/a", "ns/c"}, indexKeys(t, s, idxApp, "web"), "IndexKeys(app, web) after switching back")
	if _, err := s.ByIndex("zone", "east"); err == nil {
		t.Error("the removed index zone is still queryable")
	}
	CheckIndexes(t, s)
}

// testRestartIndexFuncChange reopens a store with the app index computing
// the zone label instead, as a controller upgrade that fixes an index
// function, keeping its name, does.
func testRestartIndexFuncChange(t *testing.T, h *harness) {
	u, s, before := h.zonedPods(t)

	changed := podOptions(t, "pods")
	changed.Indexers[idxApp] = labelIndex("zone")
	s = h.reopen(t, s, u, changed)
	checkDiff(t, before, contents(t, s), "objects after an index function change")
	checkRV(t, s, "3")
	checkDiff(t, []string{"ns/a", "ns/c"}, indexKeys(t, s, idxApp, "east"), "IndexKeys(app, east) under the new function")
	checkDiff(t, none, indexKeys(t, s, idxApp, "web"), "IndexKeys(app, web), values of the old function")
	CheckIndexes(t, s)
	// Writes after the change move the new values, and a restart keeps
	// them.
	mustOK(t, "Update", s.Update(newPod("ns", "a", "4", "app=web", "zone=west")))
	mustOK(t, "Delete", s.Delete(newPod("ns", "c", "", "")))
	s = h.reopen(t, s, u, changed)
	checkDiff(t, []string{"ns/a", "ns/b"}, indexKeys(t, s, idxApp, "west"), "IndexKeys(app, west) after writes and a restart")
	checkDiff(t, none, indexKeys(t, s, idxApp, "east"), "IndexKeys(app, east) after writes and a restart")
	CheckIndexes(t, s)
}

// testRestartKeyFuncChange: objects kept under keys the key function no
// longer gives would be missed by the watch's updates and deletes, and stay
// for ever beside their new copies.
func testRestartKeyFuncChange(t *testing.T, h *harness) {
	u := h.url(t)
	byName := func(obj interface{}) (string, error) {
		return "name:" + obj.(*corev1.Pod).Name, nil
	}
	opts := func(kf cache.KeyFunc) *store.Options {
		o := podOptions(t, "pods")
		o.KeyFunc, o.KeyFuncName = kf, "storetest-pod-key"
		return o
	}
	s := h.open(t, u, opts(byName))
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "3", Ops: []store.Op{
		{Type: store.OpPut, Object: newPod("ns", "a", "1", "app=web")},
		{Type: store.OpPut, Object: newPod("ns", "b", "2", "app=db")},
	}}))
	if _, ok, _ := s.GetByKey("name:a"); !ok {
		t.Fatal("the custom key function's key name:a does not find its object")
	}
	byUID := func(obj interface{}) (string, error) {
		return "uid:" + obj.(*corev1.Pod).Namespace + "." + obj.(*corev1.Pod).Name, nil
	}
	s = h.reopen(t, s, u, opts(byUID))
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Errorf("reopened with a key function that computes other keys, the store holds %q; want it empty", keys)
	}
	checkRV(t, s, "")
	checkReset(t, s, true, "after a key function change")
	// Under the new function the store works as a new one.
	mustOK(t, "Add", s.Add(newPod("ns", "a", "4", "app=web")))
	s = h.reopen(t, s, u, opts(byUID))
	checkDiff(t, []string{"uid:ns.a"}, s.ListKeys(), "keys after a write and a restart under the new function")
	checkReset(t, s, false, "after a restart under the same function")
	CheckIndexes(t, s)
}

func testRestartIncompatible(t *testing.T, h *harness) {
	jsonPod, err := indexer.NewJSONCodec(&corev1.Pod{})
	mustOK(t, "NewJSONCodec", err)
	protoCM, err := indexer.NewCodec(&corev1.ConfigMap{})
	mustOK(t, "NewCodec(ConfigMap)", err)
	for _, tc := range []struct {
		name   string
		modify func(o *store.Options)
		says   string // the error names what differs
	}{
		{"codec", func(o *store.Options) { o.Codec = jsonPod }, "codec"},
		{"object type", func(o *store.Options) { o.Codec = protoCM }, "type"},
		{"key function", func(o *store.Options) {
			o.KeyFunc, o.KeyFuncName = cache.MetaNamespaceKeyFunc, "storetest-other-keys"
		}, "key function"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := h.url(t)
			s := h.open(t, u, podOptions(t, "pods"))
			objs := seed(t, s)
			closeStore(t, s)
			o := podOptions(t, "pods")
			tc.modify(o)
			openFails(t, "reopen with another "+tc.name, u, o, store.ErrIncompatible, tc.says)
			h.checkSeeded(t, u, objs)
		})
	}
}

func testRestartScopeChange(t *testing.T, h *harness) {
	u := h.url(t)
	o := podOptions(t, "pods")
	o.Scope = "cluster-a/pods"
	s := h.open(t, u, o)
	seed(t, s)
	o2 := podOptions(t, "pods")
	o2.Scope = "cluster-b/pods"
	s = h.reopen(t, s, u, o2)
	checkContents(t, s, map[string]string{})
	checkRV(t, s, "")
	checkReset(t, s, true, "after a scope change")
	if got := s.Info().Scope; got != o2.Scope {
		t.Errorf("Info().Scope = %q; want %q", got, o2.Scope)
	}
	checkNoIndexValues(t, s, "of a reset store")
	p := newPod("ns", "new", "100", "app=b")
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "100", Ops: []store.Op{{Type: store.OpPut, Object: p}}}))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	// Reopened with the empty scope of podOptions: a scope change again.
	checkContents(t, s, map[string]string{})
	s = h.reopen(t, s, u, o2)
	checkRV(t, s, "")
	o3 := podOptions(t, "pods")
	o3.Scope = "cluster-b/pods"
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "101", Ops: []store.Op{{Type: store.OpPut, Object: p}}}))
	s = h.reopen(t, s, u, o3)
	checkContents(t, s, want(t, p))
	checkRV(t, s, "101")
	checkReset(t, s, false, "after reopening with the same scope")
}

func testRestartTwoNames(t *testing.T, h *harness) {
	u := h.url(t)
	a := h.open(t, u, podOptions(t, "v1/pods@a"))
	b := h.open(t, u, widgetOptions(t, "widgets b"))
	pa := newPod("ns", "a", "1", "app=web")
	wb := widget{Name: "ns/a", Size: 2, Tags: []string{"web"}}
	mustOK(t, "Commit a", a.Commit(t.Context(), store.Batch{ResourceVersion: "10", Ops: []store.Op{{Type: store.OpPut, Object: pa}}}))
	mustOK(t, "Commit b", b.Commit(t.Context(), store.Batch{ResourceVersion: "20", Ops: []store.Op{{Type: store.OpPut, Object: wb}}}))
	mustOK(t, "Delete in a", a.Delete(pa))
	mustOK(t, "Add in a", a.Add(newPod("ns", "other", "2")))
	check := func(t *testing.T, a, b store.Store) {
		t.Helper()
		checkContents(t, a, want(t, newPod("ns", "other", "2")))
		checkRV(t, a, "10")
		checkDiff(t, map[string]widget{wb.Name: wb}, widgetContents(t, b), "store b")
		checkRV(t, b, "20")
		checkDiff(t, []string{"ns/a"}, indexKeys(t, b, "tags", "web"), "IndexKeys(tags, web) of b")
		CheckIndexes(t, a)
		CheckIndexes(t, b)
	}
	check(t, a, b)
	closeStore(t, a)
	closeStore(t, b)
	b = h.open(t, u, widgetOptions(t, "widgets b"))
	a = h.open(t, u, podOptions(t, "v1/pods@a"))
	check(t, a, b)
	// A third name is a new, empty store.
	c := h.open(t, u, podOptions(t, "c"))
	checkContents(t, c, map[string]string{})
	checkRV(t, c, "")
}

func testRestartInUse(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1")))
	openFails(t, "second Open of the same name", u, podOptions(t, "pods"), store.ErrInUse)
	// The first store is unaffected.
	checkContents(t, s, want(t, newPod("ns", "a", "1")))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkContents(t, s, want(t, newPod("ns", "a", "1")))
}

func testDiskSize(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	ds, ok := s.(store.DiskSizer)
	if !ok {
		t.Fatalf("%T does not implement store.DiskSizer", s)
	}
	if _, err := ds.DiskSize(); err != nil {
		t.Fatalf("DiskSize of a new store: %v", err)
	}
	const n, size = 200, 8 << 10
	mustOK(t, "Replace", s.Replace(bigPods("d", n, size), "10"))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	got, err := s.(store.DiskSizer).DiskSize()
	if err != nil {
		t.Fatalf("DiskSize after a restart: %v", err)
	}
	t.Logf("DiskSize %d bytes for %d objects of %d bytes", got, n, size)
	if got < n*size/2 {
		t.Errorf("DiskSize = %d bytes for %d objects of %d bytes each, want at least %d", got, n, size, n*size/2)
	}
	// What the files take, not their sizes: bbolt and badger grow files
	// ahead of use.
	if limit := int64(8 * n * size); got > limit {
		t.Errorf("DiskSize = %d bytes for %d objects of %d bytes each, want at most %d", got, n, size, limit)
	}
}

func testRestartAfterAddIndexers(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1", "zone=east")))
	mustOK(t, "Add", s.Add(newPod("ns", "b", "1", "zone=west")))
	mustOK(t, "AddIndexers", s.AddIndexers(cache.Indexers{"zone": labelIndex("zone")}))
	mustOK(t, "Update", s.Update(newPod("ns", "a", "2", "zone=west")))
	mustOK(t, "Add", s.Add(newPod("ns", "c", "3", "zone=north")))
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "3"}))

	withZone := podOptions(t, "pods")
	withZone.Indexers["zone"] = labelIndex("zone")
	s = h.reopen(t, s, u, withZone)
	checkDiff(t, []string{"ns/a", "ns/b"}, indexKeys(t, s, "zone", "west"), "IndexKeys(zone, west) after restart")
	checkDiff(t, []string{"north", "west"}, sortedValues(s, "zone"), "ListIndexFuncValues(zone) after restart")
	checkRV(t, s, "3")
	CheckIndexes(t, s)

	s = h.reopen(t, s, u, podOptions(t, "pods"))
	if _, err := s.IndexKeys("zone", "west"); err == nil {
		t.Error("the index dropped from the options is still queryable after restart")
	}
	checkRV(t, s, "3")
	CheckIndexes(t, s)
}

func testRestartOpaqueRV(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	rv := "é/\x00" + strings.Repeat("9", 1000)
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: rv}))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkRV(t, s, rv)
}

func testRestartLargeBatch(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	list := bigPods("r", 1500, 8<<10)
	mustOK(t, "Replace", s.Replace(list, "100"))
	more := bigPods("c", 1500, 8<<10)
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: puts(more...), ResourceVersion: "101"}))
	mustOK(t, "Replace", s.Replace(more[:500], "102"))
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkVersions(t, s, more[:500]...)
	checkRV(t, s, "102")
	CheckIndexes(t, s)
}

func testRestartConcurrentOpens(t *testing.T, h *harness) {
	u := h.url(t)
	held := h.open(t, u, podOptions(t, "held"))
	mustOK(t, "Add", held.Add(newPod("ns", "held", "1")))
	// Reopened, the database is on disk before the raw listings start
	// (the memory backend writes its file when its stores close).
	held = h.reopen(t, held, u, podOptions(t, "held"))
	const stores, rounds = 4, 5
	// Options are made here: podOptions may fail the test, which only the
	// test's goroutine may do.
	opts := make([][]*store.Options, stores)
	for i := range opts {
		for range rounds + 1 {
			opts[i] = append(opts[i], podOptions(t, fmt.Sprintf("s%d", i)))
		}
	}
	heldOpts := make([]*store.Options, stores*rounds)
	for i := range heldOpts {
		heldOpts[i] = podOptions(t, "held")
	}

	// round opens store i, checks it holds round r-1's commit, commits
	// round r's and closes it, after an Open of the held name fails.
	round := func(i, r int) error {
		name := fmt.Sprintf("s%d", i)
		s, err := store.Open(t.Context(), u, opts[i][r])
		if err != nil {
			return err
		}
		defer s.Close()
		obj, ok, err := s.GetByKey("ns/" + name)
		switch {
		case err != nil:
			return err
		case r == 0 && ok:
			return fmt.Errorf("a new store holds %s", name)
		case r > 0 && (!ok || obj.(*corev1.Pod).ResourceVersion != fmt.Sprint(r-1)):
			return fmt.Errorf("reopened without its last commit (found %v: %v)", ok, obj)
		case r > 0 && s.ResourceVersion() != fmt.Sprint(r-1):
			return fmt.Errorf("reopened with resume point %q; want %d", s.ResourceVersion(), r-1)
		}
		switch s2, err := store.Open(t.Context(), u, heldOpts[i*rounds+r]); {
		case err == nil:
			s2.Close()
			return errors.New("a second open of the held store succeeded; want ErrInUse")
		case !errors.Is(err, store.ErrInUse):
			return fmt.Errorf("a second open of the held store: %w; want ErrInUse", err)
		}
		if err := s.Commit(t.Context(), store.Batch{ResourceVersion: fmt.Sprint(r), Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", name, fmt.Sprint(r))}}}); err != nil {
			return err
		}
		return s.Close()
	}

	errs := make(chan error, stores+1)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			for r := range rounds {
				if err := round(i, r); err != nil {
					errs <- fmt.Errorf("store s%d, round %d: %w", i, r, err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var lister sync.WaitGroup
	lister.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := store.ListStores(t.Context(), u); err != nil {
				errs <- fmt.Errorf("ListStores: %w", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	close(stop)
	lister.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for i := range stores {
		name := fmt.Sprintf("s%d", i)
		s := h.open(t, u, opts[i][rounds])
		checkContents(t, s, want(t, newPod("ns", name, fmt.Sprint(rounds-1))))
		checkRV(t, s, fmt.Sprint(rounds-1))
	}
	checkContents(t, held, want(t, newPod("ns", "held", "1")))
}
