package reflector

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Early is the probe and the catch-up watch of a resume, started before
// the reflector runs, while its store is opened (step 2 of the resume rule).
// StartEarly makes one; Options.Early hands it to the reflector, which uses
// or stops it.
type Early struct {
	from      string
	startedAt time.Time
	timeout   int64 // the watch's timeoutSeconds
	cancel    context.CancelFunc
	done      chan struct{} // closed once both requests returned

	// Set before done is closed.
	probe    string
	probeErr error
	w        watch.Interface
	watchErr error

	mu    sync.Mutex
	taken bool // by a reflector, or stopped
}

// claim marks e taken, and reports whether it was not taken before.
func (e *Early) claim() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	was := e.taken
	e.taken = true
	return !was
}

// StartEarly starts the probe and the catch-up watch from resumeFrom of a
// reflector over lw with options o, in the background (both requests at
// once), and returns at once. They outlive ctx's cancellation (only its
// values are kept): stop the Early if no reflector takes it (Stop; an
// informer stops the Early of its Options.Reflector when it ends).
func StartEarly(ctx context.Context, lw cache.ListerWatcherWithContext, o Options, resumeFrom string) (*Early, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("reflector: start early: %w", err)
	}
	if resumeFrom == "" || o.CatchUpWatchTimeout <= 0 {
		return nil, fmt.Errorf("reflector: start early: nothing to resume from, or no catch-up watch")
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &Early{from: resumeFrom, startedAt: o.Clock.Now(), timeout: int64(o.CatchUpWatchTimeout / time.Second), cancel: cancel, done: make(chan struct{})}
	r := &Reflector{lw: lw, opts: o}
	var wg sync.WaitGroup
	wg.Go(func() { e.probe, e.probeErr = r.probeOnce(ctx) })
	wg.Go(func() {
		e.w, e.watchErr = r.startWatch(ctx, metav1.ListOptions{
			ResourceVersion:     resumeFrom,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      &e.timeout,
		})
	})
	go func() {
		wg.Wait()
		close(e.done)
	}()
	return e, nil
}

// Stop stops the Early's watch, unless a reflector took it. It may be
// called more than once, and concurrently with a reflector taking it.
func (e *Early) Stop() {
	if e != nil && e.claim() {
		e.stopWhenDone()
	}
}

// stopWhenDone releases e once its requests returned.
func (e *Early) stopWhenDone() {
	go func() {
		<-e.done
		e.release()
	}()
}

// take returns e for a reflector resuming from resume at now, waiting (up
// to ctx) for its requests to return; nil, after stopping it, when it is
// for another resume point, too old, or stopped already.
func (e *Early) take(ctx context.Context, resume string, now time.Time) *Early {
	if e == nil {
		return nil
	}
	usable := e.from == resume && now.Sub(e.startedAt) < time.Duration(e.timeout)*time.Second
	if !usable {
		// A probe older than one catch-up watch would make the sync
		// target older than the reflector's start by more than the
		// bookmark wait it saves.
		e.Stop()
		return nil
	}
	if !e.claim() {
		return nil
	}
	select {
	case <-e.done:
		return e
	case <-ctx.Done():
		e.stopWhenDone()
		return nil
	}
}

// release ends the Early's requests once the reflector is done with them.
func (e *Early) release() {
	if e.w != nil {
		e.w.Stop()
	}
	e.cancel()
}

// useEarly resumes with e's probe and watch, as probe and the first watch
// would: it reports false, having released e, when e's probe failed (the
// reflector then probes itself).
func (r *Reflector) useEarly(ctx context.Context, st *runState, e *Early) bool {
	if e.probeErr != nil {
		e.release()
		return false
	}
	r.count(func(s *Stats) { s.Lists++ })
	st.goneNoted = false
	r.resumeOrRelist(ctx, st, e.probe)
	if e.w == nil || st.relist != "" || st.gone || st.lastRV != e.from {
		// The watch failed (the reflector's own watch follows), or the
		// probe decided against resuming from e.from.
		e.release()
		return true
	}
	r.count(func(s *Stats) { s.Watches++ })
	st.pending, st.pendingEarly = e.w, e
	return true
}
