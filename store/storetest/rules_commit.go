package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	rule{name: "Commit/Canceled", contract: "Store.Commit: a canceled context fails the commit with the context's error and leaves no trace", fn: testCommitCanceled},
	rule{name: "Commit/LargeBatch", contract: "Store.Commit and Replace: batches of thousands of objects (tens of MiB) apply atomically", fn: testLargeBatch},
	rule{name: "ResumePoint/Semantics", contract: "resume point: \"\" when new; Add, Update and Delete leave it; Commit with an RV sets it, with \"\" keeps it; Bookmark and Replace set it", fn: testResumePoint},
	rule{name: "LastStoreSyncResourceVersion/ClientGo", contract: "LastStoreSyncResourceVersion moves as client-go's store (v0.37, AtomicFIFO on): Add, Update and Delete to their object's resourceVersion (a tombstone leaves it), Replace and Bookmark to theirs, \"\" included; stores never compare resourceVersions", fn: testSeenClientGo},
	rule{name: "LastStoreSyncResourceVersion/Commit", contract: "LastStoreSyncResourceVersion after Commit: its last op's object's resourceVersion (when it has metadata), then Batch.ResourceVersion unless Batch.ResumeOnly; a refused batch leaves it", fn: testSeenCommit},
	rule{name: "LastStoreSyncResourceVersion/Staged", contract: "LastStoreSyncResourceVersion of a staged commit moves at its apply, not at its Persist", fn: testSeenStaged},
	rule{name: "LastStoreSyncResourceVersion/Restart", persistent: true, contract: "LastStoreSyncResourceVersion of a store opened again is its resume point", fn: testSeenRestart},
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

// checkSeen checks LastStoreSyncResourceVersion.
func checkSeen(t testing.TB, what string, s store.Store, want string) {
	t.Helper()
	if got := s.LastStoreSyncResourceVersion(); got != want {
		t.Errorf("after %s: LastStoreSyncResourceVersion() = %q; want %q", what, got, want)
	}
}

func testSeenClientGo(t *testing.T, h *harness) {
	s := h.openPods(t)
	// client-go's store, given the same writes: the reference each step
	// is compared with, besides the value client-go's code gives.
	ref := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
	a10 := newPod("ns", "a", "10", "app=web")
	steps := []struct {
		what  string
		write func(c cache.Store) error
		want  string
	}{
		{"nothing", func(cache.Store) error { return nil }, ""},
		{"Add of RV 10", func(c cache.Store) error { return c.Add(a10) }, "10"},
		{"Add of another object of RV 10", func(c cache.Store) error { return c.Add(newPod("ns", "b", "10")) }, "10"},
		{"Add of RV 20", func(c cache.Store) error { return c.Add(newPod("ns", "c", "20")) }, "20"},
		{"Update of RV 25", func(c cache.Store) error { return c.Update(newPod("ns", "a", "25")) }, "25"},
		{"Delete of an object of RV 30", func(c cache.Store) error { return c.Delete(newPod("ns", "c", "30")) }, "30"},
		{"Delete of a tombstone", func(c cache.Store) error {
			return c.Delete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: newPod("ns", "b", "35")})
		}, "30"},
		{"Delete of an absent object of RV 31", func(c cache.Store) error { return c.Delete(newPod("ns", "gone", "31")) }, "31"},
		{"Update of an older RV", func(c cache.Store) error { return c.Update(newPod("ns", "a", "5")) }, "5"},
		{"Bookmark 40", func(c cache.Store) error { c.Bookmark("40"); return nil }, "40"},
		{"Bookmark \"\"", func(c cache.Store) error { c.Bookmark(""); return nil }, ""},
		{"Add of RV 41", func(c cache.Store) error { return c.Add(newPod("ns", "d", "41")) }, "41"},
		{"Replace at 50", func(c cache.Store) error {
			return c.Replace([]interface{}{newPod("ns", "e", "45"), newPod("ns", "f", "48")}, "50")
		}, "50"},
		{"Replace at \"\"", func(c cache.Store) error { return c.Replace([]interface{}{newPod("ns", "e", "45")}, "") }, ""},
		{"Add of RV 60", func(c cache.Store) error { return c.Add(newPod("ns", "g", "60")) }, "60"},
		{"Add of an object without a resourceVersion", func(c cache.Store) error { return c.Add(newPod("ns", "h", "")) }, ""},
	}
	for _, st := range steps {
		mustOK(t, st.what+" (client-go)", st.write(ref))
		if got := ref.LastStoreSyncResourceVersion(); got != st.want {
			t.Fatalf("client-go's LastStoreSyncResourceVersion after %s = %q; this rule expects %q", st.what, got, st.want)
		}
		mustOK(t, st.what, st.write(s))
		checkSeen(t, st.what, s, st.want)
	}
	// The resume point moved with Replace and Bookmark only.
	checkRV(t, s, "50")
	// A refused write moves nothing.
	wantErr(t, "Add of a bad object", s.Add(newPod("ns", "bad", "70", labelFail+"=yes")), store.ErrInvalid)
	checkSeen(t, "a refused Add", s, "")
}

func testSeenCommit(t *testing.T, h *harness) {
	s := h.openPods(t)
	put := func(name, rv string) store.Op { return store.Op{Type: store.OpPut, Object: newPod("ns", name, rv)} }
	steps := []struct {
		what         string
		batch        store.Batch
		want, wantRV string
	}{
		{"Commit with an rv", store.Batch{ResourceVersion: "5", Ops: []store.Op{put("a", "3"), put("b", "4")}}, "5", "5"},
		{"Commit without an rv", store.Batch{Ops: []store.Op{put("c", "9"), put("d", "7")}}, "7", "5"},
		{"Commit with only an rv", store.Batch{ResourceVersion: "10"}, "10", "10"},
		{"empty Commit", store.Batch{}, "10", "10"},
		{"ResumeOnly Commit", store.Batch{ResourceVersion: "14", ResumeOnly: true, Ops: []store.Op{put("a", "12")}}, "12", "14"},
		{"ResumeOnly Commit ending in a delete by key", store.Batch{ResourceVersion: "16", ResumeOnly: true, Ops: []store.Op{put("b", "15"), {Type: store.OpDelete, Key: "ns/c"}}}, "12", "16"},
		{"ResumeOnly Commit ending in a tombstone", store.Batch{ResourceVersion: "17", ResumeOnly: true, Ops: []store.Op{
			{Type: store.OpDelete, Object: cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: newPod("ns", "d", "7")}},
		}}, "12", "17"},
		{"ResumeOnly Commit without ops", store.Batch{ResourceVersion: "18", ResumeOnly: true}, "12", "18"},
		{"Commit of a delete of an object", store.Batch{Ops: []store.Op{{Type: store.OpDelete, Object: newPod("ns", "a", "19")}}}, "19", "18"},
		// Resume points are opaque: nothing compares them.
		{"Commit with an older rv", store.Batch{ResourceVersion: "2"}, "2", "2"},
	}
	for _, st := range steps {
		mustOK(t, st.what, s.Commit(t.Context(), st.batch))
		checkSeen(t, st.what, s, st.want)
		checkRV(t, s, st.wantRV)
	}
	bad := store.Batch{ResourceVersion: "30", Ops: []store.Op{put("e", "29"), {Type: store.OpPut, Object: newPod("ns", "f", "28", labelFail+"=yes")}}}
	wantErr(t, "Commit with a bad op", s.Commit(t.Context(), bad), store.ErrInvalid)
	checkSeen(t, "a refused Commit", s, "2")
	// Prepared batches follow the same rule.
	p, err := store.Prepare(s, store.Batch{ResourceVersion: "33", ResumeOnly: true, Ops: []store.Op{put("g", "31")}})
	mustOK(t, "Prepare", err)
	mustOK(t, "prepared Commit", p.Commit(t.Context()))
	checkSeen(t, "a prepared ResumeOnly Commit", s, "31")
	checkRV(t, s, "33")
}

func testSeenStaged(t *testing.T, h *harness) {
	s := h.openPods(t)
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "5", Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "a", "5")}}}))
	sb := stage(t, s, store.Batch{ResourceVersion: "8", Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "b", "7")}}})
	apply, err := sb.Persist(t.Context())
	mustOK(t, "Persist", err)
	checkSeen(t, "Persist", s, "5")
	apply()
	checkSeen(t, "apply", s, "8")
	sb = stage(t, s, store.Batch{ResourceVersion: "10", ResumeOnly: true, Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "c", "9")}}})
	apply, err = sb.Persist(t.Context())
	mustOK(t, "Persist", err)
	apply()
	checkSeen(t, "apply of a ResumeOnly batch", s, "9")
	checkRV(t, s, "10")
}

func testSeenRestart(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	checkSeen(t, "open", s, "")
	mustOK(t, "Replace", s.Replace([]interface{}{newPod("ns", "a", "3")}, "5"))
	mustOK(t, "Add", s.Add(newPod("ns", "b", "9")))
	checkSeen(t, "Add", s, "9")
	s = h.reopen(t, s, u, podOptions(t, "pods"))
	checkSeen(t, "reopen", s, "5")
	checkRV(t, s, "5")
}
