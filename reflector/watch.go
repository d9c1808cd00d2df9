package reflector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/internal/typednil"
)

// watch makes one watch from st.lastRV (or continues the one a streaming
// list left open) and consumes it until it ends, then decides what follows.
func (r *Reflector) watch(ctx context.Context, st *runState) {
	logger := klog.FromContext(ctx)
	start := r.opts.Clock.Now()
	st.afterBackoff, st.slept = st.slept, false
	w := st.pending
	early := st.pendingEarly
	st.pending, st.pendingEarly = nil, nil
	catchUp := false
	// timeout is the watch's timeoutSeconds, 0 for the watch a streaming
	// list left open (its timeout started with the list).
	var timeout int64
	if early != nil {
		// The catch-up watch started before the reflector ran.
		defer early.release()
		start, timeout, catchUp = early.startedAt, early.timeout, r.catchingUp(st)
	}
	var deadline <-chan time.Time
	// stopDeadline stops the deadline's timer before a backoff, so that it
	// does not run through it: the next watch starts its own.
	stopDeadline := func() {}
	if !st.catchUpDeadline.IsZero() && !r.isCaughtUp() {
		left := st.catchUpDeadline.Sub(r.opts.Clock.Now())
		if left <= 0 {
			r.giveUpResume(st)
			if w != nil {
				w.Stop()
			}
			return
		}
		t := r.opts.Clock.NewTimer(left)
		deadline, stopDeadline = t.C(), func() { t.Stop() }
		defer stopDeadline()
	}
	if w == nil {
		catchUp = r.catchingUp(st)
		timeout = r.watchTimeoutSeconds(catchUp)
		r.count(func(s *Stats) { s.Watches++ })
		var err error
		w, err = r.startWatch(ctx, metav1.ListOptions{
			ResourceVersion:     st.lastRV,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      &timeout,
		})
		if err != nil {
			if ctx.Err() == nil {
				stopDeadline()
				r.watchFailed(ctx, st, fmt.Errorf("reflector %s: watch from %s: %w", r.opts.Name, st.lastRV, err))
			}
			return
		}
	}
	events, bookmarks, err := r.consume(ctx, w, st, deadline)
	w.Stop()
	stopDeadline()
	switch {
	case ctx.Err() != nil:
		return
	case errors.Is(err, errCatchUpDeadline):
		r.giveUpResume(st)
		return
	case err != nil:
		r.watchFailed(ctx, st, fmt.Errorf("reflector %s: watch from %s: %w", r.opts.Name, st.lastRV, err))
		return
	}
	elapsed := r.opts.Clock.Since(start)
	if timeout > 0 && elapsed < time.Duration(timeout)*time.Second-time.Second {
		// The watch closed before its timeout: a dropped connection or a
		// restarting server. Back off so that many clients do not come
		// back at once, and so that a watch that keeps closing cannot spin.
		if events+bookmarks == 0 {
			r.report(ctx, fmt.Errorf("reflector %s: watch from %s closed after %v with no events", r.opts.Name, st.lastRV, elapsed))
		}
		logger.V(2).Info("Watch closed early; backing off", "events", events, "bookmarks", bookmarks, "resourceVersion", st.lastRV)
		if catchUp {
			r.catchUpWatchEnded(ctx, st, bookmarks, true)
		}
		r.sleep(ctx, st)
		return
	}
	if timeout == 0 && events+bookmarks == 0 && elapsed < time.Second {
		r.report(ctx, fmt.Errorf("reflector %s: watch from %s closed at once with no events", r.opts.Name, st.lastRV))
		r.sleep(ctx, st)
		return
	}
	logger.V(4).Info("Watch ended", "events", events, "bookmarks", bookmarks, "resourceVersion", st.lastRV)
	if catchUp {
		r.catchUpWatchEnded(ctx, st, bookmarks, false)
	}
}

// startWatch starts a watch; a ListerWatcher bug, neither a watch nor an
// error, is errNoWatch.
func (r *Reflector) startWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := r.lw.WatchWithContext(ctx, opts)
	if err == nil && typednil.Is(w) {
		return nil, errNoWatch
	}
	return w, err
}

// watchFailed reports err and arranges the next step: a relist when the
// resume point is unusable, else a backoff before the next watch, whatever
// the error (see "Watching" in the package documentation).
func (r *Reflector) watchFailed(ctx context.Context, st *runState, err error) {
	r.report(ctx, err)
	switch {
	case isExpired(err):
		st.startRelist(ReasonExpired, "resourceVersion", st.lastRV)
		r.backOffRelist(ctx, st)
	case isTooLargeResourceVersion(err):
		st.startRelist(ReasonTooLarge, "resourceVersion", st.lastRV)
		r.backOffRelist(ctx, st)
	case apierrors.IsNotFound(err):
		st.checkServed = true // is the resource still served?
		r.sleep(ctx, st)
	default:
		r.sleep(ctx, st)
	}
}

// backOffRelist waits a backoff before a relist that would follow the last
// one within Backoff.Reset, unless the failed watch started after a backoff
// already (see "Watching" in the package documentation).
func (r *Reflector) backOffRelist(ctx context.Context, st *runState) {
	if st.afterBackoff {
		return
	}
	if !st.lastRelist.IsZero() && r.opts.Clock.Since(st.lastRelist) < r.opts.Backoff.Reset {
		r.sleep(ctx, st)
	}
}

func (r *Reflector) watchTimeoutSeconds(catchUp bool) int64 {
	if catchUp {
		return int64(r.opts.CatchUpWatchTimeout / time.Second)
	}
	lo := r.opts.MinWatchTimeout.Seconds()
	return int64(lo + rand.Float64()*lo)
}

// consume hands w's events to the queue until w closes, fails or ctx ends.
func (r *Reflector) consume(ctx context.Context, w watch.Interface, st *runState, deadline <-chan time.Time) (events, bookmarks int, err error) {
	for {
		select {
		case <-ctx.Done():
			return events, bookmarks, nil
		case <-deadline:
			if !r.isCaughtUp() {
				return events, bookmarks, errCatchUpDeadline
			}
			deadline = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return events, bookmarks, nil
			}
			if ev.Type == watch.Error {
				return events, bookmarks, errorEventErr(ev.Object)
			}
			if err := r.checkObject(ev.Object); err != nil {
				r.drop(ctx, ev.Type, err)
				continue
			}
			m, _ := meta.Accessor(ev.Object) // checkObject made sure it works
			rv := m.GetResourceVersion()
			var qerr error
			switch ev.Type {
			case watch.Added:
				qerr = r.q.Add(ev.Object)
			case watch.Modified:
				qerr = r.q.Update(ev.Object)
			case watch.Deleted:
				qerr = r.q.Delete(ev.Object)
			case watch.Bookmark:
				if rv == "" {
					continue
				}
				qerr = r.q.Bookmark(rv)
			default:
				r.drop(ctx, ev.Type, fmt.Errorf("reflector %s: watch event of unknown type %q", r.opts.Name, ev.Type))
				continue
			}
			isBookmark := ev.Type == watch.Bookmark
			switch {
			case qerr != nil && ctx.Err() != nil:
				// Stopping: the informer ends ctx, then closes the queue
				// under a write that may have been waiting for room in it.
				return events, bookmarks, ctx.Err()
			case qerr != nil:
				// Dropped, as client-go's watchHandler drops what its store
				// refuses: the resume point still moves past it (see the
				// package Caveats).
				r.drop(ctx, ev.Type, fmt.Errorf("reflector %s: queue %s %s at %s: %w", r.opts.Name, strings.ToLower(string(ev.Type)), objectName(m), rv, qerr))
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				st.mayHoldObjects = true
			}
			if isBookmark {
				bookmarks++
			} else {
				events++
			}
			if rv != "" {
				st.lastRV = rv
			}
			r.observed(ctx, rv, isBookmark)
		}
	}
}

// drop reports err about an event the reflector could not use or the queue
// refused, and counts it in Stats.Dropped unless it is a bookmark, which
// carries no object to lose.
func (r *Reflector) drop(ctx context.Context, t watch.EventType, err error) {
	r.report(ctx, err)
	if t != watch.Bookmark {
		r.count(func(s *Stats) { s.Dropped++ })
	}
}

// errorEventErr is the error an Error watch event carries. A typed nil
// status is reported rather than dereferenced (apierrors.FromObject would).
func errorEventErr(obj runtime.Object) error {
	if typednil.Is(obj) {
		return errNoStatus
	}
	return apierrors.FromObject(obj)
}

// checkObject rejects objects the reflector cannot use.
func (r *Reflector) checkObject(obj runtime.Object) error {
	if typednil.Is(obj) {
		return fmt.Errorf("reflector %s: watch event without an object", r.opts.Name)
	}
	if r.expType != nil {
		if got := reflect.TypeOf(obj); got != r.expType {
			return fmt.Errorf("reflector %s: watch event object of type %v, want %v", r.opts.Name, got, r.expType)
		}
	}
	if r.opts.ExpectedGVK != nil {
		if got := obj.GetObjectKind().GroupVersionKind(); got != *r.opts.ExpectedGVK {
			return fmt.Errorf("reflector %s: watch event object of kind %s, want %s", r.opts.Name, gvkString(got), gvkString(*r.opts.ExpectedGVK))
		}
	}
	if _, err := meta.Accessor(obj); err != nil {
		return fmt.Errorf("reflector %s: watch event object %T has no object metadata: %w", r.opts.Name, obj, err)
	}
	return nil
}

func gvkString(g schema.GroupVersionKind) string {
	if g.Empty() {
		return "<empty>"
	}
	return g.String()
}

func objectName(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}
