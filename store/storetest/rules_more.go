package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Store/ReplaceDuplicateKeys", contract: "cache.Store: Replace with several objects under one key keeps the last, with only its index entries", fn: testReplaceDuplicates},
	rule{name: "Indexer/DuplicateAndEmptyValues", contract: "cache.Indexer: an index function returning a value twice indexes the object once; the empty string is a value like any other", fn: testDuplicateValues},
	rule{name: "Commit/Canceled", contract: "Store.Commit: a canceled context fails the commit with the context's error and leaves no trace", fn: testCommitCanceled},
	rule{name: "Commit/LargeBatch", contract: "Store.Commit and Replace: batches of thousands of objects (tens of MiB) apply atomically", fn: testLargeBatch},
	rule{name: "Concurrency/AddIndexersDuringWrites", contract: "cache.Indexer: AddIndexers while writers run leaves the new index consistent with every object", fn: testAddIndexersDuringWrites},
	rule{name: "Restart/AfterAddIndexers", persistent: true, contract: "restart: indexes added with AddIndexers and maintained by later writes are right after a restart that keeps them, and gone after one that does not", fn: testRestartAfterAddIndexers},
	rule{name: "Restart/OpaqueResumePoint", persistent: true, contract: "restart: the resume point is kept byte for byte, whatever its content", fn: testRestartOpaqueRV},
	rule{name: "Restart/LargeBatch", persistent: true, contract: "restart: a large Replace and a large Commit survive", fn: testRestartLargeBatch},
)

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

func testCommitCanceled(t *testing.T, h *harness) {
	s := h.openPods(t)
	seed(t, s)
	before := contents(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.Commit(ctx, store.Batch{ResourceVersion: "9", Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "new", "9")}}})
	wantErr(t, "Commit with a canceled context", err, context.Canceled)
	checkDiff(t, before, contents(t, s), "a canceled Commit changed the store")
	checkRV(t, s, "5")
}

// bigPods returns n pods of about size bytes each.
func bigPods(prefix string, n, size int) []interface{} {
	out := make([]interface{}, n)
	pad := strings.Repeat("p", size)
	for i := range out {
		p := newPod(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("%s-%05d", prefix, i), fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("app=a%d", i%11))
		p.Annotations = map[string]string{"pad": pad}
		out[i] = p
	}
	return out
}

func testLargeBatch(t *testing.T, h *harness) {
	s := h.openPods(t)
	list := bigPods("r", 2000, 8<<10) // about 16 MiB
	mustOK(t, "Replace", s.Replace(list, "100"))
	checkVersions(t, s, list...)
	checkRV(t, s, "100")
	more := bigPods("c", 2000, 8<<10)
	ops := puts(more...)
	for _, o := range list[:1000] {
		ops = append(ops, store.Op{Type: store.OpDelete, Object: o})
	}
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "101"}))
	checkVersions(t, s, append(list[1000:], more...)...)
	checkRV(t, s, "101")
	CheckIndexes(t, s)
	// A large batch that fails at its end leaves no trace.
	before := versions(t, s)
	bad := slices.Concat(ops[:len(more)], []store.Op{{Type: store.OpPut, Object: newPod("ns", "x", "1", labelFail+"=1")}})
	wantErr(t, "large Commit with a bad last op", s.Commit(t.Context(), store.Batch{Ops: bad, ResourceVersion: "102"}), store.ErrInvalid)
	checkDiff(t, before, versions(t, s), "a failed large Commit changed the store")
	checkRV(t, s, "101")
}

func testAddIndexersDuringWrites(t *testing.T, h *harness) {
	s := h.openPods(t)
	const writers, perWriter = 3, 80
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				p := newPod("ns", fmt.Sprintf("w%d-%d", w, i%20), fmt.Sprint(i), fmt.Sprintf("zone=z%d", i%3))
				if err := s.Update(p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		if err := s.AddIndexers(cache.Indexers{"zone": labelIndex("zone")}); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, ok := s.GetIndexers()["zone"]; !ok {
		t.Fatal("the index added during writes is missing")
	}
	CheckIndexes(t, s)
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

// versionsOf returns key -> resourceVersion of objs: a cheaper identity
// than fingerprints for rules with thousands of large objects, whose
// objects all differ in resourceVersion.
func versionsOf(t testing.TB, objs []interface{}) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, obj := range objs {
		m, err := metaOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		out[keyOf(t, obj)] = m.GetResourceVersion()
	}
	return out
}

// versions is versionsOf the objects of s.
func versions(t testing.TB, s store.Store) map[string]string { return versionsOf(t, s.List()) }

// checkVersions compares s's keys and resourceVersions with objs'.
func checkVersions(t testing.TB, s store.Store, objs ...interface{}) {
	t.Helper()
	checkDiff(t, versionsOf(t, objs), versions(t, s), "store contents (key -> resourceVersion)")
}
