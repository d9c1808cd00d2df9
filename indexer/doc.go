// Package indexer holds the object semantics every informerdb backend shares,
// written once: keys, index functions, index maintenance and codecs.
//
// Backends validate a write with [Preparer] (keys, index values and
// encodings of every operation, before anything changes), commit it in their
// own transaction, and keep decoded objects for reads in a [Cache], the
// equivalent of client-go's thread-safe store with errors instead of panics.
//
// # Differences from client-go
//
// Every backend's store behaves as client-go's cache.NewIndexer (v0.37) for
// the same operations on valid input: Index returns the objects sharing at
// least one value with the given object, each once; IndexKeys is sorted;
// IndexKeys, ByIndex and Index of a value nobody has return an empty list,
// not nil, and no error; a value whose last object leaves its index
// disappears from ListIndexFuncValues; Index, IndexKeys and ByIndex of an
// unknown index fail, and ListIndexFuncValues of one is empty (not nil);
// deleting an absent object is no error; Replace keeps the last of several
// objects under one key and rebuilds every index; AddIndexers fills the new
// indexes from the stored objects and refuses a taken name with an error
// that says "indexer conflict", as client-go's; LastStoreSyncResourceVersion
// moves as client-go's with its AtomicFIFO feature (see store.Store).
// TestDifferentialClientGo checks this against client-go on random
// operations. The deliberate differences, pinned by TestClientGoDifferences,
// are:
//
//   - Errors instead of panics. An index function that fails or panics on
//     an object being written (Add, Update, Replace, Commit) or backfilled
//     (AddIndexers) fails the whole write with an error wrapping
//     store.ErrInvalid and changes nothing. client-go panics, after having
//     changed its objects (and, in AddIndexers, kept the index it could not
//     fill). A panicking key function is an error too.
//   - Every write validates all its input. Replace computes index values and
//     encodings for every object of its list, so one that fails makes the
//     Replace fail even when a later object under the same key replaces it;
//     client-go only indexes the last.
//   - Input client-go takes is refused with store.ErrInvalid, without
//     calling key or index functions: nil and typed-nil objects (also as
//     Index's object), a cache.DeletedFinalStateUnknown to store (client-go
//     stores the tombstone itself), an empty key (client-go stores under
//     ""), an index named "" or a nil index function in AddIndexers, and,
//     where the backend encodes objects, one the codec cannot encode.
//   - Error values. Key function errors wrap store.ErrInvalid and the key
//     function's error; they are not cache.KeyError. An unknown index wraps
//     store.ErrNotFound ("index "x" does not exist", where client-go says
//     "Index with name x does not exist"); a taken name in AddIndexers wraps
//     store.ErrIndexExists. An index function's error from Index is wrapped,
//     with store.ErrInvalid, not returned as is.
//   - GetIndexers returns a copy; client-go returns its own map, through
//     which changes reach the indexer.
//   - Update and Delete remove an object's old index entries using the
//     values computed when it was written, which is the same for the
//     deterministic index functions client-go requires.
//   - Objects are the ones given to Add as long as they stay decoded in
//     memory; in bounded mode (CacheSize) and after a restart, reads return
//     decoded copies. List, ListKeys, ByIndex, Index and ListIndexFuncValues
//     have no specified order in either; some backends return key order.
//   - A store can be closed: then every method with an error result fails
//     with store.ErrClosed, and List, ListKeys and ListIndexFuncValues
//     return nil.
package indexer
