package deltafifo_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// scenario is a sequence of writes and the batches a drain must then pop.
type scenario struct {
	name  string
	opts  deltafifo.Options // KnownObjects is set from known when known != nil
	known []*v1.ConfigMap
	ops   func(t *testing.T, q deltafifo.Queue)
	want  []deltafifo.Batch
}

func (s scenario) options() deltafifo.Options {
	o := s.opts
	if s.known != nil {
		o.KnownObjects = newKnown(s.known...)
	}
	return o
}

func runScenarios(t *testing.T, newQueue func(deltafifo.Options) deltafifo.Queue, scenarios []scenario) {
	t.Helper()
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			q := newQueue(s.options())
			s.ops(t, q)
			diff(t, "batches", s.want, drain(t, q))
		})
	}
}

func newDeltaFIFOQueue(o deltafifo.Options) deltafifo.Queue { return deltafifo.NewDeltaFIFO(&o) }

func deltas(ds ...cache.Delta) cache.Deltas { return ds }

func d(typ cache.DeltaType, obj interface{}) cache.Delta { return cache.Delta{Type: typ, Object: obj} }

func TestDeltaFIFOClientGoBehaviour(t *testing.T) {
	a1, a2, a3 := cm("a", "1", "a1"), cm("a", "3", "a2"), cm("a", "4", "a3")
	b1 := cm("b", "2", "b1")
	runScenarios(t, newDeltaFIFOQueue, []scenario{
		{
			name: "deltas accumulate per key, keys pop in first-arrival order",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Add(b1))
				must(t, q.Update(a2))
				must(t, q.Delete(a3))
			},
			// a holds event 4; b (event 2) pops second: the watermark after
			// popping a stays behind b (RV "2" is b's), so a's pop moves it
			// only to "1"; b's pop releases everything up to "4".
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, a1), d(cache.Updated, a2), d(cache.Deleted, a3)), ResourceVersion: "1"},
				{Deltas: deltas(d(cache.Added, b1)), ResourceVersion: "4"},
			},
		},
		{
			name: "two deletes collapse into one",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Delete(a2))
				must(t, q.Delete(a3))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Added, a1), d(cache.Deleted, a2)), ResourceVersion: "4"}},
		},
		{
			name: "a real delete wins over a tombstone before it",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Delete(tomb("a", a1)))
				must(t, q.Delete(a2))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Added, a1), d(cache.Deleted, a2)), ResourceVersion: "3"}},
		},
		{
			name: "a tombstone after a real delete is dropped",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Delete(a2))
				must(t, q.Delete(tomb("a", a1)))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Added, a1), d(cache.Deleted, a2)), ResourceVersion: "3"}},
		},
		{
			name: "delete of a key neither queued nor known is dropped",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Delete(a1))
				must(t, q.Add(b1))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Added, b1)), ResourceVersion: "2"}},
		},
		{
			name:  "delete of a known key is queued",
			known: []*v1.ConfigMap{a1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Delete(a2))
			},
			want: []deltafifo.Batch{{Deltas: deltas(d(cache.Deleted, a2)), ResourceVersion: "3"}},
		},
		{
			name:  "replace emits Sync by default and tombstones with the known object",
			known: []*v1.ConfigMap{a1, b1, cm("c", "5", "c1")},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Replace([]interface{}{a2}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Sync, a2)), InInitialList: true, RelistPending: true},
				{Deltas: deltas(d(cache.Deleted, tomb("b", b1))), InInitialList: true, RelistPending: true},
				{Deltas: deltas(d(cache.Deleted, tomb("c", cm("c", "5", "c1")))), InInitialList: true, ResourceVersion: "10", RelistDone: true},
			},
		},
		{
			name:  "replace emits Replaced when asked",
			opts:  deltafifo.Options{EmitDeltaTypeReplaced: true},
			known: []*v1.ConfigMap{b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Replace([]interface{}{a2}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Replaced, a2)), InInitialList: true, RelistPending: true},
				{Deltas: deltas(d(cache.Deleted, tomb("b", b1))), InInitialList: true, ResourceVersion: "10", RelistDone: true},
			},
		},
		{
			name:  "replace tombstones a queued key with its newest queued object",
			known: []*v1.ConfigMap{a1, b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Delete(a1))
				must(t, q.Add(a2))
				must(t, q.Replace([]interface{}{b1}, "10"))
			},
			want: []deltafifo.Batch{
				// The relist's own RV waits for b; a's watch events are all out.
				{Deltas: deltas(d(cache.Deleted, a1), d(cache.Added, a2), d(cache.Deleted, tomb("a", a2))), ResourceVersion: "3", RelistPending: true},
				{Deltas: deltas(d(cache.Sync, b1)), ResourceVersion: "10", RelistDone: true},
			},
		},
		{
			name:  "replace keeps a queued real delete rather than adding a tombstone",
			known: []*v1.ConfigMap{a1, b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Delete(a2))
				must(t, q.Replace([]interface{}{b1}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Deleted, a2)), ResourceVersion: "3", RelistPending: true},
				{Deltas: deltas(d(cache.Sync, b1)), ResourceVersion: "10", RelistDone: true},
			},
		},
		{
			name: "replace without known objects tombstones only queued keys",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Replace([]interface{}{b1}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, a1), d(cache.Deleted, tomb("a", a1))), ResourceVersion: "1", RelistPending: true},
				{Deltas: deltas(d(cache.Sync, b1)), ResourceVersion: "10", RelistDone: true},
			},
		},
		{
			name:  "resync skips keys with queued deltas",
			known: []*v1.ConfigMap{a1, b1},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Update(a2))
				must(t, q.Resync())
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Updated, a2)), ResourceVersion: "3"},
				{Deltas: deltas(d(cache.Sync, b1))},
			},
		},
		{
			name: "resync without known objects does nothing",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Resync())
			},
			want: nil,
		},
		{
			name: "bookmarks coalesce and pop as their own batch",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(a1))
				must(t, q.Bookmark("7"))
				must(t, q.Bookmark("8"))
				must(t, q.Add(b1))
				must(t, q.Bookmark("9"))
			},
			// Bookmarks hold nothing to apply, so they never hold the
			// watermark back: popping a already releases bookmark 8, and
			// popping b releases 9. The bookmark batches then move nothing.
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, a1)), ResourceVersion: "8"},
				{Deltas: deltas(d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "8"}))},
				{Deltas: deltas(d(cache.Added, b1)), ResourceVersion: "9"},
				{Deltas: deltas(d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "9"}))},
			},
		},
		{
			name: "an empty relist still hands out its resourceVersion",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Replace(nil, "10"))
			},
			want: []deltafifo.Batch{
				// Synced at once, as client-go's (nothing to apply): not
				// in the initial list.
				{Deltas: deltas(d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "10"})), ResourceVersion: "10", RelistDone: true},
			},
		},
		{
			name: "an empty relist without resourceVersion still hands out its end",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Bookmark("9"))
				must(t, q.Replace(nil, ""))
				must(t, q.Replace(nil, ""))
			},
			// The resource is no longer served: nothing to apply, but a
			// consumer that commits relists whole learns that they ended,
			// and the bookmark keeps its resourceVersion.
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "9"})), ResourceVersion: "9", RelistDone: true},
			},
		},
		{
			name: "an empty relist without resourceVersion pops without deltas",
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Replace(nil, ""))
			},
			want: []deltafifo.Batch{{RelistDone: true}},
		},
		{
			name: "transformer runs on adds and relists, resourceVersion read before it",
			opts: deltafifo.Options{Transformer: stripRV},
			ops: func(t *testing.T, q deltafifo.Queue) {
				must(t, q.Add(cm("a", "1", "a1")))
				must(t, q.Replace([]interface{}{cm("b", "2", "b1")}, "10"))
			},
			want: []deltafifo.Batch{
				{Deltas: deltas(d(cache.Added, cm("a", "", "a1")), d(cache.Deleted, tomb("a", cm("a", "", "a1")))), ResourceVersion: "1", RelistPending: true},
				{Deltas: deltas(d(cache.Sync, cm("b", "", "b1"))), ResourceVersion: "10", RelistDone: true},
			},
		},
	})
}

// stripRV is a transformer that drops metadata a cache may not need,
// including the resourceVersion the queue must not lose.
func stripRV(obj interface{}) (interface{}, error) {
	c := obj.(*v1.ConfigMap).DeepCopy()
	c.ResourceVersion = ""
	return c, nil
}

func TestDeltaFIFOTransformerSkipsResyncAndTombstones(t *testing.T) {
	calls := 0
	k := newKnown(cm("a", "1", "a1"), cm("b", "2", "b1"))
	q := deltafifo.NewDeltaFIFO(&deltafifo.Options{
		KnownObjects: k,
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

func TestDeltaFIFOHasSynced(t *testing.T) {
	k := newKnown(cm("c", "1", "c1"))
	q := deltafifo.NewDeltaFIFO(&deltafifo.Options{KnownObjects: k})
	diff(t, "HasSynced before anything", false, q.HasSynced())
	must(t, q.Replace([]interface{}{cm("a", "2", "a1"), cm("b", "3", "b1")}, "10"))
	must(t, q.Add(cm("d", "11", "d1"))) // after the initial list: not part of it
	var got []bool
	for range 3 {
		diff(t, "HasSynced before the pop", false, q.HasSynced())
		got = append(got, pop(t, q).InInitialList)
	}
	diff(t, "HasSynced after the initial list", true, q.HasSynced())
	b := pop(t, q)
	diff(t, "InInitialList", []bool{true, true, true}, got)
	diff(t, "InInitialList after sync", false, b.InInitialList)
}

func TestHasSyncedWhenAddComesFirst(t *testing.T) {
	for name, q := range map[string]deltafifo.Queue{
		"impl=FIFO":      deltafifo.New(nil),
		"impl=DeltaFIFO": deltafifo.NewDeltaFIFO(nil),
	} {
		t.Run(name, func(t *testing.T) {
			must(t, q.Add(cm("a", "1", "a1")))
			diff(t, "HasSynced", true, q.HasSynced())
			must(t, q.Replace([]interface{}{cm("b", "2", "b1")}, "10"))
			diff(t, "HasSynced after a later Replace", true, q.HasSynced())
			diff(t, "InInitialList", []bool{false, false}, initialFlags(drain(t, q)))
		})
	}
}

func initialFlags(bs []deltafifo.Batch) []bool {
	var out []bool
	for _, b := range bs {
		out = append(out, b.InInitialList)
	}
	return out
}

func TestDeltaFIFOReadMethods(t *testing.T) {
	q := deltafifo.NewDeltaFIFO(nil)
	a1, a2, b1 := cm("a", "1", "a1"), cm("a", "2", "a2"), cm("b", "3", "b1")
	must(t, q.Add(a1))
	must(t, q.Add(b1))
	must(t, q.Bookmark("4"))
	must(t, q.Update(a2))

	diff(t, "ListKeys", []string{"ns/a", "ns/b"}, q.ListKeys())
	diff(t, "List", []interface{}{a2, b1}, q.List())
	diff(t, "Len", 3, q.Len())

	got, exists, err := q.Get(a1)
	must(t, err)
	diff(t, "Get", cache.Deltas{d(cache.Added, a1), d(cache.Updated, a2)}, got)
	diff(t, "Get exists", true, exists)
	// The copy must not change when the queue does.
	must(t, q.Delete(a2))
	diff(t, "Get copy after Delete", cache.Deltas{d(cache.Added, a1), d(cache.Updated, a2)}, got)

	_, exists, err = q.GetByKey("ns/zz")
	must(t, err)
	diff(t, "GetByKey of a missing key", false, exists)
}

// TestHasSyncedAfterEmptyFirstReplace pins client-go v0.37's DeltaFIFO and
// (non-atomic) RealFIFO: a first Replace with nothing to apply (an informer
// over an empty resource) makes HasSynced true at once, before anything is
// popped; one that deletes a known object waits for its pop. Both of
// client-go's queues are run alongside.
func TestHasSyncedAfterEmptyFirstReplace(t *testing.T) {
	type queue interface {
		Replace([]interface{}, string) error
		HasSynced() bool
	}
	for _, tc := range []struct {
		name  string
		known []*v1.ConfigMap
		want  bool // HasSynced right after the first Replace of nothing
	}{
		{"nothing known", nil, true},
		{"a known object to delete", []*v1.ConfigMap{cm("gone", "1", "x")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queues := map[string]queue{
				"client-go DeltaFIFO": cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: newKnown(tc.known...)}),
				"client-go RealFIFO":  cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: newKnown(tc.known...)}),
				"DeltaFIFO":           deltafifo.NewDeltaFIFO(&deltafifo.Options{KnownObjects: newKnown(tc.known...)}),
				"FIFO":                deltafifo.New(&deltafifo.Options{KnownObjects: newKnown(tc.known...)}),
			}
			for name, q := range queues {
				must(t, q.Replace(nil, "10"))
				if got := q.HasSynced(); got != tc.want {
					t.Errorf("%s: HasSynced after an empty first Replace = %v; want %v", name, got, tc.want)
				}
			}
			for _, name := range []string{"DeltaFIFO", "FIFO"} {
				q := queues[name].(deltafifo.Queue)
				// The resourceVersion is still handed out.
				b := pop(t, q)
				if b.ResourceVersion != "10" {
					t.Errorf("%s: popped resourceVersion %q; want the list's, 10", name, b.ResourceVersion)
				}
				if !q.HasSynced() {
					t.Errorf("%s: HasSynced false after the first Replace was popped", name)
				}
			}
		})
	}
}

// TestDeltaFIFORelistDone pins Batch.RelistDone: it marks the batch that
// hands out the last key a relist touched, so that a consumer can apply the
// relist's batches in one commit. A second relist arriving while the first
// is partly handed out extends it; events on keys the relists did not touch
// come after, without the flag.
func TestDeltaFIFORelistDone(t *testing.T) {
	a1, b1, c1 := cm("a", "1", "a1"), cm("b", "2", "b1"), cm("c", "3", "c1")
	a2, d1 := cm("a", "8", "a2"), cm("d", "9", "d1")
	q := deltafifo.NewDeltaFIFO(&deltafifo.Options{EmitDeltaTypeReplaced: true})
	must(t, q.Replace([]interface{}{a1, b1}, "4"))
	diff(t, "first pop", deltafifo.Batch{Deltas: deltas(d(cache.Replaced, a1)), InInitialList: true, RelistPending: true}, pop(t, q))
	// b is still queued: the second relist touches it and c.
	must(t, q.Replace([]interface{}{b1, c1}, "7"))
	must(t, q.Update(a2)) // a was popped: a new key entry, after c
	must(t, q.Add(d1))
	diff(t, "batches", []deltafifo.Batch{
		// The first relist is out: its resourceVersion is the watermark.
		{Deltas: deltas(d(cache.Replaced, b1), d(cache.Replaced, b1)), InInitialList: true, ResourceVersion: "4", RelistPending: true},
		// The initial list was a and b: c is past it.
		{Deltas: deltas(d(cache.Replaced, c1)), ResourceVersion: "7", RelistDone: true},
		{Deltas: deltas(d(cache.Updated, a2)), ResourceVersion: "8"},
		{Deltas: deltas(d(cache.Added, d1)), ResourceVersion: "9"},
	}, drain(t, q))
}
