// Package memory is the in-memory informerdb backend: plain maps, as fast as
// client-go's indexer. Import it for its side effect of registering the
// memory:// scheme.
//
// # URLs
//
//	memory://            a store that lives as long as the process
//
// # Durability
//
// Without a file, nothing survives the process: the resume point is lost with
// it, and the informer lists again on start.
//
// # Concurrency
//
// Stores are safe for concurrent use. Reads take a read lock and never wait
// for encoding or I/O; writes are serialized.
//
// # Errors
//
// See package store. Bad input (nil objects, key and index function errors)
// returns an error wrapping store.ErrInvalid and leaves the store unchanged.
package memory
