package indexer

import (
	"fmt"
	"runtime"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// Prepared is one validated operation, ready to be applied.
type Prepared struct {
	Type store.OpType
	Key  string
	// Object is the object to put, or the one given to delete (may be nil
	// or a cache.DeletedFinalStateUnknown).
	Object interface{}
	// Values are a put's index values, aligned with the IndexSet's names.
	Values [][]string
	// Data is the encoding of a put's Object when a codec was given.
	Data []byte
	// pooled marks Data as a buffer of encodeBuffers, given back once
	// persisted (see BaseConfig.CopiesData).
	pooled bool
}

// Preparer validates operations for one store: key function, index set and
// (optionally) codec.
type Preparer struct {
	KeyFunc cache.KeyFunc
	Indexes *IndexSet
	// Codec encodes objects for puts; nil skips encoding (memory backends).
	Codec store.Codec
	// CheckData, when set, refuses the encodings the backend cannot store
	// (see BaseConfig.CheckData).
	CheckData func(key string, data []byte) error
	// bufs, set by Base (BaseConfig.CopiesData), holds the buffers a
	// store.AppendEncoder encodes into.
	bufs *encodeBuffers
}

// Prepare validates every op of a write and computes keys (refusing those
// driver.CheckKey refuses), index values and encodings. It changes nothing:
// a write whose Prepare fails must not be applied at all, which is how a
// failed batch leaves no trace. op names the operation for error messages
// ("add", "commit", ...).
//
// Large batches are encoded on every CPU, as encoding dominates a commit's
// CPU time. Key and index functions still run on the calling goroutine, in
// order, as client-go calls them. The error reported is that of the first
// failing operation, whatever the worker that found it.
func (p *Preparer) Prepare(op string, ops []store.Op) ([]Prepared, error) {
	out := make([]Prepared, len(ops))
	parallel := p.Codec != nil && len(ops) >= parallelEncodeMin && runtime.GOMAXPROCS(0) > 1
	q := p
	if parallel {
		// Encoded by encodeAll, once every operation is known to be valid.
		q = &Preparer{KeyFunc: p.KeyFunc, Indexes: p.Indexes}
	}
	for i := range ops {
		if err := q.prepareOne(op, i, len(ops), &ops[i], &out[i]); err != nil {
			return nil, err
		}
	}
	if parallel {
		if err := p.encodeAll(op, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parallelEncodeMin is the batch size from which Prepare encodes in
// parallel: below it, starting workers costs more than it saves.
const parallelEncodeMin = 128

// encodeAll encodes the puts of ps in parallel chunks.
func (p *Preparer) encodeAll(op string, ps []Prepared) error {
	workers := min(runtime.GOMAXPROCS(0), (len(ps)+parallelEncodeMin/2-1)/(parallelEncodeMin/2))
	chunk := (len(ps) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(ps))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				r := &ps[i]
				if r.Type != store.OpPut {
					continue
				}
				if err := p.encode(op, r); err != nil {
					// Chunks are in order, and each stops at its first
					// failure: the first chunk's error is the batch's first.
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// prepareOne prepares o, op i of the n of the write op, into r.
func (p *Preparer) prepareOne(op string, i, n int, o *store.Op, r *Prepared) error {
	r.Type, r.Object, r.Key = o.Type, o.Object, o.Key
	switch o.Type {
	case store.OpPut:
		if typednil.Is(o.Object) {
			return fmt.Errorf("store: %s: nil object: %w", op, store.ErrInvalid)
		}
		if _, ok := o.Object.(cache.DeletedFinalStateUnknown); ok {
			return fmt.Errorf("store: %s: cannot store a cache.DeletedFinalStateUnknown tombstone: %w", op, store.ErrInvalid)
		}
	case store.OpDelete:
		if typednil.Is(o.Object) && o.Key == "" {
			return fmt.Errorf("store: %s: delete needs an object or a key: %w", op, store.ErrInvalid)
		}
	default:
		return fmt.Errorf("store: %s: unknown op type %d: %w", op, o.Type, store.ErrInvalid)
	}
	if r.Key == "" {
		k, err := CallKeyFunc(p.KeyFunc, o.Object)
		if err != nil {
			return fmt.Errorf("store: %s %T: key function: %w: %w", op, o.Object, store.ErrInvalid, err)
		}
		r.Key = k
	}
	// Before the index functions, and for deletes too: one rule for every
	// backend. The key says nothing, so the error names the op by its type
	// and object's type, and its position when the write has several.
	if err := driver.CheckKey(r.Key); err != nil {
		if n > 1 {
			return fmt.Errorf("store: %s: op %d of %d (%s %T): %w", op, i, n, o.Type, o.Object, err)
		}
		return fmt.Errorf("store: %s: %s %T: %w", op, o.Type, o.Object, err)
	}
	if o.Type == store.OpDelete {
		return nil
	}
	vals, err := p.Indexes.Values(r.Key, o.Object)
	if err != nil {
		return fmt.Errorf("store: %s %s: %w", op, r.Key, err)
	}
	r.Values = vals
	if p.Codec != nil {
		return p.encode(op, r)
	}
	return nil
}

// encode sets r.Data to r.Object's encoding, in a buffer of p.bufs when
// there are bufs and the codec can append to one, and checks it with
// p.CheckData; either error refuses the op as invalid.
func (p *Preparer) encode(op string, r *Prepared) error {
	var data []byte
	var err error
	if enc, ok := p.Codec.(store.AppendEncoder); ok && p.bufs != nil {
		data, err = guard("codec", func() ([]byte, error) { return enc.AppendEncode(p.bufs.get(), r.Object) })
		r.pooled = err == nil
	} else {
		data, err = Encode(p.Codec, r.Object)
	}
	if err != nil {
		return fmt.Errorf("store: %s %s: encode with %s codec: %w: %w", op, r.Key, p.Codec.Name(), store.ErrInvalid, err)
	}
	r.Data = data
	if p.CheckData != nil {
		if err := p.CheckData(r.Key, r.Data); err != nil {
			return fmt.Errorf("store: %s: %w", op, err)
		}
	}
	return nil
}
