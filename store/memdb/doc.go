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
// Reads are slower than client-go's indexer (a radix tree walk and a few
// allocations per Get instead of a map lookup), and every write allocates
// new tree nodes; see the benchmarks. Pick the memory backend for speed, this
// one for reads that must see one consistent state.
package memdb
