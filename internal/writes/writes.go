// Package writes maps the write methods of store.Store onto one commit
// function, for every store implementation of this module alike, and holds
// the resourceVersion a store has seen (LastStoreSyncResourceVersion).
package writes

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store"
)

// Func applies ops and, when rv is not empty, the resume point in one
// commit; with replace, ops are the complete new contents. op names the
// operation for errors ("add", "commit", ...). Once the write is visible to
// reads, and before another write starts, it moves the store's Seen by
// rule (Seen.After).
type Func func(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule Rule) error

// Writes implements the write methods of store.Store (Commit, and Add,
// Update, Delete, Replace and Bookmark of cache.Store) over one Func,
// so that every store maps them onto its commit the same way, and
// LastStoreSyncResourceVersion from the store's Seen. Embed it. It is safe
// for concurrent use if its Func is.
type Writes struct {
	write Func
	seen  *Seen
	name  string // the store's name, for logs
}

// New returns the write methods of the store named name over write, whose
// writes move seen.
func New(name string, write Func, seen *Seen) Writes {
	return Writes{write: write, seen: seen, name: name}
}

// Commit implements store.Store.
func (w Writes) Commit(ctx context.Context, batch store.Batch) error {
	return w.write(ctx, "commit", batch.Ops, batch.ResourceVersion, false, CommitRule(batch))
}

// Add implements cache.Store.
func (w Writes) Add(obj interface{}) error {
	return w.write(context.Background(), "add", []store.Op{{Type: store.OpPut, Object: obj}}, "", false, SeenObjects)
}

// Update implements cache.Store.
func (w Writes) Update(obj interface{}) error {
	return w.write(context.Background(), "update", []store.Op{{Type: store.OpPut, Object: obj}}, "", false, SeenObjects)
}

// Delete implements cache.Store.
func (w Writes) Delete(obj interface{}) error {
	return w.write(context.Background(), "delete", []store.Op{{Type: store.OpDelete, Object: obj}}, "", false, SeenObjects)
}

// Replace implements cache.Store: the contents become list and the resume
// point resourceVersion, in one commit.
func (w Writes) Replace(list []interface{}, resourceVersion string) error {
	ops := make([]store.Op, len(list))
	for i, obj := range list {
		ops[i] = store.Op{Type: store.OpPut, Object: obj}
	}
	return w.write(context.Background(), "replace", ops, resourceVersion, true, SeenRV)
}

// Bookmark implements cache.Store: it persists rv as the resume point. The
// interface has no error result; a failure is logged and leaves the resume
// point behind, which is safe. Bookmark("") persists nothing and, as in
// client-go, makes LastStoreSyncResourceVersion "".
func (w Writes) Bookmark(rv string) {
	if rv == "" {
		w.seen.Store("")
		return
	}
	if err := w.write(context.Background(), "bookmark", nil, rv, false, SeenRV); err != nil {
		klog.Background().Error(err, "Persisting bookmark failed; the resume point stays behind", "store", w.name, "resourceVersion", rv)
	}
}

// ResourceVersion implements store.Store: the resume point (Seen.Resume).
func (w Writes) ResourceVersion() string { return w.seen.Resume() }

// LastStoreSyncResourceVersion implements cache.Store: the resourceVersion
// the store has seen (see store.Store).
func (w Writes) LastStoreSyncResourceVersion() string { return w.seen.Load() }
