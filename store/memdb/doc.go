// Package memdb is the informerdb backend on hashicorp/go-memdb: an in-memory
// database of immutable radix trees, in which every read sees a consistent
// snapshot while writes continue. Import it for its side effect of
// registering the memdb:// scheme, or call New.
//
// Objects, their index entries and the resume point are rows of three tables
// of a fixed schema: objects by key, index entries by (index name, value,
// key), and one meta row holding the resume point and the index set. A write
// is one go-memdb write transaction over all three, so a reader never sees
// objects without their index entries, nor a resume point ahead of the
// objects it describes. AddIndexers adds entry rows in one transaction.
//
// Those snapshot reads are this backend's point, so it keeps its own read
// path (Get, List, ByIndex, ...) on go-memdb's read transactions rather
// than package indexer's shared one.
//
// # URLs, files and durability
//
//	memdb://                                   a store that lives as long as the process
//	memdb:///abs/path/cache.snap               loaded from the file on Open, saved on Close
//	memdb:///abs/path/cache.snap?snapshot_interval=30s   also saved every 30s
//
// Everything about files is as package store/memory documents it, memdb://
// for memory://: the parameters, the snapshot file of any number of stores,
// its lock, Options.Codec being required, what survives a crash, and that
// Options.Durability does not apply. [New] is the direct constructor of a
// store without a file. One difference: each store's section of a snapshot
// is read from one read transaction, so its objects and resume point are
// those of one commit, but the stores of one file are not snapshotted at
// one common instant.
//
// # Concurrency
//
// Stores are safe for concurrent use. Every read runs on the go-memdb read
// transaction of the last commit: List and ListKeys return the objects of
// exactly one committed state even while writes continue, and ByIndex,
// IndexKeys, Index and ListIndexFuncValues read the index entries and index
// set of that one state. Two calls may see different states. Writes are
// serialized; key and index functions (and, in file mode, encoding) run
// before a write takes its lock. Snapshots and Export (with Options.Codec)
// run on read transactions and block neither reads nor commits. Objects are
// stored as given, not copied (see store.Store).
//
// # Errors
//
// As package store and package indexer state them; file errors are the
// memory backend's.
//
// # Caveats
//
//   - Every snapshot rewrites the whole file, and file mode keeps each
//     object's encoding besides the decoded object.
//   - Reads are slower than the memory backend's (a radix tree walk and
//     go-memdb's per-lookup allocations against one map lookup), and each
//     put rewrites its object row and all its index entry rows, which carry
//     the object so that ByIndex needs no second lookup; BENCHMARKS.md has
//     the measurements. Pick the memory backend for speed, this one for
//     reads that must see one consistent state.
package memdb
