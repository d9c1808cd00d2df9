package deltafifo_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

func newFIFOQueue(o deltafifo.Options) deltafifo.Queue { return deltafifo.New(&o) }

// plain is a struct without Kubernetes metadata, keyed by a custom function.
type plain struct {
	Name  string
	Value int
}

func plainKey(obj interface{}) (string, error) { return obj.(plain).Name, nil }

func TestFIFOBehaviour(t *testing.T) {
	a1, a2, a3 := cm("a", "1", "a1"), cm("a", "3", "a2"), cm("a", "4", "a3")
	b1 := cm("b", "2", "b1")
	c1 := cm("c", "5", "c1")
	runScenarios(t, newFIFOQueue, []scenario{
		{
			name: "events pop in arrival order in one batch",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Add(b1))
				must(t, q.Update(a2))
				must(t, q.Delete(a3))
			},
			want: []deltafifo.Batch{{
				Deltas:          deltas(d(cache.Added, a1), d(cache.Added, b1), d(cache.Updated, a2), d(cache.Deleted, a3)),
				ResourceVersion: "4",
			}},
		},
		{
			name: "deletes are never dropped nor collapsed",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Delete(a1))
				must(t, q.Delete(a2))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Deleted, a1), d(cache.Deleted, a2)), ResourceVersion: "3"}},
		},
		{
			name: "MaxBatch bounds a run",
			opts: deltafifo.Options{MaxBatch: 2},
			ops: func(t *testing.T, q deltafifo.Queue) {
				for _, o := range []*v1.ConfigMap{a1, b1, a2, a3, c1} {
					must(t, q.Add(o))
				}
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, a1), d(cache.Added, b1)), ResourceVersion: "2"},
				{Deltas: deltas(d(cache.Added, a2), d(cache.Added, a3)), ResourceVersion: "4"},
				{Deltas: deltas(d(cache.Added, c1)), ResourceVersion: "5"},
			},
		},
		{
			name:  "a replace is one batch, never merged with neighbours",
			known: []*v1.ConfigMap{a1, b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(c1))
				must(t, q.Replace([]interface{}{a2}, "10"))
				must(t, q.Update(a3))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, c1)), ResourceVersion: "5"},
				{
					// c is queued (not yet known): tombstoned with its queued
					// object; b is known and unlisted: tombstoned with the
					// known object; then the list.
					Deltas:          deltas(d(cache.Deleted, tomb("c", c1)), d(cache.Deleted, tomb("b", b1)), d(cache.Sync, a2)),
					ResourceVersion: "10",
					Replace:         true,
				},
				{Deltas: deltas(d(cache.Updated, a3)), ResourceVersion: "4"},
			},
		},
		{
			name:  "replace emits Replaced when asked, skips keys whose last queued delta deletes them",
			opts:  deltafifo.Options{EmitDeltaTypeReplaced: true},
			known: []*v1.ConfigMap{a1, b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Delete(a2))
				must(t, q.Replace([]interface{}{b1}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Deleted, a2)), ResourceVersion: "3"},
				{Deltas: deltas(d(cache.Replaced, b1)), ResourceVersion: "10", Replace: true},
			},
		},
		{
			name: "an empty initial replace is one empty batch carrying the list RV",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Replace(nil, "10"))
			},
			// Synced at once, as client-go's (nothing to apply): not in
			// the initial list.
			want: []deltafifo.Batch{{ResourceVersion: "10", Replace: true}},
		},
		{
			name:  "resync is one unit without RV, even beyond MaxBatch",
			opts:  deltafifo.Options{MaxBatch: 1},
			known: []*v1.ConfigMap{a1, b1, c1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Update(a2))
				must(t, q.Resync())
				must(t, q.Add(cm("d", "6", "d1")))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Updated, a2)), ResourceVersion: "3"},
				{Deltas: deltas(d(cache.Sync, b1), d(cache.Sync, c1))},
				{Deltas: deltas(d(cache.Added, cm("d", "6", "d1"))), ResourceVersion: "6"},
			},
		},
		{
			name:  "resync merges with events when it fits; the batch RV is the last event's",
			known: []*v1.ConfigMap{b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Resync())
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Added, a1), d(cache.Sync, b1)), ResourceVersion: "1"}},
		},
		{
			name: "bookmarks travel in order",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Bookmark("7"))
				must(t, q.Add(cm("b", "", "no rv")))
			},
			want: []deltafifo.Batch{{
				Deltas: deltas(
					d(cache.Added, a1),
					d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "7"}),
					d(cache.Added, cm("b", "", "no rv")),
				),
				ResourceVersion: "7",
			}},
		},
		{
			name: "objects without RV give an empty resume point",
			opts: deltafifo.Options{KeyFunction: plainKey},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(plain{"p1", 1}))
				must(t, q.Delete(plain{"p1", 1}))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Added, plain{"p1", 1}), d(cache.Deleted, plain{"p1", 1}))}},
		},
		{
			name: "transformer runs, RV is read before it",
			opts: deltafifo.Options{Transformer: stripRV},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(cm("a", "1", "a1")))
				must(t, q.Replace([]interface{}{cm("b", "2", "b1")}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, cm("a", "", "a1"))), ResourceVersion: "1"},
				{
					Deltas:          deltas(d(cache.Deleted, tomb("a", cm("a", "", "a1"))), d(cache.Sync, cm("b", "", "b1"))),
					ResourceVersion: "10",
					Replace:         true,
				},
			},
		},
	})
}

func TestFIFOHasSynced(t *testing.T) {
	k := newKnown(cm("c", "1", "c1"))
	q := deltafifo.New(&deltafifo.Options{KnownObjects: k})
	must(t, q.Bookmark("5"))
	must(t, q.Replace([]interface{}{cm("a", "2", "a1")}, "10"))
	must(t, q.Add(cm("d", "11", "d1")))
	diff(t, "HasSynced before", false, q.HasSynced())
	var got []deltafifo.Batch
	for range 2 {
		got = append(got, pop(t, q))
	}
	diff(t, "HasSynced after the replace", true, q.HasSynced())
	diff(t, "InInitialList", []bool{true, true, false}, initialFlags(append(got, pop(t, q))))
}

func TestFIFOTransformerSkipsResyncAndTombstones(t *testing.T) {
	calls := 0
	q := deltafifo.New(&deltafifo.Options{
		KnownObjects: newKnown(cm("a", "1", "a1"), cm("b", "2", "b1")),
		Transformer: func(obj interface{}) (interface{}, error) {
			calls++
			return obj, nil
		},
	})

	must(t, q.Resync())
	must(t, q.Delete(tomb("a", cm("a", "1", "a1"))))
	must(t, q.Replace(nil, "10"))
	drain(t, q)
	diff(t, "transformer calls", 0, calls)
}

// TestFIFOBacklogHoldsWhatItQueues keeps a backlog of queued events while
// pushing and popping, as a watch that outpaces the store does: every event
// comes out once, in order; the queue holds no more chunks than its
// backlog fills and its spares, and once drained, its spares only.
func TestFIFOBacklogHoldsWhatItQueues(t *testing.T) {
	const backlog, perRound, rounds = 3000, 50, 400
	q := deltafifo.New(&deltafifo.Options{MaxBatch: perRound})
	pushed, popped := 0, 0
	push := func(n int) {
		for range n {
			must(t, q.Update(cm(strconv.Itoa(pushed), strconv.Itoa(pushed+1), "v")))
			pushed++
		}
	}
	pop := func(r int) {
		must(t, q.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
			for _, d := range b.Deltas {
				if got, want := d.Object.(*v1.ConfigMap).Name, strconv.Itoa(popped); got != want {
					t.Fatalf("round %d: popped %s, want %s", r, got, want)
				}
				popped++
			}
			return nil
		}))
	}
	push(backlog)
	// The backlog spans at most one chunk more than it fills.
	const maxHeld = (backlog+perRound+deltafifo.DequeChunk-1)/deltafifo.DequeChunk + 1 + deltafifo.DequeSpares
	for r := range rounds {
		push(perRound)
		pop(r)
		if h := q.HeldChunks(); h > maxHeld {
			t.Fatalf("round %d: the queue holds %d chunks for a backlog of %d events, want at most %d", r, h, backlog, maxHeld)
		}
	}
	for r := rounds; q.Len() > 0; r++ {
		pop(r)
	}
	if popped != pushed {
		t.Errorf("popped %d events, want %d", popped, pushed)
	}
	if h := q.HeldChunks(); h > deltafifo.DequeSpares {
		t.Errorf("a drained queue holds %d chunks, want at most %d (its spares)", h, deltafifo.DequeSpares)
	}
}

// TestFIFOMaxQueued checks the bound on what a FIFO holds: a write to a
// full queue waits (the hook tells when it does) until a Pop makes room,
// and then queues its event after the others, in order; a write waiting
// when the queue closes fails with ErrClosed; Replace and Bookmark never
// wait.
func TestFIFOMaxQueued(t *testing.T) {
	q := deltafifo.New(&deltafifo.Options{MaxQueued: 3, MaxBatch: 1})
	full := make(chan struct{}, 10)
	defer deltafifo.SetFullHook(func() { full <- struct{}{} })()
	for i := range 3 {
		if err := q.Add(cm("k"+strconv.Itoa(i), strconv.Itoa(i+1), "v")); err != nil {
			t.Fatal(err)
		}
	}
	added := make(chan error, 1)
	go func() { added <- q.Add(cm("k3", "4", "v")) }()
	<-full // the fourth Add waits, the queue locked meanwhile
	select {
	case err := <-added:
		t.Fatalf("Add to a full queue returned (%v) before a Pop made room", err)
	default:
	}
	if n := q.Len(); n != 3 {
		t.Fatalf("Len = %d while a write waits; want 3", n)
	}
	if b := pop(t, q); len(b.Deltas) != 1 || b.ResourceVersion != "1" {
		t.Fatalf("first pop: %+v; want k0 alone", b)
	}
	if err := <-added; err != nil {
		t.Fatalf("Add once there was room: %v", err)
	}
	// Bookmarks and relists do not wait, full or not.
	if err := q.Bookmark("5"); err != nil {
		t.Fatal(err)
	}
	if n := q.Len(); n != 4 {
		t.Fatalf("Len = %d after a bookmark on a full queue; want 4", n)
	}
	var rvs []string
	for range 4 {
		rvs = append(rvs, pop(t, q).ResourceVersion)
	}
	if want := []string{"2", "3", "4", "5"}; !slices.Equal(rvs, want) {
		t.Errorf("popped resourceVersions %q; want %q, in order", rvs, want)
	}

	// A write waiting when the queue closes fails.
	for i := range 3 {
		if err := q.Add(cm("c"+strconv.Itoa(i), strconv.Itoa(10+i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	go func() { added <- q.Add(cm("c3", "13", "v")) }()
	<-full
	q.Close()
	if err := <-added; !errors.Is(err, deltafifo.ErrClosed) {
		t.Errorf("Add waiting when the queue closed: %v; want ErrClosed", err)
	}
}

// TestFIFOKeepsBookmarks pins a documented difference (see the package
// documentation): client-go v0.37's RealFIFO without atomic events drops
// Bookmark, so its consumer sees only the next event; FIFO hands the
// bookmark out as a Bookmark delta with its resourceVersion, which a
// persisting consumer stores as its resume point (DESIGN invariant 1).
func TestFIFOKeepsBookmarks(t *testing.T) {
	a := cm("a", "7", "a1")
	ref := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: newKnown()})
	must(t, ref.Bookmark("5"))
	must(t, ref.Add(a))
	var refGot []cache.DeltaType
	if _, err := ref.Pop(func(obj interface{}, _ bool) error {
		for _, d := range obj.(cache.Deltas) {
			refGot = append(refGot, d.Type)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	diff(t, "client-go's RealFIFO: first pop", []cache.DeltaType{cache.Added}, refGot)

	q := deltafifo.New(nil)
	must(t, q.Bookmark("5"))
	must(t, q.Add(a))
	diff(t, "FIFO: batches", []deltafifo.Batch{
		{Deltas: deltas(d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "5"}), d(cache.Added, a)), ResourceVersion: "7"},
	}, drain(t, q))
}
