// Package deltafifo provides the queues between the reflector and the
// informer: FIFO, an in-order queue with client-go's RealFIFO semantics that
// the informer uses by default, and DeltaFIFO, compatible with client-go's
// DeltaFIFO, which groups deltas per key.
//
// Both hand their consumer, with each popped batch, the resourceVersion that
// is safe to persist once the batch is applied (see Batch.ResourceVersion).
// That is what lets a persistent informer resume its watch after a crash
// without skipping an event.
package deltafifo
