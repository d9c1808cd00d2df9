// Package driver is what an informerdb backend is made of beside its engine:
// the helpers every backend uses to read its URL, check its path, record and
// compare a store's identity and refuse the keys no backend stores. It is to
// package store what database/sql/driver is to database/sql: users open
// stores with store.Open and never need it.
//
// # Writing a backend
//
// A backend registers a store.Driver under its URL scheme in init, so that
// applications select it with a blank import and a URL:
//
//	func init() { store.Register("mydb", myDriver{}) }
//
// store.Open fills in the defaults of store.Options and calls the driver's
// Open, which:
//
//  1. reads its URL parameters with [NewParams] ([Params.Common] for
//     durability, lock_timeout and cache) and returns [Params.Err], which
//     refuses a parameter the driver did not ask for;
//  2. for a database with a path, takes it with [AbsPath] and calls
//     [CheckPath] before it creates or reads anything, and creates
//     directories 0700 and files 0600;
//  3. locks the database against other processes: store.ErrLocked once
//     Options.LockTimeout has passed, the message ending with
//     [LockTimeoutHint]; a name already open in this process is
//     store.ErrInUse;
//  4. compares the store's recorded [Meta] with [MetaFor] of the options
//     through [CompareMeta]: store.ErrIncompatible for another format
//     version, codec, type or key function, an empty store for another
//     scope ([Reopen].Reset), rebuilt index entries for another index set;
//  5. returns a store.Store.
//
// The store.Store (cache.Indexer and the rest) is written once; a backend
// provides the storage beneath it, in one of two ways:
//
//   - indexer.Persister, given to indexer.NewBase: the backend commits a
//     batch of changes with its resume point, and a new index set, each
//     atomically; Base keeps every object decoded and serves the reads
//     (memory with a snapshot file).
//   - engine.Engine of store/internal/engine: a Persister that also reads
//     objects by key, all objects and index entries in a read transaction;
//     engine.Load and engine.NewDecoded make the default mode, engine.New
//     the bounded mode (Options.CacheSize > 0), of bolt and badger.
//
// Writes are validated by indexer.Preparer, which refuses the keys
// [CheckKey] refuses, so that every backend refuses the same ones.
//
// # Record-level access
//
// A driver that also implements store.RawDriver serves store.Stores,
// store.ListStores, store.Export, store.Import, store.Drop and the snapshot
// tool; every bundled backend does. Import calls [CheckKey] on every record.
// A format that keeps each store's metadata apart makes Stores as
// [StoreInfos] of its ListStores; one that cannot makes ListStores as
// [EntriesOf] of its Stores.
//
// # Optional interfaces
//
// Further abilities are small interfaces of package store, discovered by type
// assertion, with a fallback when absent: on the driver store.RawFrozenViewer
// and store.RawLiveViewer; on the store store.Exporter, store.Lener,
// store.DiskSizer, store.BatchLimiter, store.BatchPreparer, store.StagedBatch
// and store.ReadFailer (embed [ReadFailures]).
//
// # Errors
//
// Errors follow package store's rule; a damaged record is store.ErrCorrupt,
// never handed out as an object.
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
