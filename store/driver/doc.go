// Package driver is what an informerdb backend is made of beside its engine:
// the helpers every backend uses to read its URL, check its path, record and
// compare a store's identity and refuse the keys no backend stores. It is to
// package store what database/sql/driver is to database/sql: users of
// informerdb open stores with store.Open and never need it.
//
// # Writing a backend
//
// A backend is a package that registers a store.Driver under its URL scheme
// in init, so that applications select it with a blank import and a URL:
//
//	func init() { store.Register("mydb", myDriver{}) }
//
// store.Open parses the URL, fills in the defaults of store.Options and
// calls the driver's Open, which:
//
//  1. reads its URL parameters with [NewParams] ([Params.Common] for
//     durability, lock_timeout and cache) and returns [Params.Err], which
//     refuses a parameter the driver did not ask for;
//  2. for a database with a path, takes it from the URL with [AbsPath] and
//     calls [CheckPath] before it creates or reads anything
//     (store.ErrUnsafe for a path other users could tamper with), and
//     creates directories 0700 and files 0600;
//  3. locks the database against other processes: store.ErrLocked once
//     Options.LockTimeout has passed, the message ending with
//     [LockTimeoutHint]; a name already open in this process is
//     store.ErrInUse;
//  4. compares the store's recorded [Meta] with [MetaFor] of the options,
//     through [CompareMeta]: store.ErrIncompatible for another format
//     version, codec, type or key function, an empty store without resume
//     point for another scope ([Reopen].Reset), rebuilt index entries for
//     another index set ([Reopen].RebuildIndexes);
//  5. returns a store.Store.
//
// The store.Store (cache.Indexer and the rest) is written once; a backend
// provides the storage beneath it, in one of two ways today:
//
//   - indexer.Persister, given to indexer.NewBase: the backend commits a
//     batch of changes with its resume point, and a new index set, each
//     atomically; Base keeps every object decoded in memory and serves the
//     reads (memory with a snapshot file).
//   - engine.Engine and engine.Tx of store/internal/engine: the backend
//     also reads objects by key, all objects, and index entries, in a read
//     transaction. engine.Load and engine.NewDecoded make the default mode
//     (every object decoded in memory), engine.New the bounded mode (only
//     the recently used objects decoded, Options.CacheSize > 0), of bolt and
//     badger. The package is internal to this module.
//
// Writes are validated by indexer.Preparer, which refuses the keys
// [CheckKey] refuses, so that every backend refuses the same ones.
//
// # Record-level access
//
// A driver that also implements store.RawDriver (Stores, ListStores, Export,
// Import and Drop of one store, without the objects' Go types) serves
// store.Stores, store.ListStores, store.Export, store.Import, store.Drop and
// the snapshot tool (store/snapshot, cmd/snapshot); every bundled backend
// does. Import calls [CheckKey] on every record. A format that keeps each
// store's metadata apart, so that one store can be unreadable while the
// others are not, makes Stores as [StoreInfos] of its ListStores; a format
// that cannot makes ListStores as [EntriesOf] of its Stores.
//
// # Optional interfaces
//
// Further abilities are small interfaces of package store, discovered by type
// assertion, with a fallback when absent. On the driver: store.RawFrozenViewer
// (reads would change the database's files) and store.RawLiveViewer (a
// read-only view of a database this process has open). On the store:
// store.Exporter, store.Lener, store.DiskSizer, store.BatchLimiter,
// store.BatchPreparer and store.StagedBatch, and store.ReadFailer, for
// reads that cannot return their error (embed [ReadFailures]).
//
// # Errors
//
// Errors name the operation and the cause ("store: open pods in /var/db: ...")
// and wrap the sentinel errors of package store where one applies:
// ErrInvalid for bad input (an unknown URL parameter, a refused key, an
// object the codec cannot encode), ErrNotFound, ErrCorrupt for damaged data
// (a damaged record is never handed out as an object), ErrIncompatible,
// ErrLocked, ErrInUse, ErrUnsafe, ErrClosed after Close, and
// ErrWritesStopped for every write after a commit that may not have reached
// the disk.
//
// # Testing
//
// A backend's test is the conformance suite, store/storetest, run through
// store.Open as users do:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Backend{
//			URL:        func(t testing.TB) string { return "mydb://" + filepath.Join(t.TempDir(), "db") },
//			Persistent: true,
//		})
//	}
//
// Its own tests cover only its format and its failures: damaged files, a
// lock held by another process, a crash between its steps.
package driver
