// Package engine is the store.Store of the persistent backends, written once
// over a small Engine that each backend implements over its storage (bbolt
// buckets, badger key prefixes) and its format. It has two modes:
//
//   - the decoded (default) mode, NewDecoded: every object is read and
//     decoded when the store opens (Load), and served from memory by
//     indexer.Base, which commits its writes through the engine;
//   - the bounded mode, New: at most a fixed number of decoded objects (the
//     most recently used) are kept, and everything else is read from the
//     engine, objects by key and index lookups from the persisted index
//     entries; Settle checks a sample of the objects when it opens.
//
// The backend does the rest of opening (its lock, its format, the store's
// recorded identity) and adds what is its own (export, disk size); it never
// implements a cache.Indexer method.
package engine

import (
	"context"

	"github.com/informerdb/informerdb/indexer"
)

// Engine is one store's storage. The store serializes the writes it makes
// (Commit, SetIndexes, Empty, Close); View may run concurrently
// with anything, Close included.
type Engine interface {
	// View runs fn in a read transaction: every read of tx sees one
	// snapshot, opened when View is called, and tx is not used after fn
	// returns. It returns fn's error, or its own, as the error of the
	// store operation op ("store: op name: ..."), and an error wrapping
	// store.ErrClosed when Close has made reading impossible.
	View(op string, fn func(tx Tx) error) error
	// Commit writes cs, whose index values are aligned with set's names,
	// and, unless rv is empty, the resume point rv, in one atomic commit;
	// with replace, cs are the whole new contents. With diffed, each
	// change's Existed and OldValues say what it replaces (the decoded
	// mode knows it from its cache); without, an engine that needs them
	// reads them from its storage. Commit keeps no reference to cs, nor to
	// their Data, once it returns. An error may come after the commit
	// landed (a failed sync): the caller assumes it may have.
	Commit(ctx context.Context, cs []indexer.Change, diffed bool, set *indexer.IndexSet, rv string, replace bool) error
	// SetIndexes records set as the store's index set and values (by
	// object key) as the index values of every stored object under it,
	// in one commit, with their index entries if the store keeps them.
	// (AddIndexers, and an open that found the stored values stale.)
	SetIndexes(ctx context.Context, set *indexer.IndexSet, values map[string][][]string) error
	// Empty drops every object and the resume point in one commit,
	// because of why (the key function no longer computes the stored
	// keys: see indexer.KeyCheck). Its error names the store and why.
	Empty(why string) error
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
	// All calls fn with every stored object, a batch of records at a
	// time, checking what a read of everything can check (an object
	// without its record, or the other way round, is store.ErrCorrupt).
	// With values, each record has the index values stored with its
	// object, aligned with the index names the store records. The
	// records, their data included, stay valid until the transaction
	// ends: fn may hand them to other goroutines, which must be done with
	// them before fn's View returns. (The decoded mode's Load.)
	All(ctx context.Context, values bool, fn func(rs []Record) error) error
	// Sample calls fn with at most n stored objects, the first in the
	// engine's order, each with the index values stored with it (aligned
	// with the index names the store records; nil if they cannot be
	// read). An object that cannot be read is left out, but counts.
	// (The bounded mode's check of its functions: see Settle.)
	Sample(n int, fn func(r Record) error) error
}

// Loader reads the encoding of one object and calls use with it.
type Loader func(use func(data []byte) error) error

// Record is one stored object, as Tx.All reads it.
type Record struct {
	Key string
	// Values are the index values stored with the object (see Tx.All).
	Values [][]string
	// Data is the object's encoding.
	Data []byte
}
