package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Store/AddGetUpdateDelete", contract: "cache.Store: Add stores, Get/GetByKey return the stored object, Update replaces it, Delete removes it (deleting an absent object is not an error)", fn: testAddGetUpdateDelete},
	rule{name: "Store/ListAndListKeys", contract: "cache.Store: List and ListKeys return exactly the stored objects and keys (an empty store: empty, non-nil lists, as client-go's)", fn: testListAndListKeys},
	rule{name: "Store/DeleteTombstone", contract: "cache.Store: Delete accepts a cache.DeletedFinalStateUnknown and removes the object under its key", fn: testDeleteTombstone},
	rule{name: "Store/Replace", contract: "cache.Store: Replace makes the contents exactly the list, rebuilds the indexes, and sets ResourceVersion to the list RV (an empty RV leaves it unchanged)", fn: testReplace},
	rule{name: "Store/ReplaceDuplicateKeys", contract: "cache.Store: Replace with several objects under one key keeps the last, with only its index entries", fn: testReplaceDuplicates},
	rule{name: "Indexer/MultiValue", contract: "cache.Indexer: an object with several values of one index is found under each value", fn: testMultiValue},
	rule{name: "Indexer/DuplicateAndEmptyValues", contract: "cache.Indexer: an index function returning a value twice indexes the object once; the empty string is a value like any other", fn: testDuplicateValues},
	rule{name: "Indexer/DeleteRemovesEntries", contract: "cache.Indexer: deleting an object removes its index entries, and value sets left empty disappear from ListIndexFuncValues", fn: testDeleteRemovesEntries},
	rule{name: "Indexer/UpdateMovesEntries", contract: "cache.Indexer: updating an object whose index values change moves it from the old values to the new ones", fn: testUpdateMovesEntries},
	rule{name: "Indexer/Index", contract: "cache.Indexer: Index(obj) returns the objects sharing an index value with obj", fn: testIndexOfObject},
	rule{name: "Indexer/UnknownIndex", contract: "cache.Indexer: ByIndex, IndexKeys and Index of an unknown index return an error; ListIndexFuncValues returns an empty, non-nil list, as client-go's", fn: testUnknownIndex},
	rule{name: "Indexer/AddIndexersBackfills", contract: "cache.Indexer: AddIndexers on a populated store indexes the existing objects, and later writes maintain the new index", fn: testAddIndexersBackfills},
	rule{name: "Indexer/AddIndexersNone", contract: "cache.Indexer: AddIndexers with no index (nil or empty) succeeds and changes nothing, without decoding a stored object", fn: testAddIndexersNone},
	rule{name: "Indexer/AddIndexersConflict", contract: "cache.Indexer: AddIndexers with an existing name returns ErrIndexExists saying \"indexer conflict\", as client-go's does, and changes nothing", fn: testAddIndexersConflict},
	rule{name: "Indexer/AddIndexersFailure", contract: "cache.Indexer: AddIndexers whose function fails on a stored object returns ErrInvalid and changes nothing", fn: testAddIndexersFailure},
	rule{name: "Indexer/GetIndexers", contract: "cache.Indexer: GetIndexers returns the indexes the store was opened with", fn: testGetIndexers},
)

func testAddGetUpdateDelete(t *testing.T, h *harness) {
	s := h.openPods(t)
	a := newPod("ns1", "a", "1", "app=web")
	mustOK(t, "Add", s.Add(a))

	got, ok, err := s.Get(newPod("ns1", "a", ""))
	if err != nil || !ok {
		t.Fatalf("Get(ns1/a) = _, %v, %v; want the stored pod", ok, err)
	}
	if g, w := fingerprint(t, got), fingerprint(t, a); g != w {
		t.Errorf("Get(ns1/a) returned another object than the one added")
	}
	if _, ok, err := s.GetByKey("ns1/missing"); ok || err != nil {
		t.Errorf("GetByKey(missing) = _, %v, %v; want false, nil", ok, err)
	}
	if _, ok, err := s.Get(newPod("ns2", "a", "")); ok || err != nil {
		t.Errorf("Get(ns2/a) = _, %v, %v; want false, nil (namespaces are part of the key)", ok, err)
	}

	a2 := newPod("ns1", "a", "2", "app=api")
	mustOK(t, "Update", s.Update(a2))
	checkContents(t, s, want(t, a2))
	checkDiff(t, []string{"ns1/a"}, indexKeys(t, s, idxApp, "api"), "IndexKeys(app, api) after Update")

	// Add of an existing key replaces, Update of a missing key adds, as in client-go.
	b := newPod("ns1", "b", "3")
	mustOK(t, "Update of a new key", s.Update(b))
	a3 := newPod("ns1", "a", "4", "app=web")
	mustOK(t, "Add of an existing key", s.Add(a3))
	checkContents(t, s, want(t, a3, b))

	mustOK(t, "Delete", s.Delete(a3))
	checkContents(t, s, want(t, b))
	mustOK(t, "Delete of an absent object", s.Delete(newPod("ns1", "never", "")))
	checkContents(t, s, want(t, b))
	CheckIndexes(t, s)
}

func testListAndListKeys(t *testing.T, h *harness) {
	s := h.openPods(t)
	// Empty and not nil, as client-go's: callers tell "none" from "not
	// listed" by nil (and JSON-encode it as [] rather than null).
	if l := s.List(); l == nil || len(l) != 0 {
		t.Errorf("List of a new store = %#v; want an empty, non-nil list (client-go's)", l)
	}
	if l := s.ListKeys(); l == nil || len(l) != 0 {
		t.Errorf("ListKeys of a new store = %#v; want an empty, non-nil list (client-go's)", l)
	}
	var objs []interface{}
	for i, name := range []string{"a", "b", "c", "d"} {
		p := newPod("ns", name, "1", "app=x")
		if i%2 == 1 {
			p = newPod("", name, "1") // cluster-scoped key
		}
		objs = append(objs, p)
		mustOK(t, "Add", s.Add(p))
	}
	wantKeys := sortedKeys(t, objs)
	checkDiff(t, wantKeys, sortedKeys(t, s.List()), "keys of List()")
	checkDiff(t, wantKeys, slices.Sorted(slices.Values(s.ListKeys())), "ListKeys()")
	checkContents(t, s, want(t, objs...))
}

func testDeleteTombstone(t *testing.T, h *harness) {
	s := h.openPods(t)
	a, b := newPod("ns", "a", "1", "app=x"), newPod("ns", "b", "1", "app=x")
	mustOK(t, "Add a", s.Add(a))
	mustOK(t, "Add b", s.Add(b))
	mustOK(t, "Delete tombstone", s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a}))
	checkContents(t, s, want(t, b))
	checkDiff(t, []string{"ns/b"}, indexKeys(t, s, idxApp, "x"), "IndexKeys(app, x) after deleting a tombstone")
	CheckIndexes(t, s)
}

func testReplace(t *testing.T, h *harness) {
	s := h.openPods(t)
	old := []interface{}{newPod("ns", "a", "1", "app=old"), newPod("ns", "b", "1", "app=old"), newPod("ns", "c", "1", "app=old")}
	for _, o := range old {
		mustOK(t, "Add", s.Add(o))
	}
	b2 := newPod("ns", "b", "7", "app=new")
	d := newPod("other", "d", "8", "app=new", "tier=db")
	mustOK(t, "Replace", s.Replace([]interface{}{b2, d}, "10"))
	checkContents(t, s, want(t, b2, d))
	checkRV(t, s, "10")
	checkDiff(t, []string{"new"}, sortedValues(s, idxApp), "ListIndexFuncValues(app) after Replace: the old value must be gone")
	checkDiff(t, []string{"ns/b", "other/d"}, byIndexKeys(t, s, idxApp, "new"), "ByIndex(app, new) after Replace")
	CheckIndexes(t, s)

	mustOK(t, "Replace with an empty list", s.Replace(nil, "11"))
	checkContents(t, s, map[string]string{})
	checkRV(t, s, "11")
	checkNoIndexValues(t, s, "after Replace(nil)")

	e := newPod("ns", "e", "12", "app=new")
	mustOK(t, "Replace without a resourceVersion", s.Replace([]interface{}{e}, ""))
	checkContents(t, s, want(t, e))
	checkRV(t, s, "11")
}

func testMultiValue(t *testing.T, h *harness) {
	s := h.openPods(t)
	a := newPod("ns", "a", "1", "app=web", "tier=front", "team=x")
	b := newPod("ns", "b", "1", "app=web", "tier=back")
	mustOK(t, "Add a", s.Add(a))
	mustOK(t, "Add b", s.Add(b))
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"app=web", []string{"ns/a", "ns/b"}},
		{"tier=front", []string{"ns/a"}},
		{"team=x", []string{"ns/a"}},
		{"tier=back", []string{"ns/b"}},
		{"tier=none", nil},
	} {
		t.Run(tc.value, func(t *testing.T) {
			checkDiff(t, tc.want, indexKeys(t, s, idxLabels, tc.value), "IndexKeys")
			checkDiff(t, tc.want, byIndexKeys(t, s, idxLabels, tc.value), "ByIndex")
		})
	}
	wantVals := []string{"app=web", "team=x", "tier=back", "tier=front"}
	checkDiff(t, wantVals, sortedValues(s, idxLabels), "ListIndexFuncValues(labels)")
	CheckIndexes(t, s)
}

func testDeleteRemovesEntries(t *testing.T, h *harness) {
	s := h.openPods(t)
	a := newPod("ns", "a", "1", "app=solo", "x=1")
	b := newPod("ns", "b", "1", "app=shared")
	c := newPod("ns", "c", "1", "app=shared")
	for _, o := range []interface{}{a, b, c} {
		mustOK(t, "Add", s.Add(o))
	}
	mustOK(t, "Delete a", s.Delete(a))
	checkDiff(t, []string{"shared"}, sortedValues(s, idxApp), "ListIndexFuncValues(app) after deleting the only object with app=solo")
	checkDiff(t, none, indexKeys(t, s, idxApp, "solo"), "IndexKeys(app, solo) after delete")
	checkDiff(t, none, indexKeys(t, s, idxLabels, "x=1"), "IndexKeys(labels, x=1) after delete")
	mustOK(t, "Delete b", s.Delete(b))
	checkDiff(t, []string{"ns/c"}, indexKeys(t, s, idxApp, "shared"), "IndexKeys(app, shared) after deleting b")
	mustOK(t, "Delete c by key only", s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpDelete, Key: "ns/c"}}}))
	checkNoIndexValues(t, s, "of an emptied store")
	CheckIndexes(t, s)
}

func testUpdateMovesEntries(t *testing.T, h *harness) {
	s := h.openPods(t)
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1", "app=v1", "keep=yes", "gone=soon")))
	mustOK(t, "Add", s.Add(newPod("ns", "b", "1", "app=v1")))
	mustOK(t, "Update", s.Update(newPod("ns", "a", "2", "app=v2", "keep=yes", "new=here")))
	for _, tc := range []struct {
		index, value string
		want         []string
	}{
		{idxApp, "v1", []string{"ns/b"}},
		{idxApp, "v2", []string{"ns/a"}},
		{idxLabels, "keep=yes", []string{"ns/a"}},
		{idxLabels, "gone=soon", nil},
		{idxLabels, "new=here", []string{"ns/a"}},
	} {
		checkDiff(t, tc.want, indexKeys(t, s, tc.index, tc.value), "IndexKeys(%q, %q) after Update", tc.index, tc.value)
	}
	checkDiff(t, []string{"app=v1", "app=v2", "keep=yes", "new=here"}, sortedValues(s, idxLabels), "ListIndexFuncValues(labels) after Update")
	// Losing the label altogether removes the entry.
	mustOK(t, "Update", s.Update(newPod("ns", "a", "3")))
	checkDiff(t, []string{"v1"}, sortedValues(s, idxApp), "ListIndexFuncValues(app) after the label was removed")
	CheckIndexes(t, s)
}

func testIndexOfObject(t *testing.T, h *harness) {
	s := h.openPods(t)
	for _, p := range []interface{}{
		newPod("ns", "a", "1", "app=web", "tier=front"),
		newPod("ns", "b", "1", "app=web"),
		newPod("ns", "c", "1", "tier=front"),
		newPod("ns", "d", "1", "app=db"),
	} {
		mustOK(t, "Add", s.Add(p))
	}
	for _, tc := range []struct {
		name  string
		index string
		probe interface{}
		want  []string
	}{
		{"single value", idxApp, newPod("x", "probe", "", "app=web"), []string{"ns/a", "ns/b"}},
		{"several values are a union", idxLabels, newPod("x", "probe", "", "app=db", "tier=front"), []string{"ns/a", "ns/c", "ns/d"}},
		{"no value", idxApp, newPod("x", "probe", ""), nil},
		{"value nobody has", idxApp, newPod("x", "probe", "", "app=none"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := s.Index(tc.index, tc.probe)
			if err != nil {
				t.Fatalf("Index(%q): %v", tc.index, err)
			}
			checkDiff(t, tc.want, sortedKeys(t, objs), "Index(%q)", tc.index)
		})
	}
}

func testUnknownIndex(t *testing.T, h *harness) {
	s := h.openPods(t)
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1", "app=web")))
	_, errByIndex := s.ByIndex("no-such-index", "web")
	_, errIndexKeys := s.IndexKeys("no-such-index", "web")
	_, errIndex := s.Index("no-such-index", newPod("ns", "a", ""))
	for what, err := range map[string]error{"ByIndex": errByIndex, "IndexKeys": errIndexKeys, "Index": errIndex} {
		if err == nil {
			t.Errorf("%s of an unknown index: no error", what)
		}
	}
	if v := s.ListIndexFuncValues("no-such-index"); v == nil || len(v) != 0 {
		t.Errorf("ListIndexFuncValues of an unknown index = %#v; want an empty, non-nil list (client-go's)", v)
	}
}

func testAddIndexersBackfills(t *testing.T, h *harness) {
	s := h.openPods(t)
	a, b, c := newPod("ns", "a", "1", "zone=east"), newPod("ns", "b", "1", "zone=west"), newPod("ns", "c", "1")
	for _, o := range []interface{}{a, b, c} {
		mustOK(t, "Add", s.Add(o))
	}
	mustOK(t, "AddIndexers", s.AddIndexers(cache.Indexers{"zone": labelIndex("zone")}))
	checkDiff(t, []string{"ns/a"}, indexKeys(t, s, "zone", "east"), "IndexKeys(zone, east) after AddIndexers")
	checkDiff(t, []string{"east", "west"}, sortedValues(s, "zone"), "ListIndexFuncValues(zone) after AddIndexers")
	mustOK(t, "Update", s.Update(newPod("ns", "c", "2", "zone=east")))
	mustOK(t, "Delete", s.Delete(a))
	checkDiff(t, []string{"ns/c"}, indexKeys(t, s, "zone", "east"), "IndexKeys(zone, east) after writes")
	if _, ok := s.GetIndexers()["zone"]; !ok {
		t.Error("GetIndexers lacks the added index")
	}
	checkDiff(t, []string{idxApp, idxGuard, idxLabels, idxNamespace, "zone"}, s.Info().Indexes, "Info().Indexes after AddIndexers")
	CheckIndexes(t, s)
}

func testAddIndexersNone(t *testing.T, h *harness) {
	codec := &DecodeCounter{Codec: podCodec(t)}
	o := podOptions(t, "pods")
	o.Codec = codec
	s := h.open(t, h.url(t), o)
	// More objects than the bounded mode's conformance cache holds, so a
	// backfill there would have to decode some.
	for i := range 5 {
		mustOK(t, "Add", s.Add(newPod("ns", fmt.Sprintf("p%d", i), "1", "app=web")))
	}
	before := codec.Decodes.Load()
	mustOK(t, "AddIndexers(nil)", s.AddIndexers(nil))
	mustOK(t, "AddIndexers(empty)", s.AddIndexers(cache.Indexers{}))
	if n := codec.Decodes.Load() - before; n != 0 {
		t.Errorf("AddIndexers with no index decoded %d objects; want none", n)
	}
	checkDiff(t, []string{idxApp, idxGuard, idxLabels, idxNamespace}, s.Info().Indexes, "Info().Indexes after AddIndexers with no index")
	if len(s.GetIndexers()) != 4 {
		t.Errorf("GetIndexers after AddIndexers with no index: %d indexes; want 4", len(s.GetIndexers()))
	}
	CheckIndexes(t, s)
}

func testAddIndexersConflict(t *testing.T, h *harness) {
	s := h.openPods(t)
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1", "app=web", "zone=east")))
	err := s.AddIndexers(cache.Indexers{idxApp: labelIndex("zone"), "zone": labelIndex("zone")})
	// Callers match client-go's text (Kubernetes' scheduler tests do).
	wantErr(t, "AddIndexers with an existing name", err, store.ErrIndexExists, "indexer conflict")
	if _, ok := s.GetIndexers()["zone"]; ok {
		t.Error("a failed AddIndexers added the other index anyway")
	}
	checkDiff(t, []string{"ns/a"}, indexKeys(t, s, idxApp, "web"), "the existing index changed after a failed AddIndexers")
	CheckIndexes(t, s)
}

func testAddIndexersFailure(t *testing.T, h *harness) {
	s := h.openPods(t)
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1", "app=web")))
	mustOK(t, "Add", s.Add(newPod("ns", "b", "1", "bad=yes")))
	failing := func(obj interface{}) ([]string, error) {
		m, _ := metaOf(obj)
		if m != nil && m.GetLabels()["bad"] == "yes" {
			return nil, errors.New("storetest: index function fails on purpose")
		}
		return []string{"ok"}, nil
	}
	err := s.AddIndexers(cache.Indexers{"failing": failing})
	wantErr(t, "AddIndexers whose function fails on a stored object", err, store.ErrInvalid)
	if _, ok := s.GetIndexers()["failing"]; ok {
		t.Error("a failed AddIndexers left the index in GetIndexers")
	}
	if _, err := s.ByIndex("failing", "ok"); err == nil {
		t.Error("a failed AddIndexers left the index queryable")
	}
	CheckIndexes(t, s)
}

func testGetIndexers(t *testing.T, h *harness) {
	s := h.openPods(t)
	checkDiff(t, []string{idxApp, idxGuard, idxLabels, idxNamespace}, slices.Sorted(maps.Keys(s.GetIndexers())), "GetIndexers names")
}

func testReplaceDuplicates(t *testing.T, h *harness) {
	s := h.openPods(t)
	seed(t, s)
	a1, a2 := newPod("ns", "a", "10", "app=first"), newPod("ns", "a", "11", "app=second")
	mustOK(t, "Replace", s.Replace([]interface{}{a1, newPod("ns", "z", "12"), a2}, "13"))
	checkContents(t, s, want(t, a2, newPod("ns", "z", "12")))
	checkDiff(t, []string{"second"}, sortedValues(s, idxApp), "ListIndexFuncValues(app)")
	CheckIndexes(t, s)
}

func testDuplicateValues(t *testing.T, h *harness) {
	twice := func(obj interface{}) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		v := m.GetLabels()["v"]
		return []string{v, v}, nil
	}
	o := podOptions(t, "pods")
	o.Indexers["twice"] = twice
	s := h.open(t, h.url(t), o)
	mustOK(t, "Add", s.Add(newPod("ns", "a", "1", "v=x", "app=")))
	mustOK(t, "Add", s.Add(newPod("ns", "b", "1", "app=")))
	checkDiff(t, []string{"ns/a"}, byIndexKeys(t, s, "twice", "x"), "ByIndex(twice, x)")
	checkDiff(t, []string{"ns/b"}, indexKeys(t, s, "twice", ""), "IndexKeys(twice, \"\")")
	checkDiff(t, []string{"ns/a", "ns/b"}, indexKeys(t, s, idxApp, ""), "IndexKeys(app, \"\")")
	CheckIndexes(t, s)
	mustOK(t, "Update", s.Update(newPod("ns", "a", "2", "v=y")))
	mustOK(t, "Delete", s.Delete(newPod("ns", "b", "")))
	checkDiff(t, []string{"y"}, sortedValues(s, "twice"), "ListIndexFuncValues(twice)")
	checkDiff(t, none, s.ListIndexFuncValues(idxApp), "ListIndexFuncValues(app)")
	CheckIndexes(t, s)
}
