package deltafifo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/internal/typednil"
)

// DefaultMaxBatch is the number of deltas a FIFO hands out per Pop when
// Options.MaxBatch is not set. It matches client-go's RealFIFO batch size.
const DefaultMaxBatch = 1000

// ErrInvalid is returned (wrapped) for bad input: a nil or typed-nil object,
// an object the key function rejects, panics on or maps to an empty key, a
// transformer error, an empty bookmark resourceVersion, a nil PopFunc. The
// queue is unchanged when a write returns it.
var ErrInvalid = errors.New("invalid argument")

// Options configure both queues. The zero value is usable.
type Options struct {
	// KeyFunction computes an object's key. Default cache.MetaNamespaceKeyFunc.
	// cache.DeletedFinalStateUnknown tombstones are always keyed by their Key
	// field and never reach KeyFunction, as in client-go.
	KeyFunction cache.KeyFunc

	// KnownObjects lists the keys (and objects) the consumer has applied: in
	// an informer, its store. It decides which keys a Replace deletes, what
	// a Resync emits, and (DeltaFIFO only) which Deletes are dropped as
	// already gone. It is read under the queue's lock, under which PopFunc
	// runs too. Nil means the consumer knows nothing: a Replace then only
	// deletes keys still queued, and Resync does nothing.
	KnownObjects cache.KeyListerGetter

	// EmitDeltaTypeReplaced makes Replace emit cache.Replaced deltas; when
	// false it emits cache.Sync deltas, as client-go does for compatibility.
	EmitDeltaTypeReplaced bool

	// Transformer, if set, runs on every object entering the queue through
	// Add, Update, Delete and Replace (not on tombstones, nor on Resync's
	// objects, transformed already). An event's resourceVersion is read
	// before it runs, so it may strip metadata.
	Transformer cache.TransformFunc

	// MaxBatch bounds the number of deltas one FIFO Pop hands out (a Replace
	// or Resync larger than that still goes out whole). Zero or negative
	// means DefaultMaxBatch. DeltaFIFO ignores it: it pops one key at a time.
	MaxBatch int

	// MaxQueued bounds the entries a FIFO holds: while it holds MaxQueued,
	// Add, Update and Delete wait until a Pop makes room (or Close), which
	// holds up the watch. Replace, Resync and Bookmark never wait. Zero or
	// negative means no bound. DeltaFIFO ignores it.
	MaxQueued int
}

func (o Options) withDefaults() Options {
	if o.KeyFunction == nil {
		o.KeyFunction = cache.MetaNamespaceKeyFunc
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	return o
}

// keyOf computes the key of obj for operation op. Tombstones are keyed by
// their Key, Deltas by their newest object, as in client-go. A key function
// that panics (a plain type assertion on an unexpected type) yields an
// error instead of taking the reflector down.
func keyOf(op string, keyFunc cache.KeyFunc, obj interface{}) (key string, err error) {
	if d, ok := obj.(cache.Deltas); ok {
		if len(d) == 0 {
			return "", fmt.Errorf("deltafifo: %s: empty Deltas have no key: %w", op, ErrInvalid)
		}
		obj = d.Newest().Object
	}
	if typednil.Is(obj) {
		return "", fmt.Errorf("deltafifo: %s: nil object: %w", op, ErrInvalid)
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if d.Key == "" {
			return "", fmt.Errorf("deltafifo: %s: tombstone with empty key: %w", op, ErrInvalid)
		}
		return d.Key, nil
	}
	defer func() {
		if r := recover(); r != nil {
			key, err = "", fmt.Errorf("deltafifo: %s: key function panicked on %T: %v: %w", op, obj, r, ErrInvalid)
		}
	}()
	key, err = keyFunc(obj)
	if err != nil {
		return "", fmt.Errorf("deltafifo: %s: key of %T: %w (%w)", op, obj, err, ErrInvalid)
	}
	if key == "" {
		return "", fmt.Errorf("deltafifo: %s: key function returned an empty key for %T: %w", op, obj, ErrInvalid)
	}
	return key, nil
}

// transform runs the transformer on obj unless it is a tombstone.
func transform(op string, t cache.TransformFunc, obj interface{}) (out interface{}, err error) {
	if t == nil {
		return obj, nil
	}
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return obj, nil
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("deltafifo: %s: transformer panicked on %T: %v: %w", op, obj, r, ErrInvalid)
		}
	}()
	out, err = t(obj)
	if err != nil {
		return nil, fmt.Errorf("deltafifo: %s: transform %T: %w (%w)", op, obj, err, ErrInvalid)
	}
	if typednil.Is(out) {
		return nil, fmt.Errorf("deltafifo: %s: transformer returned nil for %T: %w", op, obj, ErrInvalid)
	}
	return out, nil
}

// resourceVersionOf returns the metadata resourceVersion of obj, or "" for
// tombstones and objects without Kubernetes metadata.
func resourceVersionOf(obj interface{}) string {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		return "" // its object is the last known state, not the stream's
	case interface{ GetResourceVersion() string }:
		return o.GetResourceVersion()
	case metav1.ObjectMetaAccessor:
		if m := o.GetObjectMeta(); m != nil {
			return m.GetResourceVersion()
		}
	}
	return ""
}

// prepareEvent validates obj for a watch event and returns its key, its
// resourceVersion (read before the transformer) and the object to queue.
func prepareEvent(op string, o *Options, obj interface{}) (key, rv string, out interface{}, err error) {
	key, err = keyOf(op, o.KeyFunction, obj)
	if err != nil {
		return "", "", nil, err
	}
	rv = resourceVersionOf(obj)
	out, err = transform(op, o.Transformer, obj)
	if err != nil {
		return "", "", nil, err
	}
	return key, rv, out, nil
}

// replacedType is the delta type Replace emits.
func (o *Options) replacedType() cache.DeltaType {
	if o.EmitDeltaTypeReplaced {
		return cache.Replaced
	}
	return cache.Sync
}

// tombstone is the deletion of key whose last known object is obj; a
// tombstone never nests another one.
func tombstone(key string, obj interface{}) cache.DeletedFinalStateUnknown {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}

// core is what both queues share: their options, lock and closed state.
type core struct {
	opts Options

	// mu guards core's fields and those of the queue embedding it; cond
	// (on mu) signals new entries and Close.
	mu     sync.Mutex
	cond   sync.Cond
	closed bool
	// populated is set by the first Add, Update, Delete or Replace.
	populated bool
}

// init sets up c with options, nil for defaults.
func (c *core) init(options *Options) {
	if options != nil {
		c.opts = *options
	}
	c.opts = c.opts.withDefaults()
	c.cond.L = &c.mu
}

// KeyOf returns the key of obj as this queue computes it: tombstones by
// their Key, cache.Deltas by their newest object, anything else by the key
// function.
func (c *core) KeyOf(obj interface{}) (string, error) {
	return keyOf("key", c.opts.KeyFunction, obj)
}

// Close stops the queue: writes fail with ErrClosed, Pop hands out what is
// queued and then returns ErrClosed. Close is idempotent.
func (c *core) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.cond.Broadcast()
}

// IsClosed reports whether Close has been called.
func (c *core) IsClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// waitLocked blocks, with mu held, until ready reports true (nil), ctx is
// done (its error), or the queue is closed with nothing ready (ErrClosed).
// A done ctx wakes it through context.AfterFunc, which starts no goroutine
// unless ctx is actually done.
func (c *core) waitLocked(ctx context.Context, ready func() bool) error {
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ready() {
			return nil
		}
		if c.closed {
			return ErrClosed
		}
		if stop == nil {
			stop = context.AfterFunc(ctx, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.cond.Broadcast()
			})
		}
		if waitHook != nil {
			waitHook()
		}
		c.cond.Wait()
	}
}

// waitHook, set by tests only, runs (with the lock held) each time a Pop is
// about to block, so tests can act on a blocked Pop without sleeping.
var waitHook func()

// knownLocked returns every KnownObjects key that skip does not rule out,
// and its object, for a Replace's tombstones or a Resync; nothing when
// KnownObjects is nil. A lookup error is returned (the caller then leaves
// its queue unchanged rather than emit a tombstone without an object); a
// key whose object vanished between ListKeys and GetByKey is skipped.
func (c *core) knownLocked(op string, skip func(key string) bool) (keys []string, objs []interface{}, err error) {
	known := c.opts.KnownObjects
	if known == nil {
		return nil, nil, nil
	}
	for _, k := range known.ListKeys() {
		if skip(k) {
			continue
		}
		obj, exists, err := known.GetByKey(k)
		if err != nil {
			return nil, nil, fmt.Errorf("deltafifo: %s: known object %q: %w", op, k, err)
		}
		if exists && !typednil.Is(obj) {
			keys, objs = append(keys, k), append(objs, obj)
		}
	}
	return keys, objs, nil
}

// opClosedError is a write after Close: it reads "deltafifo: add: queue is
// closed" rather than repeating ErrClosed's prefix, and unwraps to ErrClosed.
type opClosedError struct{ op string }

func (e opClosedError) Error() string { return "deltafifo: " + e.op + ": queue is closed" }
func (e opClosedError) Unwrap() error { return ErrClosed }

func closedError(op string) error { return opClosedError{op: op} }
