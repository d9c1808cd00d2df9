// Package badger is the informerdb backend over github.com/dgraph-io/badger/v4:
// an LSM tree with a separate value log, fast group-committed writes, and a
// directory per database. Import it for its side effect of registering the
// badger:// scheme, or call [Open]. It is the backend for sustained churn.
//
// # URLs
//
//	badger:///var/lib/ctrl/cache                   a directory (created 0700 if absent)
//	badger:///var/lib/ctrl/cache?durability=nosync no fsync per commit
//	badger:///var/lib/ctrl/cache?cache=1000        bounded mode: at most 1000 decoded objects
//	badger:///var/lib/ctrl/cache?lock_timeout=30s  wait longer for another process
//	badger:///var/lib/ctrl/cache?gc_interval=1m    value-log GC period; 0 disables it
//	badger:///var/lib/ctrl/cache?min_free=512Mi    free space writes keep on the disk; 0 disables the check
//
// The path must be absolute (three slashes); unknown parameters are
// rejected. The directory must be missing, empty (lost+found aside) or a
// badger database; other files make it store.ErrInvalid, left untouched.
// Stores told apart by Options.Name share one directory and one badger
// database per process, closed with the last store; a name already open
// is store.ErrInUse. The first store opened sets the database's settings;
// a later one asking for another durability is store.ErrInvalid.
//
// # Modes
//
// By default every object is decoded at open and reads are served from
// memory; badger only takes writes. With cache=N the store keeps at most N
// decoded objects and reads the rest from badger, index reads from
// persisted index entries. Both modes use the same files; switching costs
// once, at the open, and a crash in the middle of it is harmless.
//
// # Durability
//
// A commit writes objects, their index values (and, in the bounded mode,
// index entries) and the resume point in one badger transaction. A write
// too large for one (a Replace, an AddIndexers, a huge Commit) is built
// under a new generation and switched to, with the resume point, in one
// final transaction: a crash before leaves the old contents and resume
// point. Such a write costs as much as the whole store; store.BatchLimiter
// keeps the informer's group commits within one transaction.
//
// durability=sync (the default) fsyncs every commit before it returns:
// neither kill -9 nor a power loss loses or tears a commit that returned.
// A failed fsync fails the write, and every later write of the directory
// fails too (store.ErrWritesStopped) until the process reopens it; reads go
// on. badger v4.9.6 only logs a failed value-log fsync, so the store watches
// badger's log for it.
//
// durability=nosync: a process crash loses nothing (the kernel owns
// badger's mapped logs), but a power loss can lose the last moments of
// commits, normally leaving an earlier consistent state with an earlier
// resume point, and may leave the directory unreadable (store.ErrCorrupt;
// delete it and relist).
//
// # Integrity
//
// Every record carries a CRC32C of its key and value, and badger's
// value-log checksums are verified on read. Before badger opens a
// directory, the tables its MANIFEST lists and the value-log headers are
// verified (badger would panic on them in its own goroutines). A file
// beside badger's, INFORMERDB-STORES, names the stores, so a damaged
// MANIFEST that loses stores is store.ErrCorrupt, never an empty database.
// What a kill -9 leaves is not damage. Badger changes a directory it opens
// even to read it, so snapshot verify reads a private copy.
//
// # Concurrency
//
// Stores are safe for concurrent use. Writes to one store are serialized;
// stores sharing a directory write concurrently. In the bounded mode each
// read returns the objects of one badger snapshot, from the cache only
// while no write has begun since it began; writes cache the objects they
// put. Another process holding the directory makes Open wait up to the lock
// timeout, then fail with store.ErrLocked naming the directory and the
// timeout. Value-log GC runs in one goroutine per open directory.
//
// # Errors
//
// Errors name the operation and the cause and wrap the store sentinels:
// ErrInvalid for bad input and URLs, ErrInUse, ErrClosed, ErrIncompatible
// for a store written with another codec, object type, key function or
// format, ErrLocked, and ErrCorrupt, naming the directory, for damaged files
// or records (delete the directory and let the informers relist). A store
// reopened with another scope is emptied; one reopened with another index
// set rebuilds its index values. Changed index or key functions are found
// as in package bolt (every object in the default mode, a sample of 256 in
// the bounded mode).
//
// # Caveats
//
//   - Memory: two 16 MiB memtables, 8 MiB block and index caches, 64 MiB
//     value-log files; about 122 MiB RSS for 100,000 Pods in the bounded
//     mode. Decoded objects of the default mode come on top, as in client-go.
//   - Objects larger than 64 MiB (a value-log file) are refused with
//     store.ErrInvalid before anything is written.
//   - Disk: a directory may hold about twice its live data until value-log
//     GC rewrites files at least half garbage, and reports more than it uses
//     while open (preallocated files).
//   - A full disk would crash badger (SIGBUS in its own goroutines), so every
//     write first checks that it leaves min_free (default 128 MiB) free and
//     otherwise fails with an error wrapping syscall.ENOSPC, leaving the
//     store as it was; the informer retries. A file size limit (RLIMIT_FSIZE)
//     or another process filling the disk faster can still end the process;
//     what was acknowledged survives, as after kill -9.
//   - Badger may panic on damaged data in its background compaction; such a
//     panic ends the process.
//   - Data files are made 0600 when the database opens and closes; files
//     created meanwhile keep the umask's mode (the 0700 directory still
//     keeps other users out).
//   - Objects of another type than the codec's are refused with
//     store.ErrInvalid wrapping indexer.ErrWrongType.
package badger
