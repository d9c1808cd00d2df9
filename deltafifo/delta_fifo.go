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
	// touched this key since it was last popped; keys enter the pop order
	// in firstSeq order, which makes the watermark cheap to compute.
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
// Grouping per key reorders events, so Batch.ResourceVersion is a watermark
// (DESIGN invariant 1): the resourceVersion of the newest event that, with
// every event that arrived before it, has been popped, found by arrival
// sequence numbers, never by comparing resourceVersions. A key popped ahead
// of the watermark holds a newer state than the resume point describes: after
// a crash then, the resumed watch replays its events, and handlers may see it
// go back to older states until the replay catches up. FIFO has no such
// window.
//
// # Relists
//
// A relist is handed out key by key (see Batch.RelistPending and
// Batch.RelistDone). Its resourceVersion becomes the watermark only once
// every key it touched (every key queued when it arrives) has been popped.
//
// # Bookmarks
//
// Bookmark queues an entry of its own (consecutive bookmarks coalesce) that
// pops as a batch with one cache.Bookmark delta. A Replace that queues
// nothing queues such an entry with the list resourceVersion, or, without
// one (a resource the server stopped serving), an entry that pops as a
// batch without deltas, so that Batch.RelistDone still reaches the
// consumer. A Delete dropped because its key is neither queued nor known
// queues nothing; its resourceVersion reaches the consumer with the next
// pop.
//
// A DeltaFIFO is safe for concurrent use; the intended use is one writer and
// one popper.
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
	f := &DeltaFIFO{items: make(map[string]pending)}
	f.init(options)
	return f
}

// Add queues an Added delta for obj's key.
func (f *DeltaFIFO) Add(obj interface{}) error { return f.event("add", cache.Added, obj) }

// Update queues an Updated delta for obj's key.
func (f *DeltaFIFO) Update(obj interface{}) error { return f.event("update", cache.Updated, obj) }

// Delete queues a Deleted delta for obj's key, unless the key is neither
// queued nor known, as in client-go: a relist presumably deleted it
// already.
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

// dedupDeletes collapses two trailing Deleted deltas, which watch and relist
// can both report, into one, keeping the real object over a tombstone.
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

// Replace queues a relist: a Replaced (or Sync) delta for every listed
// object, and a Deleted delta carrying a cache.DeletedFinalStateUnknown for
// every key queued or known but not listed, whose Obj is the newest queued
// object, else the known one. A key-function or transformer error on any
// item, or a KnownObjects lookup error, leaves the queue unchanged. See
// DeltaFIFO for how the list resourceVersion becomes the resume point.
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
		if _, ok := listed[e.key]; !e.bookmark && !ok {
			gone = append(gone, tombstone(e.key, f.items[e.key].deltas.Newest().Object))
		}
	}
	known, knownObjs, err := f.knownLocked("replace", func(k string) bool {
		_, isListed := listed[k]
		_, queued := f.items[k]
		return isListed || queued
	})
	if err != nil {
		return err
	}
	for i, k := range known {
		gone = append(gone, tombstone(k, knownObjs[i]))
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
		// As client-go's: the keys queued when the first Replace is, not
		// bookmark entries, so that an empty first Replace syncs at once.
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
// key that has nothing queued (a queued delta carries a newer state). A
// KnownObjects lookup error leaves the queue unchanged.
func (f *DeltaFIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return closedError("resync")
	}
	keys, objs, err := f.knownLocked("resync", func(k string) bool {
		_, queued := f.items[k]
		return queued
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
// oldest first, with the watermark they bring (see DeltaFIFO, and PopFunc
// and the package Concurrency for process).
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
		// The end of an empty relist without a resourceVersion: only
		// RelistDone to hand out.
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
		// After processing, as in client-go (see FIFO.Pop).
		f.initialCount--
	}
	return err
}

// advanceLocked moves the watermark past every event older than the oldest
// still-queued key and returns the newest resourceVersion it passed ("" if
// it did not move), and the first sequence number of the oldest queued key
// (nextSeq if none). Such events are popped: an unpopped event would keep
// its key queued with a firstSeq no larger than its own. Bookmark entries
// do not hold the watermark back.
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

// Arrived implements Queue; a delete of an unknown key is counted and
// dropped at once.
func (f *DeltaFIFO) Arrived() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextSeq
}

func (f *DeltaFIFO) syncedLocked() bool {
	return f.populated && f.initialCount == 0
}

// HasSynced implements Queue.
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

// GetByKey returns a copy of the queued cache.Deltas of key, as
// interface{} so that a DeltaFIFO is a cache.KeyGetter, as client-go's.
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
