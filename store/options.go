package store

import (
	"fmt"
	"maps"
	"time"

	"k8s.io/client-go/tools/cache"
)

// DefaultName is the store name used when Options.Name is empty.
const DefaultName = "default"

// Durability says when a commit reaches stable storage.
type Durability string

const (
	// DurabilitySync (the default) makes every commit durable before it
	// returns: every invariant holds across kill -9 and power loss.
	DurabilitySync Durability = "sync"
	// DurabilityNoSync skips fsync. A process crash loses nothing, but a
	// power loss or kernel crash can lose recent commits or, depending on
	// the backend, the whole database: fit for caches that can relist.
	DurabilityNoSync Durability = "nosync"
)

// Options configure a store. The zero value, and a nil *Options, mean
// defaults. URL parameters override the matching fields.
type Options struct {
	// Name identifies the store inside its database; several stores (one per
	// resource) may share one database. Default DefaultName.
	Name string

	// Codec encodes objects for persistent backends and for memory snapshot
	// files. Required where the backend persists objects.
	Codec Codec

	// KeyFunc computes object keys. Default
	// cache.DeletionHandlingMetaNamespaceKeyFunc.
	KeyFunc cache.KeyFunc
	// KeyFuncName identifies KeyFunc in the store's metadata. Default
	// "namespace/name" when KeyFunc is nil; required when KeyFunc is set.
	// A store opened with another name fails with ErrIncompatible; one
	// whose function computes other keys under the same name starts empty
	// (Info().Reset says why). Open checks every object's key, or in the
	// bounded mode a sample of 256.
	KeyFuncName string

	// Indexers are the indexes kept from the start. A persistent store
	// whose recorded index set (by name) differs rebuilds its index entries
	// when opened. A function that computes something else under the same
	// name is found as a key function is, and its values stored; rename an
	// index whose function changes what only a few objects yield.
	Indexers cache.Indexers

	// Scope is an opaque fingerprint of what the store caches (cluster,
	// resource, namespace, selectors), supplied by the informer. A
	// persistent store opened with another non-empty Scope than the one
	// recorded is emptied and loses its resume point, so that it never
	// serves another scope's objects.
	Scope string

	// Durability of commits. Default DurabilitySync.
	Durability Durability

	// LockTimeout bounds the wait for a database held by another process.
	// Default 5s; after it Open fails with ErrLocked.
	LockTimeout time.Duration

	// CacheSize, when positive, bounds how many decoded objects a persistent
	// backend keeps in memory; reads of others decode them from the
	// database. Zero keeps every object decoded, which makes reads as fast
	// as client-go's indexer.
	CacheSize int

	// SnapshotInterval, for memory backends given a file, is how often a
	// snapshot is written besides the one written on Close. Zero writes only
	// on Close.
	SnapshotInterval time.Duration
}

// DefaultLockTimeout is the default of Options.LockTimeout.
const DefaultLockTimeout = 5 * time.Second

// WithDefaults returns a copy of o (which may be nil) with defaults filled in,
// or an error naming the first invalid field.
func (o *Options) WithDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Name == "" {
		r.Name = DefaultName
	}
	if r.KeyFunc == nil {
		if r.KeyFuncName == "" {
			r.KeyFuncName = "namespace/name"
		}
		r.KeyFunc = cache.DeletionHandlingMetaNamespaceKeyFunc
	} else if r.KeyFuncName == "" {
		return r, fmt.Errorf("store: options: KeyFuncName is required with a custom KeyFunc, so a reopened store can tell whether its keys still mean the same: %w", ErrInvalid)
	}
	if r.Indexers = maps.Clone(r.Indexers); r.Indexers == nil {
		r.Indexers = cache.Indexers{}
	}
	for name, f := range r.Indexers {
		if name == "" || f == nil {
			return r, fmt.Errorf("store: options: index %q: name must be non-empty and function non-nil: %w", name, ErrInvalid)
		}
	}
	switch r.Durability {
	case "":
		r.Durability = DurabilitySync
	case DurabilitySync, DurabilityNoSync:
	default:
		return r, fmt.Errorf("store: options: durability %q: want %q or %q: %w", r.Durability, DurabilitySync, DurabilityNoSync, ErrInvalid)
	}
	if r.LockTimeout == 0 {
		r.LockTimeout = DefaultLockTimeout
	}
	if r.LockTimeout < 0 || r.CacheSize < 0 || r.SnapshotInterval < 0 {
		return r, fmt.Errorf("store: options: LockTimeout, CacheSize and SnapshotInterval must not be negative: %w", ErrInvalid)
	}
	return r, nil
}
