package informer

import (
	"sync"

	"github.com/informerdb/informerdb/store"
)

// view is what the queue sees as the informer's known objects: the store,
// overlaid with the batches popped but not committed yet, which a relist
// or a resync queued meanwhile must see.
//
// view is safe for concurrent use.
type view struct {
	s store.Store

	mu      sync.Mutex // guards pending, grown and seq
	pending map[string]pendingEntry
	// grown says pending held bigPending keys since it was made: once
	// drained it is made anew, as Go maps never shrink.
	grown bool
	seq   uint64
}

// bigPending is the number of pending keys, a relist's rather than a
// group commit's, from which the view sizes its map in advance (reserve)
// and makes it anew once drained.
const bigPending = 1 << 14

// pendingEntry is the newest uncommitted state of a key.
type pendingEntry struct {
	obj     interface{} // nil when deleted
	present bool
	seq     uint64 // which write made it, so a commit clears only its own
}

func newView(s store.Store) *view {
	return &view{s: s, pending: map[string]pendingEntry{}}
}

// GetByKey returns the newest state of key, committed or not.
func (v *view) GetByKey(key string) (interface{}, bool, error) {
	v.mu.Lock()
	e, ok := v.pending[key]
	v.mu.Unlock()
	if ok {
		return e.obj, e.present, nil
	}
	return v.s.GetByKey(key)
}

// ListKeys returns the keys present, committed or not.
func (v *view) ListKeys() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	keys := v.s.ListKeys()
	if len(v.pending) == 0 {
		return keys
	}
	// Pending keys are told apart by this one listing, not by asking the
	// store again: a commit landing between two reads could hide a key.
	out := keys[:0:0]
	listed := make(map[string]bool, len(v.pending))
	for _, k := range keys {
		if e, ok := v.pending[k]; ok {
			listed[k] = true
			if !e.present {
				continue
			}
		}
		out = append(out, k)
	}
	for k, e := range v.pending {
		if e.present && !listed[k] {
			out = append(out, k)
		}
	}
	return out
}

// reserve makes room for n pending keys when none is pending and n is a
// relist's, rather than grow the map key by key.
func (v *view) reserve(n int) {
	if n < bigPending {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.pending) == 0 {
		v.pending = make(map[string]pendingEntry, n)
		v.grown = true
	}
}

// set records an uncommitted state of key and returns its sequence number.
func (v *view) set(key string, obj interface{}, present bool) uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	v.pending[key] = pendingEntry{obj: obj, present: present, seq: v.seq}
	if len(v.pending) == bigPending {
		v.grown = true
	}
	return v.seq
}

// committed forgets the pending states of ops's keys written at or before
// upTo, which the store holds now; those of later groups stay.
func (v *view) committed(ops []store.Op, upTo uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range ops {
		k := ops[i].Key
		if e, ok := v.pending[k]; ok && e.seq <= upTo {
			delete(v.pending, k)
		}
	}
	if len(v.pending) == 0 && v.grown {
		v.pending, v.grown = map[string]pendingEntry{}, false
	}
}

// isPending reports whether key has an uncommitted state.
func (v *view) isPending(key string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.pending[key]
	return ok
}
