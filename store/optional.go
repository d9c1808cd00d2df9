package store

import "context"

// Lener is implemented by stores that count their objects without listing
// them (the informerdb_store_objects metric; without it, metrics count List).
type Lener interface {
	// Len returns the number of stored objects; 0 once closed.
	Len() int
}

// DiskSizer is implemented by stores that can tell cheaply how many bytes
// their database takes on disk (informerdb_store_bytes).
type DiskSizer interface {
	// DiskSize returns the bytes the database occupies on disk.
	DiskSize() (int64, error)
}

// BatchLimiter is implemented by stores whose Commit costs far more than in
// proportion beyond a size (badger, for a batch too large for one
// transaction). Writers that group operations keep groups within
// MaxBatchOps when they can.
type BatchLimiter interface {
	// MaxBatchOps returns how many operations one Commit holds at its usual
	// cost, with the store's current indexes; 0 means no limit.
	MaxBatchOps() int
}

// BatchPreparer is implemented by stores that can do the CPU work of a
// Commit (keys, index values, encodings) ahead of it, on the caller's
// goroutine, so that encoding neither waits for nor holds up the disk.
type BatchPreparer interface {
	// PrepareBatch validates and encodes b's operations. It changes
	// nothing, and fails as Commit(b) would fail on invalid input.
	PrepareBatch(b Batch) (PreparedBatch, error)
}

// PreparedBatch is a batch prepared by BatchPreparer.PrepareBatch.
type PreparedBatch interface {
	// Commit commits the batch exactly as the store's Commit would have.
	// Were the store's indexes changed meanwhile (AddIndexers), it
	// prepares the batch again first.
	Commit(ctx context.Context) error
}

// StagedBatch is implemented by a PreparedBatch that can also be committed
// in two steps, so that its writer overlaps the durable write of one batch
// with its work on the previous one.
//
// Persist writes the batch durably, exactly as Commit would, but reads go on
// returning the state before it until apply is called; apply then makes them
// return it, at once for every read. On an error nothing is written and
// there is nothing to apply.
//
// Every successful Persist must be followed by its apply, exactly once, even
// after ctx ended or the store was closed, and the applies of one store in
// the order their Persists returned: until then the store's other writes
// wait for it. The next Persist does not wait for the previous apply unless
// the store needs the applied state to write. Close does not wait: what was
// persisted is in the store when it is opened again, as after a crash
// between the two steps, and writes to the closed store fail with ErrClosed.
type StagedBatch interface {
	PreparedBatch
	Persist(ctx context.Context) (apply func(), err error)
}

// Prepare prepares b for s's Commit with s's BatchPreparer; for a store
// without one, the batch returned does all the work when committed, and
// invalid input fails there.
func Prepare(s Store, b Batch) (PreparedBatch, error) {
	if bp, ok := s.(BatchPreparer); ok {
		return bp.PrepareBatch(b)
	}
	return unprepared{s: s, b: b}, nil
}

type unprepared struct {
	s Store
	b Batch
}

func (u unprepared) Commit(ctx context.Context) error { return u.s.Commit(ctx, u.b) }

// ReadFailer is implemented by stores whose reads without an error result
// (List, ListKeys, ListIndexFuncValues) read the database and can fail (the
// bounded modes). Such a read logs the error and returns nothing; the store
// keeps the error so that its owner can act as if Open had failed with it.
type ReadFailer interface {
	// ReadErr returns the first error such a read met since Open, or nil.
	ReadErr() error
	// ReadErrors counts the reads that failed so.
	ReadErrors() int64
}
