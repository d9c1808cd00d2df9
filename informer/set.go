package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// informerSet holds the informers a Factory or a typed factory made, by
// key: it makes each once, runs them, waits for their sync, checks their
// commits, and at shutdown stops them and closes their stores.
//
// An informerSet is safe for concurrent use.
type informerSet[K comparable] struct {
	op string // the owner, in errors: "factory"

	mu      sync.Mutex // guards entries, making, cancels and closed
	entries map[K]*setEntry
	// making holds, per key, the informer being made, closed when that is
	// over: the work is done outside mu, as it may wait for the API
	// server or another process's lock.
	making  map[K]chan struct{}
	cancels []context.CancelFunc
	closed  bool
	wg      sync.WaitGroup // the informers start started
	makers  sync.WaitGroup // get calls making an informer

	// stopped is cancelled by shutdown, which ends the waits of the
	// informers being made.
	stopped context.Context
	stop    context.CancelFunc
	// shutDown is closed once shutdown is over; shutdownErr is its result,
	// for every caller.
	shutDown    chan struct{}
	shutdownErr error
}

// setEntry is a key's informer: made, or (err set) the stand-in of one
// that could not be made.
type setEntry struct {
	inf     cache.SharedIndexInformer
	made    *Informer // nil when err is set
	err     error
	started bool
}

func newInformerSet[K comparable](op string) *informerSet[K] {
	s := &informerSet[K]{op: op, entries: map[K]*setEntry{}, making: map[K]chan struct{}{}, shutDown: make(chan struct{})}
	s.stopped, s.stop = context.WithCancel(context.Background())
	return s
}

// get returns key's informer, made by newInformer (name names it in
// errors) on first use, with a context that ends with ctx or shutdown
// (cause ErrStopped). If failed is set, a failure is kept for good as
// failed(err), returned with the error from then on; otherwise the next
// get tries again, and every get after shutdown fails with ErrStopped.
func (s *informerSet[K]) get(ctx context.Context, key K, name string, newInformer func(context.Context) (*Informer, error), failed func(error) cache.SharedIndexInformer) (cache.SharedIndexInformer, error) {
	for {
		s.mu.Lock()
		if e, ok := s.entries[key]; ok && (failed != nil || !s.closed) {
			s.mu.Unlock()
			return e.inf, e.err
		}
		if s.closed {
			e := &setEntry{err: fmt.Errorf("informer: %s: informer for %s: %w", s.op, name, ErrStopped)}
			if failed != nil {
				e.inf = failed(e.err)
				s.entries[key] = e
			}
			s.mu.Unlock()
			return e.inf, e.err
		}
		if made, ok := s.making[key]; ok {
			// Another call makes it: take its informer, or try again
			// if it failed.
			s.mu.Unlock()
			select {
			case <-made:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("informer: %s: informer for %s: %w", s.op, name, context.Cause(ctx))
			}
		}
		made := make(chan struct{})
		s.making[key] = made
		s.makers.Add(1)
		s.mu.Unlock()

		mctx, cancel := context.WithCancelCause(ctx)
		stopWatching := context.AfterFunc(s.stopped, func() { cancel(ErrStopped) })
		inf, err := newInformer(mctx)
		stopWatching()
		cancel(nil)
		s.mu.Lock()
		delete(s.making, key)
		close(made)
		if err == nil && s.closed {
			// shutdown ran meanwhile and waits for this call: the store
			// is closed before it returns.
			err = fmt.Errorf("informer: %s: informer for %s: %w", s.op, name, ErrStopped)
			if cerr := inf.closeStore(s.op + ": shutdown"); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
		e := &setEntry{inf: inf, made: inf}
		if err != nil {
			e = &setEntry{err: err}
			if failed != nil {
				e.inf = failed(err)
				s.entries[key] = e
			}
		} else {
			s.entries[key] = e
		}
		s.mu.Unlock()
		s.makers.Done()
		return e.inf, err
	}
}

// start runs, until ctx is done or shutdown, every informer made so far
// that is not running yet.
func (s *informerSet[K]) start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, e := range s.entries {
		if e.started {
			continue
		}
		e.started = true
		runCtx, cancel := context.WithCancel(ctx)
		s.cancels = append(s.cancels, cancel)
		inf := e.inf
		s.wg.Go(func() { inf.RunWithContext(runCtx) })
	}
}

// waitForCacheSync waits until every informer start started has synced or
// stopped (its start failed, or shutdown), or ctx is done, and reports
// which have synced. The error, set if one has not, holds the errors of
// the informers that could not be made, of those that stopped unsynced
// and, if ctx ended, its cause.
func (s *informerSet[K]) waitForCacheSync(ctx context.Context) (map[K]bool, error) {
	s.mu.Lock()
	started := map[K]*setEntry{}
	for key, e := range s.entries {
		if e.started {
			started[key] = e
		}
	}
	s.mu.Unlock()
	synced := make(map[K]bool, len(started))
	all := true
	var errs []error
	for key, e := range started {
		inf := e.made
		if inf == nil {
			errs = append(errs, e.err)
			all, synced[key] = false, false
			continue
		}
		select {
		case <-inf.syncedCh:
		case <-inf.ended:
			// It will never sync: waiting for it would only wait for ctx.
			if !inf.HasSynced() {
				errs = append(errs, fmt.Errorf("informer %s stopped before it synced", inf.Name()))
			}
		case <-ctx.Done():
		}
		synced[key] = inf.HasSynced()
		all = all && synced[key]
	}
	if all {
		return synced, nil
	}
	if ctx.Err() != nil {
		errs = append(errs, context.Cause(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return synced, err
	}
	return synced, fmt.Errorf("informer: %s: not every informer synced", s.op)
}

// checkCommits is Informer.CheckCommits over every informer made: nil
// while all of their commits get through, else the errors of those whose
// do not, joined.
func (s *informerSet[K]) checkCommits(maxFailing time.Duration) error {
	s.mu.Lock()
	var infs []*Informer
	for _, e := range s.entries {
		if e.made != nil {
			infs = append(infs, e.made)
		}
	}
	s.mu.Unlock()
	return checkCommits(infs, maxFailing)
}

// checkCommits joins the CheckCommits errors of infs, in the order of
// their names.
func checkCommits(infs []*Informer, maxFailing time.Duration) error {
	slices.SortFunc(infs, func(a, b *Informer) int { return strings.Compare(a.name, b.name) })
	var errs []error
	for _, inf := range infs {
		if err := inf.CheckCommits(maxFailing); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// shutdown stops the informers start started, waits for them to return
// and for the calls of get making an informer (which end with ErrStopped),
// closes the stores of every informer made, and then calls last, if set.
// Every call returns once the first is over, with its result.
func (s *informerSet[K]) shutdown(last func() error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.shutDown
		return s.shutdownErr
	}
	s.closed = true
	s.stop()
	for _, cancel := range s.cancels {
		cancel()
	}
	s.mu.Unlock()
	s.makers.Wait()
	s.wg.Wait()
	s.mu.Lock()
	entries := slices.Collect(maps.Values(s.entries))
	s.mu.Unlock()
	var errs []error
	for _, e := range entries {
		// An informer the caller runs has its store closed when it ends.
		if e.made != nil {
			if err := e.made.closeStore(s.op + ": shutdown"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if last != nil {
		if err := last(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.shutdownErr = fmt.Errorf("informer: %s: shutdown: %w", s.op, err)
	}
	close(s.shutDown)
	return s.shutdownErr
}
