package snapfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/informerdb/informerdb/store"
)

// openings tracks the snapshot files whose first store is being opened, so
// that a backend can release its lock (mu) while that open waits for
// another process's lock and reads the file: the stores of other files
// open and close meanwhile, and a second open of the same file waits for
// the first. The zero value is ready to use; every method is called with
// mu held.
type openings struct {
	m map[string]chan struct{} // closed when the open of the path ends
}

// Start marks an open of path as under way, until done is called (with mu
// held): a Wait for path waits until then.
func (o *openings) Start(path string) (done func()) {
	if o.m == nil {
		o.m = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	o.m[path] = ch
	return func() {
		delete(o.m, path)
		close(ch)
	}
}

// Busy reports whether an open of path is under way.
func (o *openings) Busy(path string) bool { return o.m[path] != nil }

// Wait returns once no open of path is under way, releasing mu while it
// waits; it fails once ctx ends, or after timeout with store.ErrLocked and
// Open's hint (the open it waits for waits for another process's lock).
func (o *openings) Wait(ctx context.Context, mu *sync.Mutex, path string, timeout time.Duration) error {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		ch := o.m[path]
		if ch == nil {
			return nil
		}
		if t == nil {
			t = time.NewTimer(timeout)
		}
		mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = fmt.Errorf("snapfile: %s: waiting for another open of the file in this process: %w", path, ctx.Err())
		case <-t.C:
			err = fmt.Errorf("snapfile: %s: another open of the file in this process waited for its lock for %v: %w (%s)", path, timeout, store.ErrLocked, openLockHint)
		}
		mu.Lock()
		if err != nil {
			return err
		}
	}
}

// lockAndRead is the first open of the snapshot file at path in this
// process, called and returning with b.mu held: without b.mu, it locks the
// file against other processes and reads it. On error, nothing holds the
// lock. name and where (the store and the file) go into the errors.
func (b *Backend) lockAndRead(ctx context.Context, path, name, where string, timeout time.Duration) (*file, error) {
	b.mu.Unlock()
	defer b.mu.Lock()
	unlock, err := Lock(ctx, path, timeout)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("store: open %s in %s: %w (%s)", name, where, err, openLockHint)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", name, where, err)
	}
	// A missing file is an empty one.
	secs, _, err := readSections(context.Background(), path, nil)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		unlock()
		return nil, fmt.Errorf("store: open %s://%s: %w", b.Scheme, path, err)
	}
	f := &file{path: path, stores: map[string]*entry{}, unlock: unlock}
	for name, s := range secs {
		f.stores[name] = &entry{h: s.h, src: s}
	}
	return f, nil
}
