package driver

import (
	"sync"
	"sync/atomic"
)

// ReadFailures records the failures of reads that cannot return an error,
// for stores implementing store.ReadFailer by embedding it. The zero value is
// ready; it is safe for concurrent use.
type ReadFailures struct {
	mu    sync.Mutex // guards first
	first error
	n     atomic.Int64
}

// Failed records err, a read's failure.
func (r *ReadFailures) Failed(err error) {
	r.n.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		r.first = err
	}
}

// ReadErr implements store.ReadFailer.
func (r *ReadFailures) ReadErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// ReadErrors implements store.ReadFailer.
func (r *ReadFailures) ReadErrors() int64 { return r.n.Load() }
