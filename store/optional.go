package store

// Lener is implemented by stores that count their objects without listing
// them. Informer metrics use it (informerdb_store_objects); without it they
// count the keys of List, which allocates on every scrape.
type Lener interface {
	// Len returns the number of stored objects; 0 once closed.
	Len() int
}

// DiskSizer is implemented by stores that can tell cheaply how many bytes
// their database takes on disk (informerdb_store_bytes). Stores that cannot
// do not implement it rather than guess.
type DiskSizer interface {
	// DiskSize returns the bytes the database occupies on disk, or an
	// error naming the cause.
	DiskSize() (int64, error)
}

// BatchLimiter is implemented by stores whose Commit has a size beyond which
// it costs far more than in proportion: badger commits a batch too large for
// one badger transaction by rewriting the whole store. Writers that group
// operations into commits (the informer's group commit) keep groups within
// MaxBatchOps when they can.
type BatchLimiter interface {
	// MaxBatchOps returns how many operations one Commit holds at its usual
	// cost, with the store's current indexes; 0 means no such limit.
	MaxBatchOps() int
}
