// Package badger is the informerdb backend over github.com/dgraph-io/badger/v4:
// an LSM tree with a separate value log, fast group-committed writes, and a
// directory per database. Import it for its side effect of registering the
// badger:// scheme, or call [Open].
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
// The path must be absolute (three slashes). Unknown parameters are rejected.
// The directory must be missing, empty (a volume root holding only
// lost+found counts as empty) or a badger database (it has a MANIFEST or
// KEYREGISTRY): a directory of other files is refused with store.ErrInvalid
// and left untouched, by Open, by snapshot restores and by every raw read,
// rather than filled with a database among those files.
//
// Several stores (one per resource, told apart by Options.Name) share one
// directory. A process keeps one badger database per directory, shared and
// reference counted by the stores open on it; it is closed with the last of
// them. Opening a store name that is already open in the process fails with
// store.ErrInUse until it is closed. The database-wide settings (durability,
// gc_interval, min_free) are those of the first store opened; a later store asking for
// another durability fails with store.ErrInvalid.
//
// # Layout
//
// Each store owns the keys under 's' + length-prefixed name: a meta record
// (JSON store.Meta, the current generation, the resume point and whether
// the index entries are current), and under the current generation the
// objects (key to encoded object), one record per object with its index
// values (the persisted index: an open reads them instead of running index
// functions, and updates and deletes find the old values without decoding
// the old object), and, in bounded mode only, index entries (index name,
// value and object key, the first two length-prefixed since they may
// contain any byte). A commit writes objects, value records, index entries
// if the store keeps them, and the resume point in one badger transaction.
//
// Format version 2 added the index entries flag. A store of format 1 (whose
// entries were always current) opens as format 2 with the flag set: the
// meta record is rewritten at the open, after which older builds refuse it
// (store.ErrIncompatible).
//
// A write too large for one badger transaction (a Replace of 100,000 objects,
// the backfill of AddIndexers, a huge Commit) is built under a fresh generation
// in as many transactions as it takes, made durable, and switched to, with the
// resume point, by rewriting the meta record in one final transaction. A Commit
// copies into it the records of the objects it does not write (a relist after
// 410 Gone, which rewrites most, copies little). The old generation is deleted
// afterwards, in the background: the write returns once the switch is durable,
// and Close waits for the deletion. A crash before the switch leaves the old
// contents and resume point intact; a half-built generation, or an old one not
// yet deleted, is garbage deleted on the next open. A scope change (Info.Reset)
// switches to an empty generation the same way, and an index-set change
// rebuilds the value records (and entries, in bounded mode) into a new
// generation from the stored objects. The default mode, which decodes every
// object when it opens, runs the index functions on them; if their values
// differ from the stored ones (a function changed under the same name, in a
// new build), it logs so and rebuilds the value records the same way
// (indexer.ValueCheck); keys its key function no longer computes empty the
// store, as a scope change does (indexer.KeyCheck). The bounded mode, which
// does not decode every object when it opens, checks a sample, the first 256
// objects in key order, and rebuilds or empties the same way; a change that
// alters no object of the sample goes unnoticed: give an index a new name
// when its function changes what only a few objects yield, or open the
// store once in the default mode.
//
// A Commit that does not fit one badger transaction therefore costs as much
// as the whole store. Stores implement store.BatchLimiter: MaxBatchOps is a
// conservative count of operations that always fits (with one index and
// badger's 16 MiB memtables here: about 1,500 in the default mode, 1,300 in
// bounded mode, which also writes index entries), and the informer keeps
// its group commits within it.
//
// # Modes
//
// By default every object is decoded into memory when the store opens, and
// reads are served from there at client-go's speed; badger only takes
// writes. With Options.CacheSize (cache=N) > 0 the store keeps at most N
// decoded objects in an LRU and reads the rest from badger; ByIndex,
// IndexKeys and ListIndexFuncValues read the persisted index entries and
// never scan all objects; List decodes everything it does not hold. Both
// modes use the same files: a store may be reopened in either.
//
// What each mode persists: both write every object and its value record
// (its index values) with the resume point; only the bounded mode writes
// index entries, since only it reads them. The default mode serves
// indexes from memory, built at open from the value records, and writes
// two keys per new object (object and value record) where the bounded mode
// also writes one per index value (BenchmarkCommit impl=badger-sync, 100
// Commits of 1,000 new Pods with 2 indexes, run alternately with the build
// that wrote entries in both modes, on a shared 2-core machine: 39,000-
// 53,000 objects/s against 22,000-36,000).
//
// Switching modes costs once, at the open: a default-mode open of a store
// last written bounded marks its entries stale (one transaction) and
// deletes them (write batches, no reads of values); a bounded open of a
// store last written by the default mode deletes any stale entries, writes
// one entry per index value from the value records (no object is decoded),
// syncs, and only then marks them current. A crash in the middle leaves
// the entries marked stale, so never read, and the next open starts over.
// Either costs a few microseconds per index entry (BenchmarkModeSwitch,
// 10,000 Pods with 2 indexes: a bounded open building their 20,000
// entries took about 100 ms against 15-30 ms, a default open dropping them
// about 315 ms against 200-290 ms). For a store that keeps no entries,
// IndexEntries (the snapshot tool's verify) reports those its value records
// imply, so verify checks that those records decode and agree with the
// store's index names, not a separate inverted index.
//
// # Durability
//
// durability=sync (the default) turns on badger's SyncWrites: every commit
// is fsynced before it returns, so neither kill -9 nor a power loss loses
// or tears a commit that returned. The index that survives is the value
// records, written with their objects; the bounded mode's index entries
// are trusted only while the meta record says they are current, which it
// says only after they were made durable (see Modes). Badger syncs once
// per transaction without grouping concurrent writers; group commits
// (store.Batch) are how writes stay fast. On Linux, while badger writes a
// durable commit, the store asks the kernel every millisecond to start
// writing badger's newest value-log file and memtable log to the disk
// (sync_file_range, a hint that changes no guarantee; package
// store/internal/writeback), so that badger's msync waits only for the
// rest: its commits alone of 100,000 distinct updates ran 15% faster.
//
// A failed fsync fails the write. Badger (v4.9.6) returns a failed fsync of
// its write-ahead log, but only logs one of its value log and reports the
// transactions done; the store watches badger's log for it. From then on,
// and also after any error that badger's write goroutine returns for a
// transaction already handed to it (which may be in badger and on disk, or
// not), every write of the directory's stores fails with an error wrapping
// the cause (syscall.EIO, say), the commit that met it included, and
// writes nothing more: after a failed fsync the kernel may have dropped
// what it could not write and report the next fsync as a success, and
// badger replays its logs only up to the first damaged entry, so no later
// write would be known durable either. The errors wrap
// store.ErrWritesStopped. Reads go on. The informer retries
// its commits, logging each failure, and handlers hear of nothing new until
// the process restarts (every store of the directory closed and opened
// again), which reads back what reached the disk: the commit that met the
// failure may be there, with its resume point, or not, or its objects may
// be unreadable, which fails the open with store.ErrCorrupt (delete the
// directory and let the informers relist). A write that badger refuses
// before its write goroutine (too large for one transaction, a closed
// database) and the store's own refusals (min_free) fail alone.
//
// durability=nosync turns SyncWrites off. Badger writes its write-ahead
// log and value log into shared memory maps before a commit returns, so a
// process crash (kill -9, panic, OOM kill) loses nothing either: the kernel
// owns those pages. A power loss or kernel crash can lose the commits of
// the last moments that the kernel had not yet written back. Badger replays
// its logs up to the first damaged entry and drops unfinished transactions,
// so what survives is normally a consistent earlier state with an earlier
// resume point (which is safe: the informer re-watches from there); but
// pages may reach the disk out of order, and a damaged log may also make
// the directory unreadable (store.ErrCorrupt; delete it and relist).
//
// # Concurrency
//
// Stores are safe for concurrent use. Writes to one store are serialized;
// stores sharing a directory write concurrently (badger orders them). In the
// default mode reads never touch badger; opening decodes the objects on one
// goroutine per CPU. In the bounded mode each read (Get, List, ByIndex,
// Index) returns the objects of one badger snapshot: it uses the LRU (Get
// also fills it) only while no write has begun since it began, and
// otherwise decodes from its snapshot, so reads overlapping writes decode
// more. Writes cache the objects they put. An Open waiting for another process's lock only holds
// up Opens of the same directory. Badger's value-log garbage
// collection runs in one goroutine per open directory (gc_interval, default
// DefaultGCInterval), stopped when the directory's last store closes.
//
// # Errors
//
// Errors name the operation and the cause and wrap the store sentinels:
// store.ErrInvalid for bad input and URLs, store.ErrInUse, store.ErrClosed,
// store.ErrIncompatible when a store was written with another codec, object
// type, key function or format; store.ErrLocked when another process holds
// the directory for longer than the lock timeout (badger fails at once on its
// lock; the open retries until then); store.ErrCorrupt, naming the directory,
// when badger cannot read the files (a truncated MANIFEST, garbage in a table
// or value log), a store the stores file names is lost, or a stored record
// fails its checksum or cannot be decoded: delete the directory
// and let the informers relist. Panics badger raises on damaged data while
// opening and loading are turned into store.ErrCorrupt.
//
// # Caveats
//
//   - Memory: badger is configured small: two 16 MiB memtables (with
//     mmap'd logs), an 8 MiB block cache, an 8 MiB index cache, objects
//     from 256 bytes on in the value log, 64 MiB value-log files. Measured on a
//     directory of 100,000 Pods reopened in bounded mode: 24 MiB of Go heap
//     and 122 MiB RSS (badger's defaults: about 920 MiB RSS). The decoded
//     objects of the default mode come on top, as in client-go.
//   - Object size: badger stores no value larger than a value-log file, so
//     an object whose encoding is larger than 64 MiB is refused with
//     store.ErrInvalid when its write is prepared, before anything is
//     written (an informer leaves it out and commits the rest). The API
//     server's default request limit (etcd's, 1.5 MiB) keeps Kubernetes
//     objects far below it.
//   - Disk: a directory reports more than it uses while open (badger
//     preallocates its value-log and memtable files): 420 MiB apparent,
//     259 MiB allocated for 100,000 Pods of 2.6 KiB. Updates and deletes
//     leave garbage in the value log until the GC goroutine rewrites a file
//     that is at least half garbage; a directory may hold about twice its
//     live data. Badger only learns about garbage from compactions, so a
//     small, quiet database may not shrink at all.
//   - Damaged files: before badger opens a directory (holding badger's
//     directory lock, so never while another process writes), the table
//     files the MANIFEST lists are verified (checksums) and the value-log
//     headers checked, because badger opens tables in its own goroutines,
//     where a damaged one panics the process, and skips a table whose
//     checksum fails, which would silently drop objects or index entries.
//     A missing or unreadable MANIFEST, or a listed table that is missing
//     or damaged, is store.ErrCorrupt. What a kill -9 leaves behind is
//     not damage and opens as badger handles it: tables the MANIFEST does
//     not list (an unfinished flush or compaction, whole, partial or empty)
//     are not read and badger deletes them, a torn last MANIFEST change is
//     dropped, log tails are replayed up to the first torn entry, and empty
//     .mem and .vlog files (killed between creating and sizing them; badger
//     fails its first open on them) are removed. A MANIFEST cut at a change
//     boundary looks like a crash before that change and is not detected by
//     badger; a cut that loses stores (badger then opens an empty database
//     and deletes the tables it no longer lists) is caught by the stores
//     file, INFORMERDB-STORES beside badger's files, which names the stores
//     the database holds (written atomically when a store is created or
//     dropped): a store it names and badger lacks is store.ErrCorrupt, never
//     a new, empty store. A directory without it (written by an older
//     build) gets it from what badger holds at its first open. Badger
//     changes a directory it opens even to read it (it truncates a damaged
//     value-log tail, deletes the tables its MANIFEST does not list), so
//     snapshot verify reads a closed database from a private copy
//     (FrozenView, store.RawFrozenViewer).
//     Damage badger finds later while opening (in the value log's tail)
//     makes it leak a few goroutines (badger v4.9.6) besides failing with
//     store.ErrCorrupt.
//   - File modes: the directory is made 0700. Badger creates its data files
//     0666 less the umask; they are made 0600 when the database opens and
//     closes, but files created meanwhile keep the umask's mode (the
//     directory still keeps other users out).
//   - Badger may still panic on damaged data in its own background
//     goroutines (compaction); such a panic cannot be recovered and ends
//     the process.
//   - Disk space: badger writes through memory-mapped files that it grows
//     without allocating their blocks, so a write of badger's that finds
//     the disk full faults (SIGBUS) in badger's own goroutines and the
//     process ends; no error can reach the caller. So every write of a
//     store (Commit, Replace, AddIndexers, an Import, value-log GC) first
//     checks the free space of the file system (statfs, on Linux and
//     macOS) and, if it would leave less than min_free (DefaultMinFree,
//     128 MiB: what badger writes on its own between commits, a memtable
//     flush, a compaction, a GC rewrite), fails with an error wrapping
//     syscall.ENOSPC that says so, leaving the store as it was. The
//     informer logs the failed commit and retries it until there is room.
//     Writes of any size check again every 4 MiB they write. Opening a
//     database checks too, whatever the open is for (a store, a snapshot
//     read): badger flushes the memtables it replays from its logs right
//     after it opens. A read of a database on a full disk can pass
//     min_free=0 in its URL, at that risk. Drop is not checked: it frees
//     space. The reserve cannot help when another
//     process fills the disk faster than badger uses the reserve, nor
//     against a file size limit (RLIMIT_FSIZE), which statfs does not
//     show: then badger asserts (log.Fatal) when it cannot create a
//     memtable file. Either way, what was acknowledged survives, as after
//     kill -9, and the store opens and commits again once there is room
//     (store/crashtest: TestFullFileSystem fills a tmpfs of 256 MiB and
//     gets ENOSPC from Commit, and crashes with SIGBUS with min_free=0;
//     TestDiskFull uses a file size limit).
//   - A Replace and an AddIndexers rewrite the whole store (a new
//     generation); their cost is proportional to the store, not the change.
//   - Objects are encoded with the store's codec, so an object of another
//     type than the codec's (what an informer's transform may return: a
//     string, another struct) is refused with store.ErrInvalid wrapping
//     indexer.ErrWrongType, naming the type the codec wants and the one
//     given; an informer leaves such a change out and its handlers never
//     hear of it. client-go's in-memory store, and memory:// and memdb://
//     without a file, keep objects of any type.
package badger
