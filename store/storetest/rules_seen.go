package storetest

import (
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "LastStoreSyncResourceVersion/ClientGo", contract: "LastStoreSyncResourceVersion moves as client-go's store (v0.37, AtomicFIFO on): Add, Update and Delete to their object's resourceVersion (a tombstone leaves it), Replace and Bookmark to theirs, \"\" included; stores never compare resourceVersions", fn: testSeenClientGo},
	rule{name: "LastStoreSyncResourceVersion/Commit", contract: "LastStoreSyncResourceVersion after Commit: its last op's object's resourceVersion (when it has metadata), then Batch.ResourceVersion unless Batch.ResumeOnly; a refused batch leaves it", fn: testSeenCommit},
	rule{name: "LastStoreSyncResourceVersion/Staged", contract: "LastStoreSyncResourceVersion of a staged commit moves at its apply, not at its Persist", fn: testSeenStaged},
	rule{name: "LastStoreSyncResourceVersion/Restart", persistent: true, contract: "LastStoreSyncResourceVersion of a store opened again is its resume point", fn: testSeenRestart},
)

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
