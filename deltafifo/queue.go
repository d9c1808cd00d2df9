package deltafifo

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/cache"
)

// ErrClosed is returned by Pop once the queue is closed and drained, and by
// writes after Close.
var ErrClosed = errors.New("deltafifo: queue is closed")

// Batch is what one Pop hands its consumer.
type Batch struct {
	// Deltas to apply, oldest first: for the FIFO a contiguous run of events
	// in arrival order, for the DeltaFIFO the deltas of one key.
	Deltas cache.Deltas

	// ResourceVersion is the resume point that is safe to persist once Deltas
	// (and every earlier batch) have been applied: every watch event at or
	// before it has then been applied (DESIGN invariant 1). Empty means the
	// resume point must not move with this batch.
	ResourceVersion string

	// Replace is true when Deltas are one whole relist: a Replaced (or Sync)
	// delta for every listed object and a Deleted delta with a
	// cache.DeletedFinalStateUnknown for every known object the list lacks.
	// The consumer must apply such a batch in one atomic commit together with
	// ResourceVersion (DESIGN invariant 2). Only FIFO sets it.
	Replace bool

	// RelistPending is true when, after this batch, a relist is only partly
	// handed out (only DeltaFIFO sets it). A persisting consumer records it
	// in the same commit and, while it is recorded, relists on restart
	// instead of resuming (DESIGN invariant 2).
	RelistPending bool

	// RelistDone is true on the batch that hands out the last key a relist
	// touched (or, for a relist that queued no key, its bookmark entry);
	// only DeltaFIFO sets it. A consumer that applies a relist in one commit
	// gathers the batches from the first with RelistPending up to this one
	// (a relist of one key has RelistDone on its only batch).
	RelistDone bool

	// InInitialList is true while the queue has not synced yet (see
	// HasSynced): the batch belongs to the initial list, like the
	// isInInitialList argument of client-go's PopProcessFunc.
	InInitialList bool

	// HandedOut counts the events (see Queue.Arrived) handed out once this
	// batch has been: each of the first HandedOut events is in this batch
	// or an earlier one, was dropped by the queue, or (DeltaFIFO) is a
	// bookmark still queued whose resume point ResourceVersion covers. It
	// tells a consumer when an event has reached it where resourceVersions
	// cannot be compared.
	HandedOut uint64
}

// PopFunc consumes one batch. An error it returns is returned by Pop; the
// batch is consumed either way, so a consumer that must not lose the batch
// retries inside PopFunc.
type PopFunc func(ctx context.Context, b Batch) error

// Queue is written by the reflector and popped by the informer. Both queues
// in this package implement it.
type Queue interface {
	// Add, Update and Delete queue one watch event. The resourceVersion of
	// the event is read from obj before any transformer runs.
	Add(obj interface{}) error
	Update(obj interface{}) error
	Delete(obj interface{}) error
	// Replace queues a relist: list is the complete state at resourceVersion.
	Replace(list []interface{}, resourceVersion string) error
	// Resync queues a Sync delta for every known object.
	Resync() error
	// Bookmark queues a resume point with no object change.
	Bookmark(resourceVersion string) error
	// Arrived returns how many events the queue has taken so far: each
	// accepted write that queued something counts one (see
	// Batch.HandedOut).
	Arrived() uint64

	// Pop blocks until a batch is ready and hands it to process. It returns
	// ctx.Err() when ctx is done first, and ErrClosed once the queue is
	// closed and empty.
	Pop(ctx context.Context, process PopFunc) error

	// HasSynced reports whether what the first Replace queued has been
	// popped and processed (at once if it queued nothing to apply), or an
	// Add, Update or Delete came before any Replace, as in client-go.
	HasSynced() bool

	// Close stops the queue: Pop drains what is queued, then returns
	// ErrClosed. Close is idempotent.
	Close()
}
