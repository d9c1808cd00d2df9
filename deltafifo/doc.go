// Package deltafifo provides the queues between the reflector and the
// informer: FIFO, an in-order queue with client-go's RealFIFO semantics that
// the informer uses by default, and DeltaFIFO, compatible with client-go's
// DeltaFIFO, which groups deltas per key.
//
// Both hand their consumer, with each popped batch, the resourceVersion that
// is safe to persist once the batch is applied (see Batch.ResourceVersion).
// That is what lets a persistent informer resume its watch after a crash
// without skipping an event.
//
// # Which queue
//
// FIFO hands out every event in arrival order, and a relist as one batch to
// be applied in one commit. DeltaFIFO keeps client-go's per-key
// accumulation, so its resume point is a watermark over arrival order, and a
// relist is handed out key by key. Each type's doc has the details.
//
// # Differences from client-go
//
// Both queues hand bookmarks out as cache.Bookmark deltas carrying their
// resourceVersion (client-go's RealFIFO without atomic events drops them,
// and its DeltaFIFO has no Bookmark method): a persisting consumer needs them
// to move its resume point on a quiet resource (DESIGN invariant 1); a
// consumer written for client-go's queues ignores them.
//
// # Concurrency
//
// Both queues are safe for concurrent use. Pop blocks until a batch is ready,
// the queue is closed and drained (ErrClosed), or its ctx is done
// (ctx.Err()). PopFunc runs with the queue locked, as in client-go, so that
// a consumer can keep Options.KnownObjects in step with the queue; it must
// not call the queue's own methods.
//
// # Errors
//
// Bad input (see ErrInvalid) returns an error that names the operation
// ("deltafifo: add: ...") and wraps ErrInvalid and the cause; a lookup error
// from KnownObjects during Replace or Resync is returned wrapped. In every
// case the queue is unchanged. Writes after Close wrap ErrClosed.
//
// # Caveats
//
// PopFunc's batch is consumed even when it returns an error (see PopFunc).
// A transformer runs before the queue validates the rest of a Replace's
// list, so a transformer that mutates objects in place may have mutated
// some of them when a later item fails. Unless Options.MaxQueued bounds a
// FIFO, writers never block: the queue grows while the consumer lags, as
// client-go's do.
package deltafifo
