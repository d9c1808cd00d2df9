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
// parallel). Its indexes are in memory too, built at open from what the
// index functions compute on the decoded objects; where that differs from
// the index values persisted with each object (an index function that
// changed under the same name, in a new build), the open logs it and
// persists the new values (indexer.ValueCheck). In
// the bounded mode (Options.CacheSize or cache=N), at most N recently used
// objects stay decoded; Get decodes the others from the file, and ByIndex,
// IndexKeys and ListIndexFuncValues read index entries persisted in the file
// (value -> objects), so they never scan all objects. List and ListKeys read
// the whole store in both modes.
//
// Both modes use the same file layout, and a store written in one mode opens
// in the other. Only the bounded mode keeps index entries on disk: the
// default mode, which never reads them, does not write them, and drops them
// when it opens a store that has them; the bounded mode builds them from the
// persisted index values (no decoding) when it opens a store that lacks
// them, in one transaction, about 0.3 s per 100,000 Pods with three indexes
// (BenchmarkOpen, impl=bolt-bounded/from=default).
//
// # Durability
//
// Every write (Commit, Add, Update, Delete, Replace, AddIndexers) is one
// bbolt transaction holding the objects, their index values (and, in the
// bounded mode, index entries) and the resume point together, so after a crash the file holds either all of a write or
// none of it, and the resume point never runs ahead of the objects.
//
// With durability=sync (the default), a write returns after bbolt's fsyncs:
// a process crash (kill -9) or a power loss loses nothing that returned.
// Each transaction costs about two fdatasyncs (hundreds of microseconds), so
// batch changes into one Commit: a Commit of 1,000 objects costs the same
// two fsyncs as a Commit of one. The informer group-commits for this reason.
//
// A write whose fdatasync fails, or which meets an I/O error (EIO), fails,
// and so does every later write of the file, in any of its stores and by
// Import and Drop in this process, until every store of it is closed and
// the file opened again (restart the process), with an error wrapping
// store.ErrWritesStopped; reads go on. bbolt rolls its memory back to the
// last commit, but the failed commit's pages, meta page included, may have
// reached the disk, and after a failed fsync the kernel may drop what it
// could not write and report the next fsync as a success: no later write
// would be known durable, and memory and file would disagree. Reopening reads back
// what reached the disk, with or without that commit. A write refused for
// want of space (the disk full) leaves the file as it was and fails alone:
// the informer retries it until space is freed.
//
// With durability=nosync, bbolt's NoSync is set: a process crash still loses
// nothing (the operating system has the pages), but a power loss or kernel
// crash can lose recent writes and, as bbolt's own documentation says, can
// corrupt the file. Then Open fails with store.ErrCorrupt: delete the file
// and let the informers relist. Durability is per file: every store opened
// on a file must ask for the same.
//
// The file never shrinks. Space freed by updates, deletes and store.Drop is
// reused by later writes, so a steady churn does not grow the file; a file
// that grew during a large Replace keeps its size until Compact (`snapshot
// compact`) rewrites it.
//
// # Layout
//
// Each store's bucket holds meta/ (its identity, resume point, next
// sequence number, and whether it keeps index entries), keys/ (object key ->
// the object's sequence number and index values), objects/ (sequence number
// -> encoded object) and one bucket per index ((value, sequence number) ->
// object key, filled only while the bounded mode uses the store); layout.go
// has the details. This is format version 3. A store of format version 2
// (the same buckets, index entries always kept) is upgraded when opened. A
// file written with format version 1 (objects keyed by their key) opens
// with store.ErrIncompatible naming both versions; delete it and let the
// informers relist.
//
// # Performance
//
// bbolt rewrites every page a transaction dirties, whole, and materializes
// (allocates and later garbage-collects) every node it dirties. So a new
// object takes the next sequence number instead of being filed under its
// random key: objects/ is appended to (full pages, FillPercent 1.0). Only
// keys/, whose records are small, takes a random insert per new object.
// Index entries are what a Commit of new objects would otherwise pay most
// for: each grows at the end of its value's range, so a Commit dirties a
// page per index value it touches, hundreds of them; the default mode,
// whose index is in memory, does not write them (see above). A Commit
// writes each key's net effect (an object put and deleted in one batch
// costs nothing), each bucket in its own key order. An update keeps its
// number and rewrites its object in place, and its key record (and
// entries) only if its index values changed; a delete removes the object,
// its record and its entries. Replace (a relist) numbers objects in key
// order into fresh buckets at 100% fill, bbolt's bulk-load fast path.
//
// A Commit of updates therefore costs about one page written per page it
// touches, however many of its objects change: objects listed or created
// one after the other share pages, and their updates share the writes.
// Updates spread over the store, each alone on its page, cost a page each.
// In one informer run (BENCHMARKS.md section 3, "Commit timelines"),
// Commits of 5,000 updates wrote about 800 pages in 15 ms when neighbours
// changed together and 4,000-5,000 pages in 58-83 ms when each update was
// alone on its page. An informer fed updates to 100,000 distinct objects
// in random order, as fast as it takes them, committed 78,000 per second
// (0.21x of client-go's informer; badger 0.48x); larger group commits
// (informer.Options.MaxBatchSize) share more pages, 135,000 per second in
// groups of 50,000. For sustained churn near such rates, badger's
// log-structured writes cost less.
//
// Measured with
//
//	cd store/bolt && go test -c -o /tmp/bolt.test . && /tmp/bolt.test -test.run '^$' \
//	  -test.bench 'BenchmarkCommit$/impl=(bolt|bolt-bounded|bbolt-raw)$/durability=sync$' -test.count 3 -test.benchtime 100x
//
// (100 durable Commits of 1,000 new Pods of 3.5 KB in protobuf, three
// indexes, so the store grows to 100,000 Pods), on a two-core machine,
// three runs (2026-11-23 11:20 UTC, format version 3): the default mode
// committed 28,010 to 33,330 Pods/s writing 9.2 KB per Pod, the bounded
// mode (impl=bolt-bounded, which keeps index entries) 23,390 to 23,550
// Pods/s writing 15.8 KB, and raw bbolt putting the same Pods into one
// bucket (random key order, 16 KiB pages) in the same run 23,210 to 24,610
// Pods/s writing 22.2 KB. Format version 2, which wrote index entries in both
// modes, ran the default mode at a median of 18,060 Pods/s (0.74 of raw
// bbolt; six runs on an idle machine), held back by the garbage collector:
// the 100,000 decoded Pods the default mode holds, as client-go's indexer
// does, are scanned by every collection, and the nodes of the index pages
// a Commit dirtied were most of what triggered them. Format version 1
// (objects, index values and index entries all filed by object key):
// 7,450 Pods/s writing 38.7 KB per Pod, 0.40 of raw bbolt. Throughput
// drifts with the machine's load by a factor of two or more; compare the
// ratio.
//
// Elsewhere (INFORMERDB_BENCH_PODS=100000, -test.benchtime 3x, formats 1
// and 2): BenchmarkCommitUpdates 24,050 and 23,430 updates/s (4.8 and 4.1
// KB written per update), BenchmarkReplace 20,750 and 19,820 Pods/s,
// BenchmarkOpen (decode all) 0.92 and 0.89 of client-go's time to list the
// same Pods into its indexer.
//
// New files use 8 KiB pages (see pageSize in bolt.go for the trade-off);
// files created with 16 KiB pages keep them.
//
// On Linux, while a durable commit writes its pages, the store asks the
// kernel every millisecond to start writing them to the disk
// (sync_file_range, a hint that changes no guarantee), so that the commit's
// fdatasync waits only for the rest: bbolt's commits alone of 100,000
// distinct updates ran 14% faster, a cold start 12% faster (package
// store/internal/writeback).
//
// # Concurrency
//
// Stores are safe for concurrent use. Writes to one store are serialized,
// and bbolt serializes write transactions across the stores of a file.
// Readers never wait for a write's fsync: default-mode reads take only a
// read lock on the decoded objects, bounded-mode reads use bbolt read
// transactions (a Get that fills the bounded cache briefly waits for a
// writer updating it).
//
// Another process opening the same file waits up to the lock timeout
// (Options.LockTimeout, default 5s) and then fails with store.ErrLocked,
// naming the file; it stops waiting when the context passed to Open ends,
// with an error wrapping the context's.
//
// The snapshot tool's reads ([Raw]'s Stores and Export, [IndexEntries])
// share the file with the stores this process has open on it; otherwise
// they open it read-only, so that they never write to it (an empty file is
// refused with store.ErrCorrupt rather than initialised) and can read a
// file its owner cannot write (mode 0400). Another process can then read it
// too, but not open it for writing until they are done. A write of this
// process (an Open, an Import) waits for them too, up to the lock timeout
// (then store.ErrInUse) or until its context ends.
//
// # Errors
//
// A write the file system refuses (a full disk, a file size limit) fails
// the Commit with the system's error ("no space left on device", "file too
// large") and leaves the store as it was, in memory and in the file; the
// same Commit succeeds once there is room (store/crashtest TestDiskFull).
//
// Errors name the operation and the store or file, and wrap the sentinels of
// package store: ErrInvalid for bad input (which leaves the store as it
// was), ErrLocked for a file held by another process, ErrCorrupt for a
// damaged or truncated file, or one that is not this backend's database (an
// empty file read by the snapshot tool, a bbolt file with top-level buckets
// but no stores bucket) (the message says to delete it; informers then
// relist), ErrIncompatible for a store written with another codec, object
// type, key function or format version, ErrInUse for a store name opened
// twice, ErrClosed after Close.
//
// On reopen, a store opened with a different Options.Scope is emptied and
// loses its resume point (Info().Reset says why); one opened with a
// different index set recomputes its index values (and entries, in the
// bounded mode) from the stored objects. An index or key function that
// changed under the same name is found by the default mode on every object
// it decodes, and by the bounded mode, which does not decode every object
// when it opens, on a sample: the first 256 objects in key order (about 5
// ms to decode for realistic Pods; BenchmarkOpen, impl=bolt-bounded, went
// from 0.1-0.3 ms to 4.8-5.2 ms with it). Values
// that differ are stored anew (the bounded mode decodes every object for
// that, once); keys that differ empty the store, as a scope change does. A
// change that alters no object of the sample goes unnoticed in the bounded
// mode: give an index a new name when its function changes what only a few
// objects yield, or open the store once in the default mode.
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
//     SHA-256 digest, their full text kept in the object's key record
//     (index entries hold the full key).
//   - Index entries are ordered by sequence number (creation order), so
//     bounded IndexKeys sorts the keys in memory, and bounded ByIndex returns
//     objects in the order they were created (client-go's order is
//     unspecified too).
//   - Sequence numbers are never reused, except that Replace and a scope
//     reset start them over; 2^64 of them do not run out.
//   - Compact holds a process-wide lock for as long as it copies the file,
//     so opens and closes of other files in the process wait for it; it is
//     meant for `snapshot compact`, on a file no store has open.
//   - Objects are encoded with the store's codec, so an object of another
//     type than the codec's (what an informer's transform may return: a
//     string, another struct) is refused with store.ErrInvalid wrapping
//     indexer.ErrWrongType, naming the type the codec wants and the one
//     given; an informer leaves such a change out and its handlers never
//     hear of it. client-go's in-memory store, and memory:// and memdb://
//     without a file, keep objects of any type.
package bolt
