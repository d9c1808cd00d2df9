package deltafifo

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// unitKind says what one queued unit of a FIFO came from.
type unitKind uint8

const (
	unitEvent    unitKind = iota // Add, Update or Delete: one delta
	unitBookmark                 // Bookmark: one cache.Bookmark delta
	unitReplace                  // Replace: a whole relist, popped alone
	unitResync                   // Resync: Sync deltas, never split
)

// unit is what one call to a FIFO write method queued. Units are never split
// across pops, so a Replace or a Resync is applied whole.
type unit struct {
	kind unitKind
	// delta and key hold the single delta of an event or bookmark unit
	// inline, so that a watch event allocates nothing of its own.
	delta cache.Delta
	key   string
	// deltas and keys (parallel) hold a Replace's or Resync's deltas.
	deltas cache.Deltas
	keys   []string
	// rv is the resourceVersion the unit carries: the event's object's (read
	// before the transformer), the list's, the bookmark's; "" for a Resync.
	rv string
	// initial marks the first Replace: once it is popped and processed, the
	// queue has synced.
	initial bool
	// arrival is the unit's number in arrival order, from 1 (see Arrived).
	arrival uint64
}

func (u *unit) size() int {
	if u.kind == unitEvent || u.kind == unitBookmark {
		return 1
	}
	return len(u.deltas)
}

// FIFO is the in-order queue with client-go RealFIFO semantics that the
// informer uses by default: every event is handed out in arrival order, and
// each Pop hands out a contiguous run of up to Options.MaxBatch deltas, whose
// Batch.ResourceVersion is the last resourceVersion of the run.
//
// A Replace is popped alone as one Batch with Replace=true (see Replace). A
// Resync is one unit of Sync deltas that does not move the resume point.
// Bookmarks travel in order as cache.Bookmark deltas carrying a
// cache.BookmarkInfo.
//
// A FIFO is safe for concurrent use; the intended use is one writer (the
// reflector) and one popper (the informer).
type FIFO struct {
	core // mu guards the fields below

	// units are the queued units, oldest first.
	units deque[unit]
	// initialPending is true from the first Replace (if it came first) until
	// its batch has been processed.
	initialPending bool
	// arrived counts the units pushed (see Arrived).
	arrived uint64
}

var _ Queue = (*FIFO)(nil)

// New returns an empty in-order FIFO configured by opts (see Options for the
// defaults).
func New(options *Options) *FIFO {
	f := &FIFO{}
	f.init(options)
	// Spare chunks for a MaxBatch pop and refill keep a consumer that
	// keeps up from allocating.
	f.units.keep = max(dequeSpares, (f.opts.MaxBatch+dequeChunk-1)/dequeChunk+1)
	return f
}

// Add queues an Added delta.
func (f *FIFO) Add(obj interface{}) error { return f.event("add", cache.Added, obj) }

// Update queues an Updated delta.
func (f *FIFO) Update(obj interface{}) error { return f.event("update", cache.Updated, obj) }

// Delete queues a Deleted delta. Unlike DeltaFIFO it never drops a delete:
// every watch event reaches the consumer, as with client-go's RealFIFO.
func (f *FIFO) Delete(obj interface{}) error { return f.event("delete", cache.Deleted, obj) }

func (f *FIFO) event(op string, typ cache.DeltaType, obj interface{}) error {
	key, rv, out, err := prepareEvent(op, &f.opts, obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.closed && f.opts.MaxQueued > 0 && f.units.len() >= f.opts.MaxQueued {
		// Full: hold up the watch rather than grow without bound; a Pop
		// or Close wakes us.
		if testHookFull != nil {
			testHookFull()
		}
		f.cond.Wait()
	}
	if f.closed {
		return closedError(op)
	}
	f.populated = true
	f.pushLocked(unit{kind: unitEvent, delta: cache.Delta{Type: typ, Object: out}, key: key, rv: rv})
	return nil
}

// testHookFull, when set by a test, is called (with the queue locked) each
// time a write starts waiting for room in a full FIFO.
var testHookFull func()

func (f *FIFO) pushLocked(u unit) {
	f.arrived++
	u.arrival = f.arrived
	f.units.push(u)
	f.cond.Broadcast()
}

// Bookmark queues a cache.Bookmark delta carrying a cache.BookmarkInfo with
// resourceVersion, which becomes the batch's resume point once popped.
func (f *FIFO) Bookmark(resourceVersion string) error {
	if resourceVersion == "" {
		return fmt.Errorf("deltafifo: bookmark: empty resourceVersion: %w", ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("bookmark")
	}
	f.pushLocked(unit{
		kind:  unitBookmark,
		delta: cache.Delta{Type: cache.Bookmark, Object: cache.BookmarkInfo{ResourceVersion: resourceVersion}},
		rv:    resourceVersion,
	})
	return nil
}

// prepareList validates and transforms a Replace's list before any lock is
// taken, so that a bad item leaves the queue unchanged.
func prepareList(o *Options, list []interface{}) (keys []string, objs []interface{}, listed map[string]struct{}, err error) {
	keys = make([]string, len(list))
	listed = make(map[string]struct{}, len(list))
	for i, obj := range list {
		if keys[i], err = keyOf("replace", o.KeyFunction, obj); err != nil {
			return nil, nil, nil, fmt.Errorf("%w (item %d)", err, i)
		}
		listed[keys[i]] = struct{}{}
	}
	if o.Transformer == nil {
		return keys, list, listed, nil
	}
	objs = make([]interface{}, len(list))
	for i, obj := range list {
		if objs[i], err = transform("replace", o.Transformer, obj); err != nil {
			return nil, nil, nil, fmt.Errorf("%w (item %d)", err, i)
		}
	}
	return keys, objs, listed, nil
}

// Replace queues a relist as one unit: first a Deleted delta carrying a
// cache.DeletedFinalStateUnknown for every key that disappears (keys still
// queued whose last delta is not a delete, with their last queued object;
// then KnownObjects keys neither listed nor queued, with the known object),
// then a Replaced (or Sync) delta for every listed object. The unit is
// queued even when empty, to carry its resourceVersion. A key-function or
// transformer error on any item, or a KnownObjects lookup error, leaves the
// queue unchanged.
func (f *FIFO) Replace(list []interface{}, resourceVersion string) error {
	keys, objs, listed, err := prepareList(&f.opts, list)
	if err != nil {
		return err
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("replace")
	}

	// Keys still queued: the consumer will know them once it has applied
	// what is queued, so a key missing from the list must be deleted with
	// the last queued object, unless that last delta already deletes it.
	queuedKeys, last := f.lastQueuedLocked()
	known, knownObjs, err := f.knownLocked("replace", func(k string) bool {
		_, isListed := listed[k]
		_, queued := last[k]
		return isListed || queued
	})
	if err != nil {
		return err
	}
	u := unit{kind: unitReplace, rv: resourceVersion}
	gone := func(k string, obj interface{}) {
		u.keys = append(u.keys, k)
		u.deltas = append(u.deltas, cache.Delta{Type: cache.Deleted, Object: tombstone(k, obj)})
	}
	for _, k := range queuedKeys {
		if _, ok := listed[k]; !ok && last[k].Type != cache.Deleted {
			gone(k, last[k].Object)
		}
	}
	for i, k := range known {
		gone(k, knownObjs[i])
	}
	typ := f.opts.replacedType()
	for i, obj := range objs {
		u.keys = append(u.keys, keys[i])
		u.deltas = append(u.deltas, cache.Delta{Type: typ, Object: obj})
	}
	if !f.populated {
		f.populated = true
		// A first Replace with nothing to apply syncs at once, as in
		// client-go.
		if len(u.deltas) > 0 {
			f.initialPending = true
			u.initial = true
		}
	}
	f.pushLocked(u)
	return nil
}

// lastQueuedLocked returns the keys with queued deltas (in order of first
// appearance) and the last queued delta of each.
func (f *FIFO) lastQueuedLocked() ([]string, map[string]cache.Delta) {
	var keys []string
	last := make(map[string]cache.Delta)
	note := func(k string, d cache.Delta) {
		if _, ok := last[k]; !ok {
			keys = append(keys, k)
		}
		last[k] = d
	}
	for u := range f.units.all() {
		switch u.kind {
		case unitEvent:
			note(u.key, u.delta)
		case unitReplace, unitResync:
			for j, d := range u.deltas {
				note(u.keys[j], d)
			}
		}
	}
	return keys, last
}

// Resync queues one unit of Sync deltas, one for every KnownObjects key that
// has nothing queued (a queued event carries a newer state), unless there
// are none. A KnownObjects lookup error leaves the queue unchanged.
func (f *FIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("resync")
	}
	_, last := f.lastQueuedLocked()
	keys, objs, err := f.knownLocked("resync", func(k string) bool {
		_, queued := last[k]
		return queued
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	u := unit{kind: unitResync, keys: keys, deltas: make(cache.Deltas, len(objs))}
	for i, obj := range objs {
		u.deltas[i] = cache.Delta{Type: cache.Sync, Object: obj}
	}
	f.pushLocked(u)
	return nil
}

// Pop waits for queued deltas and hands process a contiguous run of them:
// whole units, at most Options.MaxBatch deltas unless a single Replace or
// Resync is larger; a Replace alone (see PopFunc and the package
// Concurrency for process).
func (f *FIFO) Pop(ctx context.Context, process PopFunc) error {
	if process == nil {
		return fmt.Errorf("deltafifo: pop: nil PopFunc: %w", ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.waitLocked(ctx, func() bool { return f.units.len() > 0 }); err != nil {
		return err
	}

	b, initial := f.takeLocked()
	f.cond.Broadcast() // writers waiting for room (Options.MaxQueued)
	err := process(ctx, b)
	if initial {
		// After processing, as client-go: HasSynced must not turn true
		// while the initial list is being applied.
		f.initialPending = false
	}
	return err
}

// takeLocked removes the next run of units from the queue and returns it as
// a Batch, and whether it completes the initial population.
func (f *FIFO) takeLocked() (Batch, bool) {
	b := Batch{InInitialList: !f.syncedLocked()}
	first := f.units.at(0)
	if first.kind == unitReplace {
		b.Deltas, b.ResourceVersion, b.Replace = first.deltas, first.rv, true
		b.HandedOut = first.arrival
		initial := first.initial
		f.units.drop(1)
		return b, initial
	}

	n, size := 0, 0
	for u := range f.units.all() {
		if u.kind == unitReplace {
			break
		}
		s := u.size()
		if n > 0 && size+s > f.opts.MaxBatch {
			break
		}
		size += s
		n++
	}
	b.Deltas = make(cache.Deltas, 0, size)
	for i := range n {
		u := f.units.at(i)
		switch u.kind {
		case unitEvent, unitBookmark:
			b.Deltas = append(b.Deltas, u.delta)
		default:
			b.Deltas = append(b.Deltas, u.deltas...)
		}
		if u.rv != "" {
			b.ResourceVersion = u.rv
		}
		b.HandedOut = u.arrival
	}
	f.units.drop(n)
	return b, false
}

// Arrived returns the number of units (events, bookmarks, relists,
// resyncs) queued so far; a FIFO hands them out in that order.
func (f *FIFO) Arrived() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.arrived
}

func (f *FIFO) syncedLocked() bool {
	return f.populated && !f.initialPending
}

// HasSynced implements Queue.
func (f *FIFO) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncedLocked()
}

// Len returns the number of queued units (events, bookmarks, relists and
// resyncs). Zero means Pop would block.
func (f *FIFO) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.units.len()
}
