package store

import "context"

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

// BatchPreparer is implemented by stores that can do the CPU work of a
// Commit (keys, index values, encodings) ahead of it, on the caller's
// goroutine and outside the store's serialization of writes. The informer
// prepares its next group while the store commits the previous one, so that
// encoding does not wait for, nor hold up, the disk.
type BatchPreparer interface {
	// PrepareBatch validates and encodes b's operations. It changes
	// nothing, and fails as Commit(b) would fail on invalid input.
	PrepareBatch(b Batch) (PreparedBatch, error)
}

// PreparedBatch is a batch prepared by BatchPreparer.PrepareBatch.
type PreparedBatch interface {
	// Commit commits the batch exactly as the store's Commit would have
	// committed the batch given to PrepareBatch. Were the store's indexes
	// changed meanwhile (AddIndexers), it prepares the batch again first.
	Commit(ctx context.Context) error
}

// StagedBatch is implemented by a PreparedBatch that can also be committed
// in two steps, so that its writer overlaps the durable write of one batch
// with its own work on the previous one: the informer persists a group
// while it applies and notifies the group before it.
//
// Persist writes the batch durably, exactly as Commit would (after a crash
// the store holds it, with its resume point), but reads (Get, List,
// ResourceVersion, ...) go on returning the state before it until apply is
// called; apply then makes them return it, at once for every read. On an
// error nothing is written and there is nothing to apply.
//
// Every successful Persist must be followed by its apply, exactly once,
// even after ctx ended or the store was closed, and the applies of one
// store in the order their Persists returned: until then, the store's other
// writes (Commit, Add, Replace, AddIndexers, ...) wait for it. The next
// Persist does not wait for the previous apply unless the store needs the
// applied state to write. Close does not wait: what was persisted is in the
// store when it is opened again, as after a crash between the two steps,
// and writes to the closed store fail with ErrClosed without waiting.
type StagedBatch interface {
	PreparedBatch
	Persist(ctx context.Context) (apply func(), err error)
}

// Prepare prepares b for s's Commit: with s's BatchPreparer when s has one;
// otherwise the batch returned does all the work when committed, as
// s.Commit(ctx, b), and invalid input fails there.
func Prepare(s Store, b Batch) (PreparedBatch, error) {
	if bp, ok := s.(BatchPreparer); ok {
		return bp.PrepareBatch(b)
	}
	return unprepared{s: s, b: b}, nil
}

// unprepared is the PreparedBatch of a store without BatchPreparer.
type unprepared struct {
	s Store
	b Batch
}

func (u unprepared) Commit(ctx context.Context) error { return u.s.Commit(ctx, u.b) }

// ReadFailer is implemented by stores whose reads without an error result
// (List, ListKeys, ListIndexFuncValues of cache.Indexer) read the database
// and can fail: the bounded modes of bolt and badger. Such a read logs the
// error and returns nothing; the store also keeps it here, so that its
// owner can treat the store as an Open that failed with the error would
// have told it to: an error wrapping ErrCorrupt means a damaged database,
// which deleting the database and relisting repairs.
type ReadFailer interface {
	// ReadErr returns the first error such a read met since the store
	// was opened, or nil.
	ReadErr() error
	// ReadErrors counts the reads that failed so (informerdb's
	// read-failure metric).
	ReadErrors() int64
}
