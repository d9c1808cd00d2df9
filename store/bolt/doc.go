// Package bolt is the informerdb backend over go.etcd.io/bbolt: one file
// holding any number of named stores (one per resource), each with its own
// objects, index values and resume point. Import it for its side effect of
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
// nosync), lock_timeout (how long to wait for a file another process holds,
// default 5s) and cache (the bounded mode's size; 0 keeps every object
// decoded); any other is an error. The process keeps one bbolt database per
// file, closed with its last store; a store name (Options.Name) already
// open in the process fails with store.ErrInUse.
//
// # Modes
//
// In the default mode every object is decoded at open (in parallel) and
// reads are served from memory at client-go's speed, indexes included. In
// the bounded mode (cache=N) at most N recently used objects stay decoded:
// Get decodes the others from the file, and ByIndex, IndexKeys and
// ListIndexFuncValues read index entries persisted in the file, never
// scanning all objects. A store written in one mode opens in the other.
//
// # Durability
//
// Every write (Commit, Add, Update, Delete, Replace, AddIndexers) is one
// bbolt transaction holding the objects, their index values and entries and
// the resume point together: after a crash the file holds all of a write or
// none of it, and the resume point never runs ahead of the objects.
//
// With durability=sync (the default) a write returns after bbolt's fsyncs,
// so neither kill -9 nor a power loss loses what returned. Each transaction
// costs about two fdatasyncs, whatever its size: batch changes into one
// Commit, as the informer's group commits do.
//
// A write whose fdatasync fails, or that meets an I/O error, fails, and so
// does every later write of the file in this process (store.ErrWritesStopped)
// until every store of it is closed and the file reopened: the kernel may
// report the next fsync as a success. Reads go on. A write refused for want
// of space (a full disk, a file size limit) fails with the system's error
// and leaves the store as it was; the informer retries it.
//
// With durability=nosync a process crash still loses nothing (the kernel
// has the pages), but a power loss or kernel crash can lose recent writes
// and, as bbolt documents, corrupt the file: Open then fails with
// store.ErrCorrupt; delete the file and let the informers relist.
// Durability is per file: every store opened on it must ask for the same.
//
// # Format
//
// Every record carries a CRC32C of its key and value: a mismatch is
// store.ErrCorrupt naming the store and key. This is format version 4;
// versions 2 and 3 are upgraded when opened, version 1 is
// store.ErrIncompatible naming both versions. A write costs a page per page
// it touches: objects created together share pages, while updates spread
// over a large store pay a page each; for sustained random churn badger
// costs less (BENCHMARKS.md, section 6).
//
// # Concurrency
//
// Stores are safe for concurrent use. Writes to one store are serialized,
// and bbolt serializes write transactions across the stores of a file.
// Readers never wait for a write's fsync. In the bounded mode each read
// returns the objects of one bbolt read transaction, from the cache only
// while no write has begun since it began; writes cache the objects they
// put. Another process opening the file waits up to the lock timeout and
// then fails with store.ErrLocked, naming the file and the timeout; it
// stops waiting when Open's context ends. The snapshot tool's reads share
// the file with the stores this process has open; otherwise they open it
// read-only and never write to it.
//
// # Errors
//
// Errors name the operation and the store or file and wrap the sentinels of
// package store: ErrInvalid for bad input (the store is left as it was),
// ErrLocked, ErrCorrupt for a damaged or truncated file or one that is not
// this backend's (delete it; informers then relist), ErrIncompatible for a
// store written with another codec, object type, key function or format
// version, ErrInUse, ErrClosed. A store reopened with another Options.Scope
// is emptied and loses its resume point (Info().Reset says why); one
// reopened with another index set recomputes its index values. An index or
// key function changed under the same name is found by the default mode on
// every object, and by the bounded mode on a sample (the first 256 objects
// in key order): give an index a new name when its function changes what
// only a few objects yield.
//
// # Caveats
//
//   - The file never shrinks: later writes reuse freed space, and Compact
//     (`snapshot compact`) gives it back.
//   - bbolt memory-maps the file. Damage found while opening or reading
//     becomes store.ErrCorrupt; when bbolt panics inside its own Open, the
//     file is closed but its mapping leaks until the process exits.
//   - Keys and index values longer than 1 KiB are stored under their
//     SHA-256 digest, the full text kept in the key record.
//   - Bounded ByIndex returns objects in creation order (client-go's order
//     is unspecified too).
//   - Compact holds a process-wide lock while it copies the file; it is
//     meant for a file no store has open.
//   - Objects are encoded with the store's codec, so an object of another
//     type (what an informer's transform may return) is refused with
//     store.ErrInvalid wrapping indexer.ErrWrongType; an informer leaves
//     such a change out.
package bolt
