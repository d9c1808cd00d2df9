package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store"
)

// tombstones keeps the deletes that a handler added after the informer
// started must still hear of (DESIGN invariant 4): controller-runtime's
// builder adds its handlers only once the informer has synced, by when the
// deletes made while the process was down have been applied and notified to
// nobody. Every object deleted from the informer's start until
// Options.TombstoneRetention after it synced is kept here, with the last
// state the informer had of it, and handed to each handler added later as
// OnDelete(cache.DeletedFinalStateUnknown), before its initial adds.
//
// Where Options.Tombstones names a store, each tombstone is persisted there
// before its delete is committed (see Options.Tombstones).
type tombstones struct {
	// byKey holds the last state of each object deleted in the window, by
	// key; closed is set when the window ends, and nothing is recorded
	// after; afterSync counts what was recorded after the informer synced,
	// which Options.MaxTombstones bounds. All of them are guarded by the
	// informer's applyMu, under which handlers are added and commits
	// notified, so that a handler added meanwhile hears of a delete either
	// from its commit's notifications or from here, exactly once.
	byKey     map[string]interface{}
	closed    bool
	afterSync int
	max       int
	capLogged bool

	// The window ends retention after syncedAt (Unix nanoseconds on now's
	// clock; 0 before the sync). It is checked when tombstones are used,
	// so that no timer waits on the informer's clock.
	retention time.Duration
	now       func() time.Time
	syncedAt  atomic.Int64

	// st persists the tombstones, or is nil. mu serializes its writes and
	// guards stClosed: once the window ends nothing is written to st.
	st       store.Store
	mu       sync.Mutex
	stClosed bool
}

func newTombstones(st store.Store, o Options) *tombstones {
	disabled := o.TombstoneRetention < 0
	return &tombstones{
		byKey: map[string]interface{}{}, st: st, max: o.MaxTombstones,
		retention: o.TombstoneRetention, now: o.Clock.Now,
		closed: disabled, stClosed: disabled,
	}
}

// synced starts the retention.
func (t *tombstones) synced() { t.syncedAt.Store(t.now().UnixNano()) }

// expired reports whether the retention has passed since the sync.
func (t *tombstones) expired() bool {
	at := t.syncedAt.Load()
	return at != 0 && t.now().Sub(time.Unix(0, at)) >= t.retention
}

// openLocked reports whether the window is open, closing it if the
// retention has passed: the tombstones are dropped from memory. The
// caller holds applyMu.
func (t *tombstones) openLocked() bool {
	if !t.closed && t.expired() {
		t.closed = true
		t.byKey = nil
	}
	return !t.closed
}

// load reads the tombstones persisted by an earlier run whose window did
// not end (the process died, or stopped, first): their deletes may have
// reached no handler. A tombstone whose key the informer's store holds
// with the same object (same UID) records a delete whose own commit never
// happened: the watch brings it again, and it is dropped. When the
// informer's store was emptied as it opened (scope change, damage), its
// objects were never replayed to anyone, and every tombstone is dropped.
// It runs at start, before the handlers registered then are replayed to.
func (t *tombstones) load(ctx context.Context, logger klog.Logger, main store.Store) {
	if t.st == nil || t.closed {
		return
	}
	var stale []store.Op
	reset := main.Info().Reset != ""
	for _, key := range t.st.ListKeys() {
		obj, ok, err := t.st.GetByKey(key)
		if err != nil || !ok {
			if err != nil {
				logger.Error(err, "Reading a persisted tombstone failed; dropping it", "key", key)
			}
			stale = append(stale, store.Op{Type: store.OpDelete, Key: key})
			continue
		}
		if cur, exists, err := main.GetByKey(key); reset || err == nil && exists && sameUID(cur, obj) {
			stale = append(stale, store.Op{Type: store.OpDelete, Key: key})
			continue
		}
		t.byKey[key] = obj
	}
	if len(stale) > 0 {
		t.mu.Lock()
		defer t.mu.Unlock()
		if err := t.st.Commit(ctx, store.Batch{Ops: stale}); err != nil {
			logger.Error(err, "Dropping stale tombstones failed; they are dropped at the next start", "tombstones", len(stale))
		}
	}
	if len(t.byKey) > 0 {
		logger.V(2).Info("Deletes of an earlier run kept for handlers", "tombstones", len(t.byKey))
	}
}

// notesLocked returns one OnDelete(cache.DeletedFinalStateUnknown) per
// tombstone, in key order. The caller holds applyMu.
func (t *tombstones) notesLocked() []queuedNote {
	if !t.openLocked() || len(t.byKey) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t.byKey))
	for k := range t.byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	notes := make([]queuedNote, len(keys))
	for i, k := range keys {
		notes[i] = queuedNote{n: notification{kind: notifyDelete, oldObj: cache.DeletedFinalStateUnknown{Key: k, Obj: t.byKey[k]}}, op: -1}
	}
	return notes
}

// deletesOf calls f with the key and the deleted object (a tombstone's
// Obj) of every delete pc notifies, except those of the operations in
// rejected.
func deletesOf(pc *pendingCommit, rejected map[int]bool, f func(key string, obj interface{})) {
	for _, qn := range pc.notes {
		if qn.n.kind != notifyDelete || qn.op < 0 || rejected[qn.op] {
			continue
		}
		obj := qn.n.oldObj
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if obj != nil {
			f(pc.ops[qn.op].Key, obj)
		}
	}
}

// persist commits to the tombstone store the deletes of pc that the
// informer is about to commit (all but the operations in rejected), before
// that commit. A failure fails the commit, which is retried, except when
// the tombstone store rejects an object as invalid: that delete is then
// only remembered in memory, and logged.
func (t *tombstones) persist(ctx context.Context, logger klog.Logger, pc *pendingCommit, rejected map[int]bool) error {
	if t.st == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stClosed && t.expired() {
		// The retention is over: the tombstone store is emptied by the
		// first commit after it.
		t.emptyStoreLocked(ctx, logger)
	}
	if t.stClosed {
		return nil
	}
	var ops []store.Op
	deletesOf(pc, rejected, func(key string, obj interface{}) {
		ops = append(ops, store.Op{Type: store.OpPut, Object: obj, Key: key})
	})
	if len(ops) == 0 {
		return nil
	}
	err := t.st.Commit(ctx, store.Batch{Ops: ops})
	if errors.Is(err, store.ErrInvalid) {
		logger.Error(err, "The tombstone store rejected a delete; a crash before handlers added late hear of it loses it for them", "tombstones", len(ops))
		return nil
	}
	if err != nil {
		return fmt.Errorf("informer: persisting tombstones: %w", err)
	}
	return nil
}

// recordLocked remembers the deletes notified for a committed pc. The
// caller holds applyMu.
func (t *tombstones) recordLocked(logger klog.Logger, pc *pendingCommit, rejected map[int]bool, synced bool) {
	if !t.openLocked() {
		return
	}
	deletesOf(pc, rejected, func(key string, obj interface{}) {
		if _, had := t.byKey[key]; !had && synced {
			// Before the sync every delete is kept: those made while the
			// process was down, bounded by what the store held. Later
			// ones are live deletes, which handlers added before them
			// heard of; a bound keeps a fast-churning resource from
			// filling memory with them.
			if t.afterSync >= t.max {
				if !t.capLogged {
					t.capLogged = true
					logger.Error(nil, "Too many deletes since the informer synced to keep for handlers added later; handlers added from now on miss the newer ones", "maxTombstones", t.max)
				}
				return
			}
			t.afterSync++
		}
		t.byKey[key] = obj
	})
}

// emptyStoreLocked empties the tombstone store and writes nothing to it
// from then on. The caller holds mu.
func (t *tombstones) emptyStoreLocked(ctx context.Context, logger klog.Logger) {
	t.stClosed = true
	keys := t.st.ListKeys()
	if len(keys) == 0 {
		return
	}
	ops := make([]store.Op, len(keys))
	for i, k := range keys {
		ops[i] = store.Op{Type: store.OpDelete, Key: k}
	}
	if err := t.st.Commit(ctx, store.Batch{Ops: ops}); err != nil && ctx.Err() == nil {
		// Kept, they are handed once more to the handlers of the next
		// run: a duplicate delete, not a lost one.
		logger.Error(err, "Emptying the tombstone store failed; its tombstones reach handlers again after the next restart", "tombstones", len(keys))
	}
}

// dropPersisted empties the tombstone store when the informer stops (its
// context ended) after it synced and every handler it had was handed every
// notification: they heard of every delete, and the handlers of the next
// run must not hear of them again. A crash, a stop before the sync, or
// with no handler, or with notifications still queued, keeps them.
func (t *tombstones) dropPersisted(logger klog.Logger) {
	if t.st == nil {
		return
	}
	// Run's context has ended: a bound of its own.
	ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
	defer cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emptyStoreLocked(ctx, logger)
}

// dropTimeout bounds the commit that empties the tombstone store at stop.
const dropTimeout = 10 * time.Second

// sameUID reports whether a and b are the same object: both have object
// metadata and the same UID (or none).
func sameUID(a, b interface{}) bool {
	ua, ub, ok := uids(a, b)
	return ok && ua == ub
}

// uids returns the UIDs of a and b; ok is false if either has no object
// metadata.
func uids(a, b interface{}) (ua, ub types.UID, ok bool) {
	ma, err := meta.Accessor(a)
	if err != nil {
		return "", "", false
	}
	mb, err := meta.Accessor(b)
	if err != nil {
		return "", "", false
	}
	return ma.GetUID(), mb.GetUID(), true
}
