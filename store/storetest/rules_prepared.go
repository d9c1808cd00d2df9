package storetest

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Commit/Prepared", contract: "store.Prepare: preparing changes nothing; the prepared batch commits as Commit would, under the indexes current at its commit (AddIndexers in between included)", fn: testPrepared},
	rule{name: "Commit/Staged", contract: "store.StagedBatch, where a prepared batch has it: Persist changes no read until its apply, applies land in order, other writes wait for them, and what is persisted survives a restart even unapplied", fn: testStaged},
	rule{name: "Commit/PreparedInvalid", contract: "store.Prepare: a batch with invalid input fails with ErrInvalid, when prepared or when committed, and leaves no trace; a closed store fails with ErrClosed", fn: testPreparedInvalid},
)

func testPrepared(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	seed(t, s)
	a2 := newPod("ns", "a", "10", "app=api", "zone=east")
	d := newPod("ns", "d", "11", "app=db", "zone=west")
	batch := store.Batch{ResourceVersion: "12", Ops: []store.Op{
		{Type: store.OpPut, Object: a2},
		{Type: store.OpDelete, Key: "ns/b"},
		{Type: store.OpPut, Object: d},
	}}
	before := versions(t, s)
	p, err := store.Prepare(s, batch)
	mustOK(t, "Prepare", err)
	checkDiff(t, before, versions(t, s), "Prepare changed the store")
	checkRV(t, s, "5")
	// An index added between Prepare and Commit covers the batch's objects
	// too: the batch is prepared again under the new indexes.
	mustOK(t, "AddIndexers", s.AddIndexers(cache.Indexers{"zone": labelIndex("zone")}))
	mustOK(t, "prepared Commit", p.Commit(t.Context()))
	check := func(when string) {
		t.Helper()
		checkContents(t, s, want(t, a2, newPod("", "c", "3", "app=web"), d))
		checkRV(t, s, "12")
		checkDiff(t, []string{"ns/d"}, indexKeys(t, s, "zone", "west"), "IndexKeys(zone, west) %s", when)
		checkDiff(t, []string{"api", "db", "web"}, sortedValues(s, idxApp), "ListIndexFuncValues(app) %s", when)
		CheckIndexes(t, s)
	}
	check("after the prepared Commit")
	if h.b.Persistent {
		opts := podOptions(t, "pods")
		opts.Indexers["zone"] = labelIndex("zone")
		s = h.reopen(t, s, u, opts)
		check("after a restart")
	}
}

func testPreparedInvalid(t *testing.T, h *harness) {
	s := h.openPods(t)
	seed(t, s)
	before := versions(t, s)
	bad := store.Batch{ResourceVersion: "20", Ops: []store.Op{
		{Type: store.OpPut, Object: newPod("ns", "e", "20", "app=x")},
		{Type: store.OpPut, Object: newPod("ns", "f", "20", labelFail+"=1")},
	}}
	if p, err := store.Prepare(s, bad); err == nil {
		// Stores without store.BatchPreparer validate when committing.
		wantErr(t, "prepared Commit of a batch with an invalid object", p.Commit(t.Context()), store.ErrInvalid)
	} else {
		wantErr(t, "Prepare of a batch with an invalid object", err, store.ErrInvalid)
	}
	checkDiff(t, before, versions(t, s), "an invalid prepared batch changed the store")
	checkRV(t, s, "5")

	good := store.Batch{ResourceVersion: "21", Ops: []store.Op{{Type: store.OpPut, Object: newPod("ns", "g", "21")}}}
	p, err := store.Prepare(s, good)
	mustOK(t, "Prepare", err)
	closeStore(t, s)
	wantErr(t, "prepared Commit on a closed store", p.Commit(t.Context()), store.ErrClosed)
	if _, err := store.Prepare(s, good); err != nil {
		wantErr(t, "Prepare on a closed store", err, store.ErrClosed)
	}
}

// stage prepares b for s and returns it as a store.StagedBatch, skipping the
// rule for stores whose prepared batches cannot be staged (an optional
// ability: the bounded modes commit in one step).
func stage(t *testing.T, s store.Store, b store.Batch) store.StagedBatch {
	t.Helper()
	p, err := store.Prepare(s, b)
	mustOK(t, "Prepare", err)
	sb, ok := p.(store.StagedBatch)
	if !ok {
		t.Skipf("%T does not stage commits (its prepared batch %T is not a store.StagedBatch)", s, p)
	}
	return sb
}

func testStaged(t *testing.T, h *harness) {
	u := h.url(t)
	s := h.open(t, u, podOptions(t, "pods"))
	objs := seed(t, s)
	seeded := want(t, objs...)
	a2 := newPod("ns", "a", "10", "app=api", "zone=east")
	d := newPod("ns", "d", "13", "app=db", "zone=west")
	e := newPod("ns", "e", "14", "app=web")
	first := stage(t, s, store.Batch{ResourceVersion: "12", Ops: []store.Op{
		{Type: store.OpPut, Object: a2},
		{Type: store.OpDelete, Key: "ns/b"},
	}})
	second := stage(t, s, store.Batch{ResourceVersion: "13", Ops: []store.Op{{Type: store.OpPut, Object: d}}})

	apply1, err := first.Persist(t.Context())
	mustOK(t, "Persist", err)
	checkContents(t, s, seeded)
	checkRV(t, s, "5")
	CheckIndexes(t, s)

	// The next Persist may or may not wait for the previous apply (the
	// store decides); either way it lands after it.
	type persisted struct {
		apply func()
		err   error
	}
	p2 := make(chan persisted, 1)
	go func() {
		apply, err := second.Persist(t.Context())
		p2 <- persisted{apply, err}
	}()
	apply1()
	apply1() // a second call does nothing
	afterFirst := want(t, a2, objs[2])
	r := <-p2
	mustOK(t, "second Persist", r.err)
	checkContents(t, s, afterFirst)
	checkRV(t, s, "12")
	CheckIndexes(t, s)

	// Another write waits for the staged commit before it to be applied.
	added := make(chan error, 1)
	go func() { added <- s.Add(e) }()
	select {
	case err := <-added:
		t.Fatalf("Add returned (err %v) while a staged commit before it was not applied", err)
	case <-time.After(50 * time.Millisecond):
	}
	checkContents(t, s, afterFirst)
	r.apply()
	mustOK(t, "Add", <-added)
	all := want(t, a2, objs[2], d, e)
	checkContents(t, s, all)
	checkRV(t, s, "13")
	CheckIndexes(t, s)

	if !h.b.Persistent {
		return
	}
	// Persisted and never applied, as when the writer is killed before
	// its apply: the store holds it after a restart.
	f := newPod("ns", "f", "15", "app=db")
	third := stage(t, s, store.Batch{ResourceVersion: "15", Ops: []store.Op{{Type: store.OpPut, Object: f}, {Type: store.OpDelete, Key: "ns/e"}}})
	_, err = third.Persist(t.Context())
	mustOK(t, "third Persist", err)
	checkContents(t, s, all)
	closeStore(t, s)
	// A write to the closed store fails at once: it does not wait for the
	// apply that will never come.
	done := make(chan error, 1)
	go func() { done <- s.Add(newPod("ns", "g", "16")) }()
	select {
	case err := <-done:
		wantErr(t, "Add to a closed store with a staged commit unapplied", err, store.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Add to a closed store waits for a staged commit's apply")
	}
	s = h.open(t, u, podOptions(t, "pods"))
	checkContents(t, s, want(t, a2, objs[2], d, f))
	checkRV(t, s, "15")
	CheckIndexes(t, s)
}
