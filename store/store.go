package store

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

// Store is a cache.Indexer whose objects, index entries and resume point are
// kept by a backend. Implementations are safe for concurrent use.
//
// Reads return the stored objects themselves where the backend keeps them
// decoded, as client-go's indexer does: callers must treat them as read-only.
//
// Add, Update and Delete each commit on their own and leave the resume point
// unchanged. Replace replaces the whole contents and sets the resume point
// in one commit; Replace(list, ""), like Batch.ResourceVersion "" and
// Bookmark(""), leaves it unchanged. Commit applies a batch atomically.
// Every write validates its whole input (keys, index values, encodings)
// before changing anything: a write that returns an error has left the
// store as it was.
//
// LastStoreSyncResourceVersion is the resourceVersion the store has seen,
// moved as client-go's store moves it: Add, Update and Delete set it to
// their object's resourceVersion when the object has metadata; Replace and
// Bookmark to their resourceVersion, "" included; Commit to its last op's
// object's (when it has metadata), then to Batch.ResourceVersion unless
// that is empty or Batch.ResumeOnly is set. It is not persisted (a store
// opened again starts from its resume point), and never ahead of what
// reads return.
//
// Keys are never empty, on every backend alike: a write whose key (Op.Key,
// or the key function's result) is "" fails with an error wrapping
// ErrInvalid that says "empty key" (see store/driver.CheckKey), deletes
// included. Get and GetByKey of "" find nothing and return no error.
type Store interface {
	cache.Indexer

	// ResourceVersion returns the persisted resume point: every watch event
	// at or before it is reflected in the store. It is "" when the store
	// has never been synced, was reset, or must be relisted.
	ResourceVersion() string

	// Commit applies b atomically: either every operation and the new resume
	// point are stored, or none is.
	Commit(ctx context.Context, b Batch) error

	// Info describes what the store holds.
	Info() Info

	// Close releases the store; it is idempotent. Every method called
	// after it returns ErrClosed, or empty values without an error result.
	Close() error
}

// OpType says what an Op does.
type OpType uint8

const (
	// OpPut adds the object, or replaces the object stored under its key.
	OpPut OpType = iota + 1
	// OpDelete removes the object stored under the key (a no-op when absent).
	OpDelete
)

func (t OpType) String() string {
	switch t {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	}
	return "unknown"
}

// Op is one change inside a Batch.
type Op struct {
	Type OpType
	// Object is the object to put or delete. For OpDelete it may be nil
	// when Key is set, or a cache.DeletedFinalStateUnknown.
	Object interface{}
	// Key, when not empty, overrides the key function, which otherwise
	// must yield a non-empty key for Object.
	Key string
}

// Batch is a group of changes committed atomically with the resume point they
// lead to.
type Batch struct {
	Ops []Op
	// ResourceVersion is the resume point stored with Ops. Empty leaves the
	// current resume point unchanged.
	ResourceVersion string
	// ResumeOnly says ResourceVersion moves the resume point only, not
	// LastStoreSyncResourceVersion (see Store): the informer sets it when
	// a transform left the batch's newest object without metadata, where
	// client-go's informer keeps the resourceVersion it had seen.
	ResumeOnly bool
}

// Info describes a store: its identity, recorded in the backend's metadata,
// and its resume point.
type Info struct {
	Backend       string // the backend's URL scheme ("bolt", "memory", ...)
	Name          string // the store's name inside its database
	FormatVersion int    // the on-disk format of the store's records
	// Codec and Type identify how objects are encoded and of what type.
	Codec string
	Type  string
	// KeyFunc names the key function the keys were made with.
	KeyFunc string
	// Scope is the fingerprint of what the informer caches (Options.Scope).
	Scope           string
	Indexes         []string // the names of the indexes kept, sorted
	ResourceVersion string   // the resume point
	// Reset says why the store was emptied when it was opened (a changed
	// scope, a relist marker left by a commit that did not finish), or is
	// empty if it was not. A reset store has no resume point.
	Reset string
}
