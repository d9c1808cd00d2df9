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
