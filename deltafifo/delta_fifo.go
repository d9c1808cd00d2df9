package deltafifo

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// queueEntry is one slot of a DeltaFIFO's pop order: a key with queued
// deltas, or a bookmark.
type queueEntry struct {
	key string
	// bookmark entries carry rv, the newest bookmark coalesced into them.
	bookmark bool
	rv       string
}

// pending are the queued deltas of one key.
type pending struct {
	deltas cache.Deltas
	// firstSeq is the arrival sequence number of the oldest event that
	// touched this key since it was last popped. Keys enter the pop order in
	// firstSeq order, which is what makes the watermark cheap to compute.
	firstSeq uint64
}

// seqRV is the resourceVersion of one event, tagged with its arrival
// sequence number.
type seqRV struct {
	seq uint64
	rv  string
}

// DeltaFIFO is compatible with client-go v0.37.2's DeltaFIFO: deltas
// accumulate per key (two consecutive deletes collapse into one, keeping the
// one that is not a tombstone), a key is popped with all its deltas, and keys
// are popped in the order they first got a delta since their last pop. It
// also implements Queue, so a persistent informer can use it.
//
// # Resume point
//
// Grouping per key reorders events: popping key b before key a hands out
// b's newer events while a's older ones are still queued. So
// Batch.ResourceVersion is a watermark (DESIGN invariant 1): every event gets
// an arrival sequence number, and the watermark is the resourceVersion of the
// newest event that, together with every event that arrived before it, has
// been popped. resourceVersions are never compared. Batch.ResourceVersion is
// empty when a pop does not move the watermark.
//
// A key popped ahead of the watermark is applied in a newer state than the
// resume point describes. A consumer that crashes then and resumes the
// watch from the persisted resume point receives that key's events since
// then again: the key goes back to older states until the replay catches
// up, and ends in the server's state (puts and deletes are idempotent),
// but handlers may see it go back. FIFO, which never reorders, has no such
// window: a consumer that persists each batch with its resume point holds
// exactly the state that resume point describes.
//
// # Relists
//
// A DeltaFIFO cannot hand out a Replace in one pop: the relist is applied
// key by key, and Batch.Replace is never set. The list resourceVersion only
// becomes the watermark once every key the relist touched (listed or
// deleted) has been popped, so a crash in the middle of a relist leaves the
// resume point at the old one. Resuming from there would converge, but
// handlers could see keys the relist had reached go back to older states
// while the watch replays; so every batch popped while a relist is partly
// handed out has Batch.RelistPending set, and the batch that hands out its
// last key has Batch.RelistDone set. A persisting consumer either applies
// the batches of a relist in one commit (the informer does) or records
// RelistPending and relists on restart instead (DESIGN invariant 2). A relist
// touches every key queued when it arrives, so it is complete exactly when
// no key queued before or by it remains. FIFO hands a relist out in one
// batch instead.
//
// # Bookmarks
//
// Bookmark queues an entry of its own (consecutive bookmarks coalesce) that
// pops as a batch with one cache.Bookmark delta, so that an idle stream
// still moves the resume point. A Replace that queues nothing (an empty list
// and nothing to delete) queues such an entry with the list resourceVersion;
// without one (a resource the server stopped serving), the entry pops as a
// batch without deltas, so that Batch.RelistDone still reaches the consumer.
// Code that never calls Bookmark, like client-go's users, sees one only for
// such an empty relist with a resourceVersion.
//
// A Delete dropped because its key is neither queued nor known queues
// nothing; its resourceVersion reaches the consumer with the next pop.
//
// A DeltaFIFO is safe for concurrent use by any number of goroutines; the
// intended use is one writer and one popper. PopFunc runs with the queue
// locked, as in client-go, so a consumer can update KnownObjects in step
// with the queue.
type DeltaFIFO struct {
	core // mu guards the fields below

	// items holds the queued deltas of each key in queue.
	items map[string]pending
	// queue is the pop order. A key is in queue exactly when it is in items,
	// and at most once; bookmark entries are never adjacent.
	queue deque[queueEntry]
	// nextSeq is the arrival sequence number of the next event.
	nextSeq uint64
	// rvs are the resourceVersions of events the watermark has not passed
	// yet, in arrival order.
	rvs deque[seqRV]
	// relistSeq is the sequence number of the latest Replace, if relisted.
	relistSeq uint64
	relisted  bool
	// relistOpen is set by Replace and cleared by the pop that hands out
	// the last key of the relist (Batch.RelistDone).
	relistOpen bool
	// initialCount is the number of queue entries, queued when the first
	// Replace came first, that still have to be popped and processed.
	initialCount int
}

var _ Queue = (*DeltaFIFO)(nil)

// NewDeltaFIFO returns an empty DeltaFIFO configured by opts (see Options
// for the defaults; MaxBatch is ignored).
func NewDeltaFIFO(options *Options) *DeltaFIFO {
	var opts Options
	if options != nil {
		opts = *options
	}
	f := &DeltaFIFO{items: make(map[string]pending)}
	f.init(opts)
	return f
}

// Add queues an Added delta for obj's key.
func (f *DeltaFIFO) Add(obj interface{}) error { return f.event("add", cache.Added, obj) }

// Update queues an Updated delta for obj's key.
func (f *DeltaFIFO) Update(obj interface{}) error { return f.event("update", cache.Updated, obj) }

// Delete queues a Deleted delta for obj's key, unless the key is neither
// queued nor known (KnownObjects.GetByKey says it does not exist), as in
// client-go: it was presumably deleted by a relist already, and must not be
// reported twice.
func (f *DeltaFIFO) Delete(obj interface{}) error { return f.event("delete", cache.Deleted, obj) }

func (f *DeltaFIFO) event(op string, typ cache.DeltaType, obj interface{}) error {
	key, rv, out, err := prepareEvent(op, &f.opts, obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError(op)
	}
	f.populated = true
	seq := f.arriveLocked(rv)
	if typ == cache.Deleted && !f.deleteNeededLocked(key) {
		// Nothing to apply; the event still counts for the watermark.
		return nil
	}
	f.appendLocked(key, seq, cache.Delta{Type: typ, Object: out})
	return nil
}

func (f *DeltaFIFO) deleteNeededLocked(key string) bool {
	if _, queued := f.items[key]; queued {
		return true
	}
	if f.opts.KnownObjects == nil {
		return false
	}
	_, exists, err := f.opts.KnownObjects.GetByKey(key)
	// On a lookup error queue the delete: a redundant delete is harmless, a
	// lost one is not.
	return err != nil || exists
}

// arriveLocked assigns the next arrival sequence number to an event carrying
// rv ("" for none) and returns it.
func (f *DeltaFIFO) arriveLocked(rv string) uint64 {
	seq := f.nextSeq
	f.nextSeq++
	if rv != "" {
		f.rvs.push(seqRV{seq: seq, rv: rv})
	}
	return seq
}

// appendLocked appends d to key's deltas, queueing key if it was not.
func (f *DeltaFIFO) appendLocked(key string, seq uint64, d cache.Delta) {
	p, ok := f.items[key]
	if !ok {
		p.firstSeq = seq
		f.queue.push(queueEntry{key: key})
	}
	p.deltas = dedupDeletes(append(p.deltas, d))
	f.items[key] = p
	f.cond.Broadcast()
}

// dedupDeletes collapses two trailing Deleted deltas into one: watch and
// relist can report the same deletion twice. The one kept is the one with the
// most information: the real object rather than a tombstone.
func dedupDeletes(d cache.Deltas) cache.Deltas {
	n := len(d)
	if n < 2 || d[n-1].Type != cache.Deleted || d[n-2].Type != cache.Deleted {
		return d
	}
	if _, older := d[n-2].Object.(cache.DeletedFinalStateUnknown); older {
		d[n-2] = d[n-1]
	}
	d[n-1] = cache.Delta{}
	return d[:n-1]
}

// Bookmark records resourceVersion as a resume point with no object change
// and queues a bookmark entry for it, or, when the last queue entry is a
// bookmark already, moves that one forward.
func (f *DeltaFIFO) Bookmark(resourceVersion string) error {
	if resourceVersion == "" {
		return fmt.Errorf("deltafifo: bookmark: empty resourceVersion: %w", ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("bookmark")
	}
	f.arriveLocked(resourceVersion)
	f.queueBookmarkLocked(resourceVersion)
	return nil
}

// An entry for rv "" (an empty relist without a resourceVersion) pops as a
// batch without deltas; it never replaces a queued bookmark's
// resourceVersion.
func (f *DeltaFIFO) queueBookmarkLocked(rv string) {
	if last := f.queue.back(); last != nil && last.bookmark {
		if rv != "" {
			last.rv = rv
		}
		return
	}
	f.queue.push(queueEntry{bookmark: true, rv: rv})
	f.cond.Broadcast()
}

// Replace queues a relist: a Replaced (or Sync, per
// Options.EmitDeltaTypeReplaced) delta for every listed object, and a Deleted
// delta carrying a cache.DeletedFinalStateUnknown for every key that is
// queued or known but not listed; the tombstone's Obj is the newest queued
// object, else the known object, never nil (a known key whose object is gone
// by the time it is looked up is skipped). A key-function or transformer
// error on any item, or a KnownObjects lookup error, leaves the queue
// unchanged. See DeltaFIFO for how the list resourceVersion becomes the
// resume point.
func (f *DeltaFIFO) Replace(list []interface{}, resourceVersion string) error {
	keys, objs, listed, err := prepareList(&f.opts, list)
	if err != nil {
		return err
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("replace")
	}

	// Plan every deletion before changing anything, so that a lookup error
	// leaves the queue as it was.
	var gone []cache.DeletedFinalStateUnknown
	for e := range f.queue.all() {
		if e.bookmark {
			continue
		}
		if _, ok := listed[e.key]; ok {
			continue
		}
		newest := f.items[e.key].deltas.Newest().Object
		gone = append(gone, cache.DeletedFinalStateUnknown{Key: e.key, Obj: unwrapTombstone(newest)})
	}
	if known := f.opts.KnownObjects; known != nil {
		err := eachKnown("replace", known, func(k string) bool {
			_, isListed := listed[k]
			_, queued := f.items[k]
			return isListed || queued
		}, func(k string, obj interface{}) {
			gone = append(gone, cache.DeletedFinalStateUnknown{Key: k, Obj: unwrapTombstone(obj)})
		})
		if err != nil {
			return err
		}
	}

	// The whole relist is one event: one sequence number for all its deltas,
	// so its resourceVersion waits for every one of its keys.
	seq := f.arriveLocked(resourceVersion)
	f.relistSeq, f.relisted, f.relistOpen = seq, true, true
	typ := f.opts.replacedType()
	for i, obj := range objs {
		f.appendLocked(keys[i], seq, cache.Delta{Type: typ, Object: obj})
	}
	for _, d := range gone {
		f.appendLocked(d.Key, seq, cache.Delta{Type: cache.Deleted, Object: d})
	}
	if len(objs) == 0 && len(gone) == 0 {
		// Nothing will be popped for this relist; let a bookmark entry carry
		// its resourceVersion, and its end (Batch.RelistDone).
		f.queueBookmarkLocked(resourceVersion)
	}
	if !f.populated {
		// As client-go's: the keys the first Replace queued (objects and
		// deletions, and keys queued before it), not the bookmark entry
		// of an empty one, whose popping holds nothing to apply. An
		// empty first Replace thus syncs at once.
		f.populated = true
		f.initialCount = 0
		for e := range f.queue.all() {
			if !e.bookmark {
				f.initialCount++
			}
		}
	}
	return nil
}

// Resync queues a Sync delta with the known object for every KnownObjects
// key that has nothing queued (a queued delta carries a newer state). It
// does nothing when KnownObjects is nil. A KnownObjects lookup error leaves
// the queue unchanged.
func (f *DeltaFIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("resync")
	}
	known := f.opts.KnownObjects
	if known == nil {
		return nil
	}
	var keys []string
	var objs []interface{}
	err := eachKnown("resync", known, func(k string) bool {
		_, queued := f.items[k]
		return queued
	}, func(k string, obj interface{}) {
		keys = append(keys, k)
		objs = append(objs, obj)
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	seq := f.arriveLocked("")
	for i, k := range keys {
		f.appendLocked(k, seq, cache.Delta{Type: cache.Sync, Object: objs[i]})
	}
	return nil
}

// Pop waits for a queued key (or bookmark) and hands process its deltas,
// oldest first, with the watermark they bring (see DeltaFIFO). process runs
// with the queue locked and receives ctx; it must not call the queue's
// methods, which would wait for the lock it holds. The deltas are consumed
// whether or not process fails; its error is returned.
func (f *DeltaFIFO) Pop(ctx context.Context, process PopFunc) error {
	if process == nil {
		return fmt.Errorf("deltafifo: pop: nil PopFunc: %w", ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.waitLocked(ctx, func() bool { return f.queue.len() > 0 }); err != nil {
		return err
	}

	b := Batch{InInitialList: !f.syncedLocked()}
	e := *f.queue.at(0)
	f.queue.drop(1)
	switch {
	case e.bookmark && e.rv == "":
		// The end of an empty relist without a resourceVersion: nothing to
		// apply, only RelistDone to hand out.
	case e.bookmark:
		b.Deltas = cache.Deltas{{Type: cache.Bookmark, Object: cache.BookmarkInfo{ResourceVersion: e.rv}}}
	default:
		b.Deltas = f.items[e.key].deltas
		delete(f.items, e.key)
	}
	var oldest uint64
	b.ResourceVersion, oldest = f.advanceLocked()
	b.RelistPending = f.relisted && oldest <= f.relistSeq
	if f.relistOpen && !b.RelistPending {
		b.RelistDone, f.relistOpen = true, false
	}
	// Events are numbered from 0: every one numbered below oldest is out.
	b.HandedOut = oldest
	err := process(ctx, b)
	if f.initialCount > 0 && !e.bookmark {
		// After processing, as client-go's RealFIFO: HasSynced must not turn
		// true while the initial list is still being applied.
		f.initialCount--
	}
	return err
}

// advanceLocked moves the watermark past every event older than the oldest
// still-queued key and returns the newest resourceVersion it passed, or ""
// if it did not move, and the first sequence number of the oldest queued
// key (nextSeq if none). An event older than the oldest queued key's first
// event is popped: a key's events all pop together, so an unpopped event
// would keep its key queued with a firstSeq no larger than its own.
// Bookmark entries hold nothing to apply and do not hold the watermark back.
func (f *DeltaFIFO) advanceLocked() (rv string, oldest uint64) {
	oldest = f.nextSeq
	for e := range f.queue.all() {
		if !e.bookmark {
			oldest = f.items[e.key].firstSeq
			break
		}
	}
	i := 0
	for r := range f.rvs.all() {
		if r.seq >= oldest {
			break
		}
		rv = r.rv
		i++
	}
	f.rvs.drop(i)
	return rv, oldest
}

// Arrived returns the number of events queued so far, each counted once
// whether or not it is still queued (a delete of an unknown key is counted
// and dropped at once).
func (f *DeltaFIFO) Arrived() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextSeq
}

func (f *DeltaFIFO) syncedLocked() bool {
	return f.populated && f.initialCount == 0
}

// HasSynced reports whether the entries queued by the first Replace have all
// been popped and processed (at once when it queued none), or an Add,
// Update or Delete came before any Replace, as in client-go.
func (f *DeltaFIFO) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncedLocked()
}

// List returns the newest queued object of every queued key, in pop order.
func (f *DeltaFIFO) List() []interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]interface{}, 0, len(f.items))
	for e := range f.queue.all() {
		if !e.bookmark {
			out = append(out, f.items[e.key].deltas.Newest().Object)
		}
	}
	return out
}

// ListKeys returns the queued keys, in pop order.
func (f *DeltaFIFO) ListKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.items))
	for e := range f.queue.all() {
		if !e.bookmark {
			out = append(out, e.key)
		}
	}
	return out
}

// Get returns a copy of the queued cache.Deltas of obj's key.
func (f *DeltaFIFO) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := keyOf("get", f.opts.KeyFunction, obj)
	if err != nil {
		return nil, false, err
	}
	return f.GetByKey(key)
}

// GetByKey returns a copy of the queued cache.Deltas of key. With Get, it
// returns interface{} as client-go's does, so a DeltaFIFO is a
// cache.KeyGetter.
func (f *DeltaFIFO) GetByKey(key string) (item interface{}, exists bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.items[key]
	if !ok {
		return nil, false, nil
	}
	// A copy: appends by writers must not show through the caller's slice.
	return append(cache.Deltas(nil), p.deltas...), true, nil
}

// Len returns the number of queued entries: keys, plus bookmark entries.
// Zero means Pop would block.
func (f *DeltaFIFO) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue.len()
}
