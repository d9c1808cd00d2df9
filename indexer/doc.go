// Package indexer holds the object semantics every informerdb backend shares,
// written once: keys, index functions, index maintenance, codecs and
// resourceVersion extraction.
//
// Backends validate a write with [Prepare] (keys, index values and encodings
// for every operation, before anything changes), commit it in their own
// transaction, and keep decoded objects for reads in a [Cache], the
// equivalent of client-go's thread-safe store with errors instead of panics.
package indexer
