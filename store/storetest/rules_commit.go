package storetest

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Commit/AppliesBatch", contract: "Store.Commit: puts and deletes of a batch are applied with their index entries, and the batch's ResourceVersion becomes the resume point", fn: testCommitApplies},
	rule{name: "Commit/Atomic", contract: "Store.Commit: a batch with one bad op returns an error wrapping ErrInvalid and leaves no trace: objects, index entries and resume point unchanged", fn: testCommitAtomic},
	rule{name: "Commit/SameKeyTwice", contract: "Store.Commit: ops on the same key in one batch apply in order, and the index entries follow the last one", fn: testCommitSameKey},
	rule{name: "Commit/BadWritesLeaveNoTrace", contract: "Add, Update, Delete and Replace with bad input return an error wrapping ErrInvalid, never panic, and leave the store unchanged", fn: testBadWrites},
	rule{name: "ResumePoint/Semantics", contract: "resume point: \"\" when new; Add, Update and Delete leave it; Commit with an RV sets it, with \"\" keeps it; Bookmark and Replace set it", fn: testResumePoint},
)

// seed fills s with the objects atomicity rules start from.
func seed(t *testing.T, s store.Store) []interface{} {
	t.Helper()
	objs := []interface{}{
		newPod("ns", "a", "1", "app=web", "tier=front"),
		newPod("ns", "b", "2", "app=db"),
		newPod("", "c", "3", "app=web"),
	}
	mustOK(t, "seed Commit", s.Commit(t.Context(), store.Batch{Ops: puts(objs...), ResourceVersion: "5"}))
	return objs
}

func testCommitApplies(t *testing.T, h *harness) {
	s := h.openPods(t)
	objs := seed(t, s)
	checkContents(t, s, want(t, objs...))
	checkRV(t, s, "5")
	a2 := newPod("ns", "a", "6", "app=api")
	d := newPod("ns", "d", "7", "app=web")
	err := s.Commit(t.Context(), store.Batch{ResourceVersion: "8", Ops: []store.Op{
		{Type: store.OpPut, Object: a2},
		{Type: store.OpDelete, Object: objs[1]},
		{Type: store.OpDelete, Key: "c"},
		{Type: store.OpPut, Object: d},
		{Type: store.OpDelete, Key: "ns/never-existed"},
	}})
	mustOK(t, "Commit", err)
	checkContents(t, s, want(t, a2, d))
	checkRV(t, s, "8")
	checkDiff(t, []string{"ns/d"}, indexKeys(t, s, idxApp, "web"), "IndexKeys(app, web)")
	CheckIndexes(t, s)

	mustOK(t, "empty Commit", s.Commit(t.Context(), store.Batch{}))
	checkContents(t, s, want(t, a2, d))
	checkRV(t, s, "8")
}

// checkSeeded opens the pod store of the database at u and checks that it
// holds objs, what seed committed, unchanged.
func (h *harness) checkSeeded(t *testing.T, u string, objs []interface{}) {
	t.Helper()
	s := h.open(t, u, podOptions(t, "pods"))
	checkContents(t, s, want(t, objs...))
	checkRV(t, s, "5")
	CheckIndexes(t, s)
}

func testCommitAtomic(t *testing.T, h *harness) {
	var nilPod *corev1.Pod
	// Each op must make a whole batch fail.
	for _, bad := range []struct {
		name string
		op   store.Op
		// persistent: only backends that encode objects can reject what the
		// codec cannot encode (memory:// keeps objects as given).
		persistent bool
	}{
		{name: "nil object", op: store.Op{Type: store.OpPut}},
		{name: "typed nil object", op: store.Op{Type: store.OpPut, Object: nilPod}},
		{name: "key function error", op: store.Op{Type: store.OpPut, Object: "not an object"}},
		{name: "delete without object or key", op: store.Op{Type: store.OpDelete}},
		{name: "unknown op type", op: store.Op{Type: 99, Object: newPod("ns", "z", "1")}},
		{name: "index function error", op: store.Op{Type: store.OpPut, Object: newPod("ns", "z", "1", labelFail+"=yes")}},
		{name: "index function panic", op: store.Op{Type: store.OpPut, Object: newPod("ns", "z", "1", labelPanic+"=yes")}},
		{name: "codec cannot encode", op: store.Op{Type: store.OpPut, Object: &corev1.ConfigMap{}}, persistent: true},
		{name: "empty key", op: store.Op{Type: store.OpPut, Object: unnamed()}},
		{name: "empty key delete", op: store.Op{Type: store.OpDelete, Object: cache.DeletedFinalStateUnknown{Key: ""}}},
	} {
		for _, pos := range []string{"first", "last"} {
			t.Run(bad.name+"/"+pos, func(t *testing.T) {
				if bad.persistent && !h.b.Persistent {
					t.Log("not applicable: the backend keeps objects without encoding them")
					return
				}
				s := h.openPods(t)
				objs := seed(t, s)
				before := contents(t, s)
				valsBefore := map[string][]string{}
				for _, idx := range []string{idxNamespace, idxApp, idxLabels} {
					valsBefore[idx] = sortedValues(s, idx)
				}
				good := []store.Op{
					{Type: store.OpPut, Object: newPod("ns", "new", "9", "app=fresh")},
					{Type: store.OpPut, Object: newPod("ns", "a", "9", "app=moved")},
					{Type: store.OpDelete, Object: objs[1]},
				}
				// Concat copies, so good stays as it is for the retry below.
				ops := slices.Concat([]store.Op{bad.op}, good)
				if pos == "last" {
					ops = slices.Concat(good, []store.Op{bad.op})
				}
				err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: "9"})
				wantErr(t, "Commit of a batch with a bad op", err, store.ErrInvalid)
				checkContents(t, s, before)
				checkRV(t, s, "5")
				for idx, vals := range valsBefore {
					checkDiff(t, vals, sortedValues(s, idx), "a failed Commit changed ListIndexFuncValues(%q)", idx)
				}
				CheckIndexes(t, s)
				// The store still works after the failure.
				mustOK(t, "Commit after a failed one", s.Commit(t.Context(), store.Batch{Ops: good, ResourceVersion: "10"}))
				checkRV(t, s, "10")
				CheckIndexes(t, s)
			})
		}
	}
}

func testCommitSameKey(t *testing.T, h *harness) {
	// Large batches reach backends sorted by key (indexer.Base from 64
	// operations on): fillers between the operations of a key make the
	// sort, not the batch order, bring them together.
	for _, fillers := range []int{0, 200} {
		t.Run(fmt.Sprintf("fillers=%d", fillers), func(t *testing.T) {
			u := h.url(t)
			s := h.open(t, u, podOptions(t, "pods"))
			seed(t, s)
			a1 := newPod("ns", "a", "10", "app=one")
			a2 := newPod("ns", "a", "11", "app=two")
			b2 := newPod("ns", "b", "12", "app=back")
			x := newPod("ns", "x", "13", "app=temp")
			ops := []store.Op{
				{Type: store.OpPut, Object: a1},
				{Type: store.OpPut, Object: a2}, // a: put twice, the last wins
				{Type: store.OpDelete, Key: "ns/b"},
				{Type: store.OpPut, Object: b2}, // b: deleted then put again
				{Type: store.OpPut, Object: x},
				{Type: store.OpDelete, Object: x}, // x: put then deleted
				{Type: store.OpDelete, Key: "c"},
				{Type: store.OpDelete, Key: "c"}, // c: deleted twice
			}
			objs := []interface{}{a2, b2}
			values := []string{"back", "two"}
			if fillers > 0 {
				values = []string{"back", "fill", "two"}
			}
			var padded []store.Op
			for i, op := range ops {
				padded = append(padded, op)
				for j := range fillers / len(ops) {
					f := newPod("ns", fmt.Sprintf("f%d-%d", i, j), "20", "app=fill")
					padded = append(padded, store.Op{Type: store.OpPut, Object: f})
					objs = append(objs, f)
				}
			}
			mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "14", Ops: padded}))
			check := func(when string) {
				t.Helper()
				checkContents(t, s, want(t, objs...))
				checkRV(t, s, "14")
				checkDiff(t, values, sortedValues(s, idxApp), "ListIndexFuncValues(app) %s: values of intermediate and deleted versions must not remain", when)
				CheckIndexes(t, s)
			}
			check("after the Commit")
			if h.b.Persistent {
				// What the backend wrote, not only what it serves from
				// memory, must be the net effect.
				s = h.reopen(t, s, u, podOptions(t, "pods"))
				check("after a restart")
			}
		})
	}
}

func testBadWrites(t *testing.T, h *harness) {
	s := h.openPods(t)
	objs := seed(t, s)
	var nilPod *corev1.Pod
	checkRefused(t, s, []refusal{
		{"Add nil", func() error { return s.Add(nil) }, nil},
		{"Add typed nil", func() error { return s.Add(nilPod) }, nil},
		{"Add non-object", func() error { return s.Add(42) }, nil},
		{"Add index function error", func() error { return s.Add(newPod("ns", "z", "1", labelFail+"=1")) }, nil},
		{"Update index function panic", func() error { return s.Update(newPod("ns", "a", "9", labelPanic+"=1")) }, nil},
		{"Delete nil", func() error { return s.Delete(nil) }, nil},
		{"Delete non-object", func() error { return s.Delete(3.5) }, nil},
		{"Replace with one bad object", func() error {
			return s.Replace([]interface{}{newPod("ns", "r", "1"), newPod("ns", "s", "1", labelFail+"=1")}, "99")
		}, nil},
		{"Replace with nil", func() error { return s.Replace([]interface{}{newPod("ns", "r", "1"), nil}, "99") }, nil},
	})
	checkContents(t, s, want(t, objs...))
	CheckIndexes(t, s)
}

// refusal is a write a store must refuse with ErrInvalid whose message
// mentions every string of says.
type refusal struct {
	name  string
	write func() error
	says  []string
}

// checkRefused runs each refusal as a subtest on s, which seed filled: the
// write fails without a panic and leaves s as it was.
func checkRefused(t *testing.T, s store.Store, refusals []refusal) {
	t.Helper()
	before := contents(t, s)
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked: %v", p)
					}
				}()
				err = r.write()
			}()
			wantErr(t, r.name, err, store.ErrInvalid, r.says...)
			checkDiff(t, before, contents(t, s), "a refused write changed the store")
			checkRV(t, s, "5")
		})
	}
}

func testResumePoint(t *testing.T, h *harness) {
	s := h.openPods(t)
	checkRV(t, s, "")
	mustOK(t, "Add", s.Add(newPod("ns", "a", "3")))
	checkRV(t, s, "")
	mustOK(t, "Commit rv 5", s.Commit(t.Context(), store.Batch{ResourceVersion: "5", Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "b", "5")}}}))
	checkRV(t, s, "5")
	mustOK(t, "Add", s.Add(newPod("ns", "c", "6")))
	mustOK(t, "Update", s.Update(newPod("ns", "c", "7")))
	mustOK(t, "Delete", s.Delete(newPod("ns", "a", "")))
	checkRV(t, s, "5")
	mustOK(t, "Commit without rv", s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "d", "8")}}}))
	checkRV(t, s, "5")
	mustOK(t, "Commit with only an rv", s.Commit(t.Context(), store.Batch{ResourceVersion: "9"}))
	checkRV(t, s, "9")
	before := contents(t, s)
	s.Bookmark("12")
	checkRV(t, s, "12")
	checkDiff(t, before, contents(t, s), "Bookmark changed the objects")
	s.Bookmark("")
	checkRV(t, s, "12")
	mustOK(t, "Replace", s.Replace([]interface{}{newPod("ns", "e", "13")}, "20"))
	checkRV(t, s, "20")
	// Resume points are opaque: the store must not compare them.
	mustOK(t, "Commit with a smaller rv", s.Commit(t.Context(), store.Batch{ResourceVersion: "3"}))
	checkRV(t, s, "3")
}
