// Package bounded is the bounded mode of the persistent backends, written
// once: a store.Store that keeps at most a fixed number of decoded objects
// (the most recently used) and reads everything else from an Engine, objects
// by key and index lookups from the persisted index entries.
//
// A backend implements Engine over its storage (bbolt buckets, badger key
// prefixes) and its format; Store does the rest: every cache.Indexer method,
// the cache and the protocol that keeps it from serving an object a commit
// replaced, validation and preparation of writes, index bookkeeping, error
// wrapping and the accounting of reads that cannot return their error
// (store.ReadFailer).
//
// Engine and Tx are the seed of the driver interface every backend will
// implement: reads in a snapshot, a batch committed with its resume point.
package bounded

import (
	"context"

	"github.com/informerdb/informerdb/indexer"
)

// Engine is one store's storage. Store serializes the writes it makes
// (Commit, AddIndexes, Close); View may run concurrently with anything,
// Close included.
type Engine interface {
	// View runs fn in a read transaction: every read of tx sees one
	// snapshot, opened when View is called, and tx is not used after fn
	// returns. It returns fn's error, or its own, as the error of the
	// store operation op ("store: op name: ..."), and an error wrapping
	// store.ErrClosed when Close has made reading impossible.
	View(op string, fn func(tx Tx) error) error
	// Commit writes ps, whose index values are aligned with set's names,
	// and, unless rv is empty, the resume point rv, in one atomic commit;
	// with replace, ps are the whole new contents. An error may come
	// after the commit landed (a failed sync): the caller assumes it may
	// have.
	Commit(ctx context.Context, ps []indexer.Prepared, set *indexer.IndexSet, rv string, replace bool) error
	// AddIndexes computes the values of every stored object under set,
	// the current indexes and new ones, and persists them with their
	// index entries and the index names in one commit. cached returns an
	// object known to be the stored one, sparing its decoding.
	AddIndexes(set *indexer.IndexSet, cached func(key string) (interface{}, bool)) error
	// Close releases the store's storage.
	Close() error
}

// Tx reads one snapshot of a store (see Engine.View). Its methods stop at
// the first error of fn and return it. Data given to a Loader's use is valid
// only during the call.
type Tx interface {
	// Object calls use with the encoding of the object stored under key,
	// and reports whether there is one.
	Object(key string, use func(data []byte) error) (found bool, err error)
	// Objects calls fn with every stored object's key, and a Loader of
	// its encoding that is valid during the call.
	Objects(fn func(key string, load Loader) error) error
	// Keys calls fn with every stored object's key.
	Keys(fn func(key string) error) error
	// Indexed calls fn with the key of every object having value in
	// index, and a Loader of its encoding valid during the call. index
	// is one of the store's indexes in this snapshot.
	Indexed(index, value string, fn func(key string, load Loader) error) error
	// Values calls fn once with each value of index that some object
	// has. index is one of the store's indexes in this snapshot.
	Values(index string, fn func(value string) error) error
}

// Loader reads the encoding of one object and calls use with it.
type Loader func(use func(data []byte) error) error
