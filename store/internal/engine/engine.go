// Package engine is the store.Store of the persistent backends, written once
// over a small Engine that each backend implements over its storage and
// format. It has two modes:
//
//   - the decoded (default) mode, NewDecoded: every object is decoded when
//     the store opens (Load) and served from memory by indexer.Base, which
//     commits its writes through the engine;
//   - the bounded mode, New: only the most recently used decoded objects
//     are kept; everything else, index lookups included, is read from the
//     engine. Settle checks a sample of the objects when it opens.
//
// The backend does the rest of opening (its lock, its format, the store's
// recorded identity) and adds what is its own (export, disk size).
package engine

import (
	"context"

	"github.com/informerdb/informerdb/indexer"
)

// Engine is one store's storage: an indexer.Persister (Commit, SetIndexes,
// Close) that can also read and empty the store; its Commit keeps no
// reference to the changes' Data once it returns. The store serializes
// Commit, SetIndexes, Empty and Close; View may run concurrently with
// anything, Close included.
type Engine interface {
	indexer.Persister
	// View runs fn in a read transaction: every read of tx sees one
	// snapshot, opened when View is called, and tx is not used after fn
	// returns. It returns fn's error, or its own as the error of the
	// store operation op, wrapping store.ErrClosed after Close.
	View(op string, fn func(tx Tx) error) error
	// Empty drops every object and the resume point in one commit,
	// because of why (see loadcheck.KeyCheck).
	Empty(why string) error
}

// Tx reads one snapshot of a store (see Engine.View). Its methods stop at
// the first error of fn and return it. Data given to a Loader's use, and
// Loaders given to fn, are valid only during the call.
type Tx interface {
	// Object calls use with the encoding of the object stored under key,
	// and reports whether there is one.
	Object(key string, use func(data []byte) error) (found bool, err error)
	// Objects calls fn with every stored object's key and a Loader of its
	// encoding.
	Objects(fn func(key string, load Loader) error) error
	// Keys calls fn with every stored object's key.
	Keys(fn func(key string) error) error
	// Indexed calls fn with the key of every object having value in
	// index, one of the store's indexes, and a Loader of its encoding.
	Indexed(index, value string, fn func(key string, load Loader) error) error
	// Values calls fn once with each value of index (one of the store's)
	// that some object has.
	Values(index string, fn func(value string) error) error
	// All calls fn with every stored object, a batch of records at a
	// time, checking what a read of everything can check (an object
	// without its record, or the other way round, is store.ErrCorrupt).
	// With values, each record has the index values stored with it,
	// aligned with the index names the store records. The records stay
	// valid until the transaction ends: fn may hand them to goroutines
	// that are done with them before View returns.
	All(ctx context.Context, values bool, fn func(rs []Record) error) error
	// Sample calls fn with at most n stored objects, the first in the
	// engine's order, each with its stored index values as All gives
	// them (nil if they cannot be read). An object that cannot be read is
	// left out, but counts.
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
