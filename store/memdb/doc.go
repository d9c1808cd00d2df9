// Package memdb is the informerdb backend on hashicorp/go-memdb: an in-memory
// database of immutable radix trees, in which every read sees a consistent
// snapshot while writes continue. Import it for its side effect of
// registering the memdb:// scheme, or call New.
//
// Objects, their index entries and the resume point are rows of three tables
// of a fixed schema (go-memdb validates a schema once and cannot change it):
// objects by key, index entries by (index name, value, key), and one meta row
// holding the resume point and the index set. A write is one go-memdb write
// transaction over all three, so a reader never sees objects without their
// index entries, nor a resume point ahead of the objects it describes.
// AddIndexers needs no schema change: it adds entry rows for every object in
// one transaction.
//
// # URLs
//
//	memdb://            a store that lives as long as the process
//
// No query parameter is accepted; an unknown one is an error wrapping
// store.ErrInvalid, and so is a host or a path.
//
// # Durability
//
// None: the store is in memory only. Nothing survives the process, the resume
// point included, so the informer lists again on start. Options.Durability
// is accepted and has no effect.
//
// # Concurrency
//
// Stores are safe for concurrent use. Every read (Get, List, ByIndex, ...)
// runs in its own go-memdb read transaction: List and ListKeys return the
// objects of exactly one committed state even while writes continue, and
// ByIndex, IndexKeys, Index and ListIndexFuncValues read the index entries and
// index set of that one state. Two calls may see different states. Writes are
// serialized by go-memdb's writer lock; key and index functions run before it
// is taken.
//
// Objects are stored as given, not copied: callers must treat objects they
// stored or read as read-only, as with client-go's indexer.
//
// Stores implement store.Exporter when opened with Options.Codec: Export
// encodes the objects of one read transaction and returns the resume point
// of that same transaction, while writes go on.
//
// # Errors
//
// See package store. Bad input (nil objects, key and index function errors
// and panics) returns an error wrapping store.ErrInvalid that names the
// operation, and leaves the store unchanged. An unknown index is
// store.ErrNotFound, a taken index name store.ErrIndexExists, and every
// method of a closed store returns store.ErrClosed (methods without an error
// result return empty values).
//
// # Caveats
//
// This backend trades speed for snapshot reads. A Get is a radix tree walk
// plus go-memdb's per-transaction allocations (about 2.5 us and 6
// allocations, against 60 ns for client-go's map). Writes copy the radix
// nodes on the path to every changed row: each put rewrites its object row
// and all its index entry rows, because entries carry the object so that
// ByIndex needs no second lookup. Expect tens of microseconds per object;
// batching writes in one Commit shares the copies of upper nodes. Pick the
// memory backend for speed, this one for reads that must see one consistent
// state.
package memdb
