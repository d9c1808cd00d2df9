package deltafifo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// The resume-point property (DESIGN invariant 1): after every pop the test
// "crashes" and checks that the resourceVersion a consumer would persist
// never runs ahead of the newest event such that it and every event that
// arrived before it have been popped. Arrival order is tracked by the test;
// resourceVersions are random tokens whose string order means nothing, so
// an implementation that compares them fails.

type opKind int

const (
	opAdd opKind = iota
	opUpdate
	opDelete
	opBookmark
	opReplace
	opResync
	opPop
)

func (k opKind) String() string {
	return [...]string{"add", "update", "delete", "bookmark", "replace", "resync", "pop"}[k]
}

type op struct {
	kind opKind
	key  string   // add, update, delete
	list []string // replace
}

func (o op) String() string {
	switch o.kind {
	case opAdd, opUpdate, opDelete:
		return o.kind.String() + " " + o.key
	case opReplace:
		return fmt.Sprintf("replace %v", o.list)
	}
	return o.kind.String()
}

// keyedDelta is a delta the FIFO model expects, with its key.
type keyedDelta struct {
	key string
	d   cache.Delta
}

// event is the model of one write: its resourceVersion, whether it has been
// popped, and what it queued.
type event struct {
	rv     string
	popped bool
	// keys (DeltaFIFO): keys holding deltas of this event not yet popped.
	keys map[string]bool
	// deltas (FIFO): what this event queued, in order.
	deltas  []keyedDelta
	replace bool
}

type harness struct {
	t        *testing.T
	fifo     bool // FIFO model, else DeltaFIFO model
	emit     bool // Options.EmitDeltaTypeReplaced
	maxBatch int
	q        deltafifo.Queue
	known    *known
	rng      *rand.Rand
	events   []*event
	rvIndex  map[string]int
	reported int // index of the event whose rv is the persisted resume point
	trace    []string
}

func newHarness(t *testing.T, fifo bool, maxBatch int, emitReplaced bool, seed uint64) *harness {
	h := &harness{
		t: t, fifo: fifo, maxBatch: maxBatch, emit: emitReplaced,
		known:    newKnown(),
		rng:      rand.New(rand.NewPCG(seed, seed^0x5eed)),
		rvIndex:  map[string]int{},
		reported: -1,
	}
	opts := deltafifo.Options{KnownObjects: h.known, EmitDeltaTypeReplaced: emitReplaced, MaxBatch: maxBatch}
	if fifo {
		h.q = deltafifo.New(&opts)
	} else {
		h.q = deltafifo.NewDeltaFIFO(&opts)
	}
	return h
}

// newRV returns a fresh resourceVersion token, unrelated to arrival order.
func (h *harness) newRV() string {
	for {
		rv := fmt.Sprintf("%x", h.rng.Uint32())
		if _, dup := h.rvIndex[rv]; !dup && rv != "" {
			return rv
		}
	}
}

func (h *harness) fatalf(format string, args ...interface{}) {
	h.t.Helper()
	h.t.Fatalf("%s\ntrace:\n%v", fmt.Sprintf(format, args...), h.trace)
}

// pendingLast returns, over the deltas the FIFO model still has queued, the
// keys in order of first appearance and the last delta of each.
func (h *harness) pendingLast() ([]string, map[string]cache.Delta) {
	var order []string
	last := map[string]cache.Delta{}
	for _, e := range h.events {
		if e.popped {
			continue
		}
		for _, kd := range e.deltas {
			if kd.d.Type == cache.Bookmark {
				continue
			}
			if _, ok := last[kd.key]; !ok {
				order = append(order, kd.key)
			}
			last[kd.key] = kd.d
		}
	}
	return order, last
}

// pendingKeys returns the keys the DeltaFIFO model has queued.
func (h *harness) pendingKeys() map[string]bool {
	out := map[string]bool{}
	for _, e := range h.events {
		for k := range e.keys {
			out[k] = true
		}
	}
	return out
}

func (h *harness) do(o op) {
	h.t.Helper()
	h.trace = append(h.trace, o.String())
	if o.kind == opPop {
		if queueLen(h.q) > 0 {
			h.pop()
			return
		}
		// Pop would block: check that the model agrees nothing is queued.
		for i, e := range h.events {
			if !e.popped {
				h.fatalf("queue is empty but event %d is not popped", i)
			}
		}
		return
	}
	e := &event{keys: map[string]bool{}}
	idx := len(h.events)
	tag := fmt.Sprintf("ev%d", idx)
	var err error
	switch o.kind {
	case opAdd, opUpdate, opDelete:
		e.rv = h.newRV()
		obj := cm(o.key, e.rv, tag)
		typ := map[opKind]cache.DeltaType{opAdd: cache.Added, opUpdate: cache.Updated, opDelete: cache.Deleted}[o.kind]
		key := "ns/" + o.key
		if h.fifo {
			e.deltas = []keyedDelta{{key, cache.Delta{Type: typ, Object: obj}}}
		} else if _, known := h.known.objs[key]; o.kind != opDelete || known || h.pendingKeys()[key] {
			e.keys[key] = true
		}
		switch o.kind {
		case opAdd:
			err = h.q.Add(obj)
		case opUpdate:
			err = h.q.Update(obj)
		default:
			err = h.q.Delete(obj)
		}
	case opBookmark:
		e.rv = h.newRV()
		if h.fifo {
			e.deltas = []keyedDelta{{"", cache.Delta{Type: cache.Bookmark, Object: cache.BookmarkInfo{ResourceVersion: e.rv}}}}
		}
		err = h.q.Bookmark(e.rv)
	case opReplace:
		e.rv = h.newRV()
		e.replace = true
		listed := map[string]bool{}
		var list []interface{}
		var listDeltas []keyedDelta
		typ := cache.Sync
		if h.emit {
			typ = cache.Replaced
		}
		for _, name := range o.list {
			key := "ns/" + name
			obj := cm(name, h.newRV(), tag) // item RVs are not resume points
			listed[key] = true
			list = append(list, obj)
			listDeltas = append(listDeltas, keyedDelta{key, cache.Delta{Type: typ, Object: obj}})
		}
		if h.fifo {
			order, last := h.pendingLast()
			for _, k := range order {
				if listed[k] || last[k].Type == cache.Deleted {
					continue
				}
				e.deltas = append(e.deltas, keyedDelta{k, cache.Delta{Type: cache.Deleted,
					Object: cache.DeletedFinalStateUnknown{Key: k, Obj: last[k].Object}}})
			}
			for _, k := range h.known.ListKeys() {
				if _, queued := last[k]; listed[k] || queued {
					continue
				}
				e.deltas = append(e.deltas, keyedDelta{k, cache.Delta{Type: cache.Deleted,
					Object: cache.DeletedFinalStateUnknown{Key: k, Obj: h.known.objs[k]}}})
			}
			e.deltas = append(e.deltas, listDeltas...)
		} else {
			for k := range listed {
				e.keys[k] = true
			}
			for k := range h.pendingKeys() {
				e.keys[k] = true
			}
			for _, k := range h.known.ListKeys() {
				e.keys[k] = true
			}
		}
		err = h.q.Replace(list, e.rv)
	case opResync:
		if h.fifo {
			_, last := h.pendingLast()
			for _, k := range h.known.ListKeys() {
				if _, queued := last[k]; !queued {
					e.deltas = append(e.deltas, keyedDelta{k, cache.Delta{Type: cache.Sync, Object: h.known.objs[k]}})
				}
			}
		} else {
			pending := h.pendingKeys()
			for _, k := range h.known.ListKeys() {
				if !pending[k] {
					e.keys[k] = true
				}
			}
		}
		err = h.q.Resync()
	}
	if err != nil {
		h.fatalf("%v: %v", o, err)
	}
	if e.rv != "" {
		h.rvIndex[e.rv] = idx
	}
	// An event that queued nothing is applied as soon as it arrives. A FIFO
	// queues a Replace even when it is empty: it still carries the list RV.
	e.popped = len(e.keys) == 0 && len(e.deltas) == 0 && (!h.fifo || !e.replace)
	h.events = append(h.events, e)
}

func (h *harness) pop() {
	h.t.Helper()
	var got deltafifo.Batch
	err := h.q.Pop(h.t.Context(), func(_ context.Context, b deltafifo.Batch) error {
		got = b
		h.known.apply(h.t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
		return nil
	})
	if err != nil {
		h.fatalf("pop: %v", err)
	}
	if h.fifo {
		h.checkFIFOBatch(got)
	} else {
		h.checkDeltaFIFOBatch(got)
	}
	h.checkResumePoint(got)
	// A relist is partly handed out exactly while one of its keys is queued.
	// A FIFO hands a relist out whole, so it never says so.
	pending := false
	for _, e := range h.events {
		pending = pending || (!h.fifo && e.replace && !e.popped)
	}
	if got.RelistPending != pending {
		h.fatalf("RelistPending %v, want %v", got.RelistPending, pending)
	}
}

// checkFIFOBatch checks that b is exactly the next run of whole events:
// contiguous, a Replace alone and whole, at most maxBatch deltas unless one
// unit is larger, and as long as the next unit allows.
func (h *harness) checkFIFOBatch(b deltafifo.Batch) {
	h.t.Helper()
	var want cache.Deltas
	i := 0
	next := func() *event {
		for ; i < len(h.events); i++ {
			if !h.events[i].popped {
				return h.events[i]
			}
		}
		return nil
	}
	if b.Replace {
		e := next()
		if e == nil || !e.replace {
			h.fatalf("batch marked Replace but the next queued event is %+v", e)
		}
		for _, kd := range e.deltas {
			want = append(want, kd.d)
		}
		e.popped = true
	} else {
		units := 0
		for len(want) < len(b.Deltas) {
			e := next()
			if e == nil {
				h.fatalf("batch holds %d deltas, only %d queued", len(b.Deltas), len(want))
			}
			if e.replace {
				h.fatalf("a Replace was merged into a batch with other events")
			}
			for _, kd := range e.deltas {
				want = append(want, kd.d)
			}
			e.popped = true
			units++
		}
		if units > 1 && len(want) > h.maxBatch {
			h.fatalf("batch of %d deltas over %d units exceeds MaxBatch %d", len(want), units, h.maxBatch)
		}
		if e := next(); e != nil && !e.replace && len(want)+len(e.deltas) <= h.maxBatch {
			h.fatalf("batch of %d deltas stopped before a unit of %d that fits MaxBatch %d", len(want), len(e.deltas), h.maxBatch)
		}
	}
	if len(want) == 0 && !b.Replace {
		h.fatalf("empty non-replace batch")
	}
	if d := cmp.Diff(want, b.Deltas); d != "" {
		h.fatalf("batch deltas are not the next run of events (-want +got):\n%s", d)
	}
}

// checkDeltaFIFOBatch checks that b holds one key (or one bookmark) the
// model has queued, and marks that key popped in every event holding it.
func (h *harness) checkDeltaFIFOBatch(b deltafifo.Batch) {
	h.t.Helper()
	if b.Replace {
		h.fatalf("DeltaFIFO batch marked Replace")
	}
	if len(b.Deltas) == 0 {
		h.fatalf("empty DeltaFIFO batch")
	}
	if b.Deltas[0].Type == cache.Bookmark {
		if len(b.Deltas) != 1 {
			h.fatalf("bookmark batch with %d deltas", len(b.Deltas))
		}
		return
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(b.Deltas[0].Object)
	if err != nil {
		h.fatalf("key of popped delta: %v", err)
	}
	for _, d := range b.Deltas {
		if k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(d.Object); k != key {
			h.fatalf("batch mixes keys %q and %q", key, k)
		}
	}
	if !h.pendingKeys()[key] {
		h.fatalf("popped key %q that the model has not queued", key)
	}
	for _, e := range h.events {
		if e.keys[key] {
			delete(e.keys, key)
			if len(e.keys) == 0 {
				e.popped = true
			}
		}
	}
}

// checkResumePoint is the crash check: b.ResourceVersion, if set, must be
// the RV of an event that, with every earlier event, has been popped. It must
// moreover be exactly the newest such event's RV when that moved since the
// last report, and empty otherwise, so that an implementation that never
// reports anything fails too.
func (h *harness) checkResumePoint(b deltafifo.Batch) {
	h.t.Helper()
	if b.ResourceVersion != "" {
		idx, ok := h.rvIndex[b.ResourceVersion]
		if !ok {
			h.fatalf("resume point %q is no event's resourceVersion", b.ResourceVersion)
		}
		for i := 0; i <= idx; i++ {
			if !h.events[i].popped {
				h.fatalf("resume point %q (event %d) runs ahead of unpopped event %d", b.ResourceVersion, idx, i)
			}
		}
	}
	w := -1
	for i, e := range h.events {
		if !e.popped {
			break
		}
		if e.rv != "" {
			w = i
		}
	}
	want := ""
	if w != h.reported {
		want = h.events[w].rv
	}
	if want != b.ResourceVersion {
		h.fatalf("resume point %q, want %q (watermark event %d, last reported %d)", b.ResourceVersion, want, w, h.reported)
	}
	h.reported = w
}

// finish drains the queue and checks that every event was popped and the
// resume point caught up with the newest event.
func (h *harness) finish() {
	h.t.Helper()
	// A bookmark, as a watch sends soon enough, carries the resume point
	// past events that queued nothing (a DeltaFIFO's dropped deletes): they
	// are only handed out with a later pop.
	h.do(op{kind: opBookmark})
	h.q.Close()
	for {
		if n := queueLen(h.q); n == 0 {
			break
		}
		h.pop()
	}
	for i, e := range h.events {
		if !e.popped {
			h.fatalf("event %d never popped", i)
		}
	}
	newest := -1
	for i, e := range h.events {
		if e.rv != "" {
			newest = i
		}
	}
	if newest != h.reported {
		h.fatalf("final resume point is event %d, want the newest event %d", h.reported, newest)
	}
}

func queueLen(q deltafifo.Queue) int {
	return q.(interface{ Len() int }).Len()
}

// randomOps returns n operations over a few keys, with bookmarks, relists,
// resyncs and pops mixed in.
func randomOps(rng *rand.Rand, n int) []op {
	names := []string{"a", "b", "c", "d", "e"}
	var ops []op
	for range n {
		r := rng.IntN(100)
		name := names[rng.IntN(len(names))]
		switch {
		case r < 20:
			ops = append(ops, op{kind: opAdd, key: name})
		case r < 38:
			ops = append(ops, op{kind: opUpdate, key: name})
		case r < 50:
			ops = append(ops, op{kind: opDelete, key: name})
		case r < 58:
			ops = append(ops, op{kind: opBookmark})
		case r < 65:
			var list []string
			for _, n := range names {
				if rng.IntN(2) == 0 {
					list = append(list, n)
				}
			}
			ops = append(ops, op{kind: opReplace, list: list})
		case r < 70:
			ops = append(ops, op{kind: opResync})
		default:
			ops = append(ops, op{kind: opPop})
		}
	}
	return ops
}

func add(k string) op    { return op{kind: opAdd, key: k} }
func update(k string) op { return op{kind: opUpdate, key: k} }
func del(k string) op    { return op{kind: opDelete, key: k} }
func replace(ks ...string) op {
	return op{kind: opReplace, list: ks}
}

var (
	bookmark = op{kind: opBookmark}
	resync   = op{kind: opResync}
	popOp    = op{kind: opPop}
)

// resumeCases are hand-picked interleavings; the harness computes what each
// pop must report.
var resumeCases = []struct {
	name string
	ops  []op
}{
	{"a key popped before an older key's events keeps the resume point behind them",
		[]op{add("b"), add("a"), update("b"), popOp, popOp}},
	{"updates to a popped key wait for older keys",
		[]op{add("a"), add("b"), popOp, update("a"), popOp, popOp}},
	{"a relist interrupted after some keys keeps the old resume point",
		[]op{add("a"), add("b"), add("c"), popOp, popOp, popOp, replace("a", "d"), popOp, popOp, popOp, popOp}},
	{"a relist with keys still queued",
		[]op{add("a"), add("b"), replace("b", "c"), update("a"), popOp, popOp, popOp}},
	{"bookmarks behind queued keys",
		[]op{add("a"), bookmark, add("b"), bookmark, bookmark, popOp, popOp, popOp, popOp}},
	{"a bookmark on an idle queue",
		[]op{bookmark, popOp, bookmark, popOp}},
	{"two deletes collapse",
		[]op{add("a"), popOp, del("a"), del("a"), add("b"), popOp, popOp}},
	{"a dropped delete",
		[]op{del("a"), add("b"), popOp}},
	{"a resync between events",
		[]op{add("a"), add("b"), popOp, popOp, update("a"), resync, add("c"), popOp, popOp, popOp}},
	{"an empty relist",
		[]op{add("a"), popOp, replace(), popOp, popOp}},
	{"a relist right after a delete of the same key",
		[]op{add("a"), popOp, del("a"), replace("a"), popOp}},
}

func TestResumePoint(t *testing.T) {
	impls := []struct {
		name string
		fifo bool
	}{{"impl=FIFO", true}, {"impl=DeltaFIFO", false}}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			for _, tc := range resumeCases {
				t.Run(tc.name, func(t *testing.T) {
					h := newHarness(t, impl.fifo, 2, true, 1)
					for _, o := range tc.ops {
						h.do(o)
					}
					h.finish()
				})
			}
			for seed := uint64(1); seed <= 60; seed++ {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 0))
					h := newHarness(t, impl.fifo, 1+rng.IntN(4), seed%2 == 0, seed)
					for _, o := range randomOps(rng, 300) {
						h.do(o)
					}
					h.finish()
				})
			}
		})
	}
}

// opsFromBytes decodes fuzz input into operations: one byte per operation.
func opsFromBytes(data []byte) []op {
	names := []string{"a", "b", "c", "d", "e"}
	var ops []op
	for _, c := range data {
		name := names[int(c>>3)%len(names)]
		switch c % 8 {
		case 0:
			ops = append(ops, add(name))
		case 1:
			ops = append(ops, update(name))
		case 2:
			ops = append(ops, del(name))
		case 3:
			ops = append(ops, bookmark)
		case 4:
			var list []string
			for i, n := range names {
				if c>>(3+i)&1 == 1 {
					list = append(list, n)
				}
			}
			ops = append(ops, replace(list...))
		case 5:
			ops = append(ops, resync)
		default:
			ops = append(ops, popOp)
		}
	}
	return ops
}

// FuzzResumePoint runs the resume-point harness on arbitrary interleavings;
// its seed corpus runs with the ordinary tests.
func FuzzResumePoint(f *testing.F) {
	f.Add([]byte{0, 8, 1, 6, 6})
	f.Add([]byte{0, 8, 16, 6, 0x3c, 6, 9, 6, 6, 6, 6})
	f.Add([]byte{3, 0, 3, 8, 3, 7, 7, 7, 5, 2, 2, 6, 4, 7})
	f.Add([]byte{0, 8, 16, 24, 6, 6, 6, 6, 0x24, 1, 6, 5, 6, 2, 6, 6, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		data = data[:min(len(data), 512)] // longer inputs add only time
		for _, fifo := range []bool{true, false} {
			h := newHarness(t, fifo, 1+len(data)%4, len(data)%2 == 0, uint64(len(data)))
			for _, o := range opsFromBytes(data) {
				h.do(o)
			}
			h.finish()
		}
	})
}
