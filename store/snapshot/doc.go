// Package snapshot saves the stores of an informerdb database to a portable,
// backend-neutral file, restores such a file into a database of any backend,
// and describes and verifies files and databases. It is the library behind
// cmd/snapshot; it reads and writes databases through store.RawDriver, record
// by record, without the objects' Go types or index functions.
//
// # Format
//
// All integers are unsigned varints unless said otherwise; lp(x) is the
// length of x followed by x.
//
//	magic "IDBPORT\n" (8 bytes), format version (uint32 big-endian)
//	lp(file header: JSON {"created": RFC 3339 time})
//	per store:
//		'B' lp(store name)
//		per record: 'R' lp(key) lp(encoded object)
//			number of indexes, per index: number of values, lp(value)...
//		'E' lp(store header: JSON StoreHeader: the store's store.Info
//			(name, codec, type, key function, scope, index names,
//			resume point), object count, bytes, content hash)
//	'Z'
//	SHA-256 of everything above (32 bytes)
//
// A store's header follows its records because an online export learns the
// resume point of its view only once it has read it. The index values of a
// record are aligned with its store's index names; a record without values
// comes from a backend that keeps none (memory and memdb snapshot files),
// and restoring it records no index names, so a store opened with indexers
// rebuilds them. Verify of such a file or database checks records only.
//
// The content hash of a store is the SHA-256 of its records sorted by key,
// each as lp(key) followed by the SHA-256 of the encoded object: the same
// for the same objects in any backend and any file, whatever the order in
// which a backend hands them out, and independent of index values.
//
// Readers bound every length (MaxKeyLen, MaxDataLen, MaxIndexes, MaxValues,
// MaxHeaderLen) and check it against the bytes left in the file before
// allocating, so a hostile file cannot make them allocate more than the
// file's size.
//
// # URLs and durability
//
// Databases are named by the URLs store.Open takes ("bolt:///abs/file.db",
// "memory:///abs/file.snap", ...). Save never leaves a part of a file at its
// path, and Restore verifies the whole file before it writes anything and
// replaces each store atomically (see each function). A process that holds
// its database (bolt and badger lock theirs) saves it online with SaveURL
// or SaveStores, each store read in one read transaction.
//
// # Serving a running process
//
// NewHandler serves a running process's database over HTTP, read-only: a
// snapshot of every store from one view of the database (store.LiveView),
// streamed in the format above, and its status as JSON. Fetch and
// FetchStatus read them from another process (the command does, given an
// http:// or https:// address). The handler hands out every object of the
// cache, Secrets included: mount it behind authentication, as pprof.
//
// # Concurrency
//
// Functions are safe for concurrent use on different files and databases.
// Saves to one path may overlap: each writes its own temporary file, and
// the last rename wins (each file is whole). Restores into one database must
// not overlap with each other or with stores open on it (backends refuse an
// Import into a store open in the same process with store.ErrInUse).
//
// # Errors
//
// A truncated, damaged or hostile file yields an error wrapping
// store.ErrCorrupt that names the file and the byte offset; a file of
// another format version yields store.ErrIncompatible; a failed verification
// wraps store.ErrCorrupt and lists the first problems; a restore into a
// non-empty store yields ErrNotEmpty. Readers never panic on bad input (they
// are fuzzed: FuzzRead).
//
// # Caveats
//
// Restore reads the file twice (to verify it, then to import it) through
// one open file. A file changed in place between the two reads is detected
// per store (count, bytes, content hash) before the backend commits it:
// that store's Import rolls back, and the restore fails with
// store.ErrCorrupt. Atomicity is per store: a restore that fails on the
// second store has already replaced the first (every store is whole, the
// old contents or the new), and rerunning it with --force finishes it.
//
// A Handler's view of a bolt database is a read transaction, held while
// the snapshot streams: bbolt does not reuse the pages that commits free
// meanwhile (the file grows instead), and a commit that makes the file
// outgrow its memory map waits for the view to end. HandlerOptions.Timeout
// bounds how long a request holds its view. A memdb file's stores are each
// viewed at a point of their own, taken together under the file's lock.
package snapshot
