// Package bolt is the informerdb backend over go.etcd.io/bbolt: one file
// holding any number of named stores (one per resource), each with its own
// objects, index entries and resume point. Import it for its side effect of
// registering the bolt:// scheme, or call [Open].
//
// # URLs
//
//	bolt:///var/lib/ctrl/cache.db                  default mode: every object decoded in memory
//	bolt:///var/lib/ctrl/cache.db?cache=1000       bounded mode: at most 1000 decoded objects
//	bolt:///var/lib/ctrl/cache.db?durability=nosync&lock_timeout=10s
//
// The path must be absolute (three slashes). A missing file is created with
// mode 0600, a missing directory with 0700. Parameters: durability (sync or
// nosync), lock_timeout (how long to wait for a file another process holds)
// and cache (the bounded mode's size; 0, the default, keeps every object
// decoded). Any other parameter is an error.
//
// Each store lives in its own bucket, named by Options.Name (any string of
// at most 1 KiB).
// The process keeps one bbolt database per file, shared by the stores opened
// on it and closed with the last of them. Opening a store name that is
// already open in the process fails with store.ErrInUse until it is closed.
//
// In the default mode, reads are served from decoded objects in memory, as
// fast as client-go's indexer, and opening a store decodes every object (in
// parallel). In the bounded mode (Options.CacheSize or cache=N), at most N
// recently used objects stay decoded; Get decodes the others from the file,
// and ByIndex, IndexKeys and ListIndexFuncValues read the persisted index
// entries, so they never scan all objects. List and ListKeys read the whole
// store in both modes. Both modes use the same file layout: a store written
// in one mode opens in the other.
//
// # Durability
//
// Every write (Commit, Add, Update, Delete, Replace, AddIndexers) is one
// bbolt transaction holding the objects, their index entries and the resume
// point together, so after a crash the file holds either all of a write or
// none of it, and the resume point never runs ahead of the objects.
//
// With durability=sync (the default), a write returns after bbolt's fsyncs:
// a process crash (kill -9) or a power loss loses nothing that returned.
// Each transaction costs about two fdatasyncs (hundreds of microseconds), so
// batch changes into one Commit: a Commit of 1,000 objects costs the same
// two fsyncs as a Commit of one. The informer group-commits for this reason.
//
// With durability=nosync, bbolt's NoSync is set: a process crash still loses
// nothing (the operating system has the pages), but a power loss or kernel
// crash can lose recent writes and, as bbolt's own documentation says, can
// corrupt the file. Then Open fails with store.ErrCorrupt: delete the file
// and let the informers relist. Durability is per file: every store opened
// on a file must ask for the same.
//
// The file never shrinks. Space freed by updates and deletes is reused by
// later writes, so a steady churn does not grow the file; a file that grew
// during a large Replace keeps its size (compacting it is a later job for the
// snapshot tool).
//
// # Performance
//
// bbolt rewrites every page a transaction dirties, whole. A Commit writes
// each key's net effect (an object put and deleted in one batch costs
// nothing) in key order. A new object dirties a leaf of the objects
// bucket, one of the values bucket and one of each index bucket; an update
// that keeps its index values dirties only its object's leaf. Once a store
// outgrows a few thousand objects, each index therefore costs about one
// page written (and its entries decoded and re-encoded by bbolt) per new
// object: that, and the garbage collector scanning the decoded objects of
// the default mode, separate a store from raw bbolt. New files use 8 KiB
// pages (see pageSize in bolt.go for the trade-off); files created with
// 16 KiB pages keep them.
//
// Measured with BenchmarkCommit -benchtime 100x -count 6 (100 durable
// Commits of 1,000 new Pods of 3.5 KB in protobuf, three indexes, so the
// store grows to 100,000 Pods), on a shared two-core machine: the store
// committed a median of 7,300 Pods/s writing 38.8 KB per Pod, raw bbolt
// putting the same Pods into one bucket in the same run 20,600 Pods/s
// writing 22.2 KB, a ratio of 2.8 (before 8 KiB pages and sorted writes:
// 3.0, and 45.9 KB per Pod). Throughput drifts with the machine's load by
// a factor of two or more; compare the ratio.
//
// # Concurrency
//
// Stores are safe for concurrent use. Writes to one store are serialized,
// and bbolt serializes write transactions across the stores of a file.
// Readers never wait for a write's fsync: default-mode reads take only a
// read lock on the decoded objects, bounded-mode reads use bbolt read
// transactions (and briefly wait for a writer updating the bounded cache).
//
// Another process opening the same file waits up to the lock timeout
// (Options.LockTimeout, default 5s) and then fails with store.ErrLocked,
// naming the file.
//
// # Errors
//
// Errors name the operation and the store or file, and wrap the sentinels of
// package store: ErrInvalid for bad input (which leaves the store as it
// was), ErrLocked for a file held by another process, ErrCorrupt for a
// damaged or truncated file (the message says to delete it; informers then
// relist), ErrIncompatible for a store written with another codec, object
// type, key function or format version, ErrInUse for a store name opened
// twice, ErrClosed after Close.
//
// On reopen, a store opened with a different Options.Scope is emptied and
// loses its resume point (Info().Reset says why); one opened with a
// different index set rebuilds its index entries from the stored objects.
//
// # Caveats
//
//   - Durability is per file, not per store: bbolt's NoSync flag belongs to
//     the database.
//   - The file never shrinks (see Durability).
//   - bbolt memory-maps the file. Damage found while opening or reading
//     (bbolt panics, or a page past the end of a truncated file) becomes
//     store.ErrCorrupt; when bbolt panics inside its own Open, the file is
//     closed (releasing its lock) but its memory mapping is leaked until the
//     process exits.
//   - Keys and index values longer than 1 KiB are stored under their
//     SHA-256 digest, their full text kept in the object's record; bounded
//     IndexKeys then sorts the keys in memory.
//   - Opening a file holds a process-wide lock while bbolt waits for another
//     process's lock, so opens of other files wait too.
package bolt
