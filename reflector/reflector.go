package reflector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Queue receives what the reflector observes. deltafifo.Queue satisfies it.
//
// The reflector calls it from one goroutine, in the order the server sent
// the events. A call may block (a full queue applies back-pressure): the
// reflector stops reading the watch meanwhile, so nothing is lost or
// reordered, but Run cannot return before the call does.
type Queue interface {
	Add(obj interface{}) error
	Update(obj interface{}) error
	Delete(obj interface{}) error
	// Replace hands over one complete list at resourceVersion.
	Replace(list []interface{}, resourceVersion string) error
	// Bookmark hands over a resume point with no object change.
	Bookmark(resourceVersion string) error
}

// Relist reasons, as logged and counted in RelistStats.
const (
	ReasonCold       = "cold"
	ReasonExpired    = "expired"
	ReasonTooLarge   = "too-large"
	ReasonTimeTravel = "time-travel"
	ReasonCatchUp    = "catch-up"
)

// Stats are the reflector's counters since New.
type Stats struct {
	// Lists counts LIST requests: the freshness probe and every page.
	Lists int64
	// WatchLists counts streaming-list requests (sendInitialEvents=true).
	WatchLists int64
	// Watches counts plain WATCH requests.
	Watches int64
	// Resumes counts starts that chose to watch from ResumeFrom without a
	// list (the watch may still end in a relist).
	Resumes int64
	// Relists counts completed full lists by reason.
	Relists RelistStats
	// Events counts ADDED, MODIFIED and DELETED events handed to the queue.
	Events int64
	// Bookmarks counts BOOKMARK events handed to the queue.
	Bookmarks int64
}

// RelistStats counts completed full lists by reason.
type RelistStats struct {
	Cold, Expired, TooLarge, TimeTravel, CatchUp int64
}

func (s *RelistStats) add(reason string) {
	switch reason {
	case ReasonCold:
		s.Cold++
	case ReasonExpired:
		s.Expired++
	case ReasonTooLarge:
		s.TooLarge++
	case ReasonTimeTravel:
		s.TimeTravel++
	case ReasonCatchUp:
		s.CatchUp++
	}
}

// Reflector lists and watches one resource and feeds a Queue, resuming from
// a persisted resourceVersion when it has one. Its methods are safe for
// concurrent use; Run may be called once.
type Reflector struct {
	lw      cache.ListerWatcherWithContext
	q       Queue
	opts    Options
	expType reflect.Type
	started atomic.Bool

	// caughtUpCh is closed when the sync target has been reached.
	caughtUpCh chan struct{}

	mu sync.Mutex // guards the fields below
	// lastRV is the resourceVersion of the newest list, event or bookmark
	// handed to the queue.
	lastRV string
	stats  Stats
	// target is the sync target: the probe's RV after a resume, the list's
	// RV after a cold start.
	target    string
	targetSet bool
	// caughtUpRV is the RV of the first list, event or bookmark that reached
	// target; caughtUp says whether there was one.
	caughtUpRV string
	caughtUp   bool
}

// New returns a Reflector that lists and watches through lw and feeds q.
func New(lw cache.ListerWatcherWithContext, q Queue, opts Options) (*Reflector, error) {
	if isNilInterface(lw) {
		return nil, fmt.Errorf("reflector: new: ListerWatcher is nil: %w", ErrInvalid)
	}
	if isNilInterface(q) {
		return nil, fmt.Errorf("reflector: new: Queue is nil: %w", ErrInvalid)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("reflector: new %s: %w: %w", opts.Name, ErrInvalid, err)
	}
	r := &Reflector{lw: lw, q: q, opts: o, caughtUpCh: make(chan struct{})}
	if o.ExpectedType != nil {
		r.expType = reflect.TypeOf(o.ExpectedType)
	}
	return r, nil
}

func isNilInterface(v interface{}) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Name returns Options.Name.
func (r *Reflector) Name() string { return r.opts.Name }

// Stats returns a copy of the counters.
func (r *Reflector) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// LastSyncResourceVersion returns the resourceVersion of the newest list,
// event or bookmark handed to the queue, or ResumeFrom before any.
func (r *Reflector) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastRV == "" {
		return r.opts.ResumeFrom
	}
	return r.lastRV
}

// SyncTarget returns the resourceVersion the informer must reach before it
// reports synced: after a resume, the RV of the consistent probe LIST; after
// a cold start, the RV of the initial list. ok is false until it is known.
func (r *Reflector) SyncTarget() (rv string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target, r.targetSet
}

// CaughtUp returns a channel closed once the reflector has handed the queue
// a list, an event or a bookmark at or past the sync target.
func (r *Reflector) CaughtUp() <-chan struct{} { return r.caughtUpCh }

// CaughtUpResourceVersion returns the resourceVersion of the list, event or
// bookmark that reached the sync target. The informer is synced once every
// delta it has queued up to and including that call has been applied, that
// is once its persisted resume point has reached rv. ok is false until then.
func (r *Reflector) CaughtUpResourceVersion() (rv string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUpRV, r.caughtUp
}

// SyncedAt reports whether an informer whose applied (persisted) resume
// point is applied has caught up: the reflector has reached its sync target,
// and applied is at or past the resourceVersion that reached it. When the two
// do not compare (opaque resourceVersions), only an exact match counts; an
// informer on such a server should also accept the batch that carried that
// resourceVersion.
func (r *Reflector) SyncedAt(applied string) bool {
	rv, ok := r.CaughtUpResourceVersion()
	if !ok || applied == "" {
		return false
	}
	if applied == rv {
		return true
	}
	cmp, err := resourceversion.CompareResourceVersion(applied, rv)
	return err == nil && cmp >= 0
}

// runState is the state of one Run, owned by its goroutine.
type runState struct {
	delay wait.DelayFunc
	// lastRV is where the next watch starts.
	lastRV string
	// relist, when set, is why the next step is a full list; relistKV
	// adds details to its log line, logged once however many attempts it
	// takes.
	relist       string
	relistKV     []interface{}
	relistLogged bool
	// pending is the watch left open by a streaming list.
	pending watch.Interface
	// catchUpMisses counts catch-up watches in a row that ended without a
	// bookmark.
	catchUpMisses int
	// noWatchList records that the streaming list failed in auto mode.
	noWatchList bool
	// catchUpDeadline, when set, is when a resume that has not reached the
	// sync target is given up for a relist.
	catchUpDeadline time.Time
}

// Run lists and watches until ctx is done, then returns nil. Failed requests
// are reported to Options.WatchErrorHandler and retried with backoff. It
// returns an error only when Run was called before.
func (r *Reflector) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		// A second Run would start again from Options.ResumeFrom, which
		// the queue has long moved past.
		return fmt.Errorf("reflector %s: run: already started; a Reflector runs once, make a new one to restart", r.opts.Name)
	}
	logger := klog.FromContext(ctx).WithValues("reflector", r.opts.Name)
	ctx = klog.NewContext(ctx, logger)

	st := &runState{delay: r.opts.Backoff.delayFunc(r.opts.Clock)}
	defer func() {
		if st.pending != nil {
			st.pending.Stop()
		}
	}()
	if r.opts.ResumeFrom != "" {
		if !r.probe(ctx, st) {
			return nil
		}
	} else {
		st.relist = ReasonCold
	}
	for ctx.Err() == nil {
		if st.relist != "" {
			if err := r.relist(ctx, st); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				r.report(ctx, err)
				r.sleep(ctx, st)
				continue
			}
		}
		r.watch(ctx, st)
	}
	logger.V(3).Info("Reflector stopped")
	return nil
}

// probe makes the consistent LIST with limit=1 whose RV is the sync target,
// and decides between resuming and relisting. It returns false when ctx
// ended first.
func (r *Reflector) probe(ctx context.Context, st *runState) bool {
	logger := klog.FromContext(ctx)
	var p string
	for {
		var err error
		p, err = r.probeOnce(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false
		}
		r.report(ctx, err)
		if !r.sleep(ctx, st) {
			return false
		}
	}
	resume := r.opts.ResumeFrom
	r.mu.Lock()
	r.target, r.targetSet = p, true
	r.mu.Unlock()

	cmp, err := resourceversion.CompareResourceVersion(resume, p)
	switch {
	case err != nil:
		// Some servers (aggregated APIs) use opaque RVs. Time travel cannot
		// be detected there; say so rather than guess.
		logger.Info("Resuming watch; time-travel check skipped: resourceVersions are not comparable",
			"resumeFrom", resume, "syncTarget", p, "err", err)
	case cmp > 0:
		st.relist = ReasonTimeTravel
		st.relistKV = []interface{}{"resumeFrom", resume, "serverResourceVersion", p}
		return true
	default:
		logger.Info("Resuming watch", "resumeFrom", resume, "syncTarget", p)
	}
	st.lastRV = resume
	r.mu.Lock()
	r.stats.Resumes++
	if err == nil && cmp == 0 {
		// Nothing happened since the store was written.
		r.markCaughtUpLocked(ctx, resume)
	}
	r.mu.Unlock()
	if r.opts.CatchUpDeadline > 0 {
		st.catchUpDeadline = r.opts.Clock.Now().Add(r.opts.CatchUpDeadline)
	}
	return true
}

func (r *Reflector) probeOnce(ctx context.Context) (string, error) {
	r.count(func(s *Stats) { s.Lists++ })
	obj, err := r.lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err != nil {
		return "", fmt.Errorf("reflector %s: probe list: %w", r.opts.Name, err)
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return "", fmt.Errorf("reflector %s: probe list: reading list metadata: %w", r.opts.Name, err)
	}
	if lm.GetResourceVersion() == "" {
		return "", fmt.Errorf("reflector %s: probe list: server returned no resourceVersion", r.opts.Name)
	}
	return lm.GetResourceVersion(), nil
}

// relist makes a full consistent list and hands it to the queue as one
// Replace.
func (r *Reflector) relist(ctx context.Context, st *runState) error {
	logger := klog.FromContext(ctx)
	reason := st.relist
	if !st.relistLogged {
		logger.Info("Listing", append([]interface{}{"reason", reason}, st.relistKV...)...)
		st.relistLogged = true
	}
	if st.pending != nil {
		st.pending.Stop()
		st.pending = nil
	}

	var (
		items []interface{}
		rv    string
		w     watch.Interface
		err   error
	)
	if r.useWatchList(st) {
		w, items, rv, err = r.watchList(ctx)
		if err != nil {
			if ctx.Err() != nil || r.opts.WatchList != nil || !watchListUnsupported(err) {
				// Forced, or a failure a LIST would share (server down,
				// throttled): back off and stream again.
				return err
			}
			// Auto mode and the server will not stream: use paginated
			// LISTs for the rest of this Run.
			logger.V(2).Info("Streaming list not supported; falling back to paginated LIST", "err", err)
			st.noWatchList = true
		}
	}
	if w == nil {
		items, rv, err = r.list(ctx)
		if err != nil {
			return err
		}
	}
	if err := r.q.Replace(items, rv); err != nil {
		if w != nil {
			w.Stop()
		}
		return fmt.Errorf("reflector %s: replace %d objects at %s: %w", r.opts.Name, len(items), rv, err)
	}
	st.relist, st.relistKV, st.relistLogged = "", nil, false
	st.catchUpDeadline = time.Time{}
	st.lastRV = rv
	st.pending = w
	st.catchUpMisses = 0
	r.mu.Lock()
	r.lastRV = rv
	r.stats.Relists.add(reason)
	if !r.targetSet {
		r.target, r.targetSet = rv, true
	}
	// A consistent list made after the probe is at least as new as the
	// probe, so it reaches the target without comparing RVs.
	r.markCaughtUpLocked(ctx, rv)
	r.mu.Unlock()
	logger.V(2).Info("Listed", "reason", reason, "objects", len(items), "resourceVersion", rv)
	return nil
}

func (r *Reflector) useWatchList(st *runState) bool {
	if r.opts.WatchList != nil {
		return *r.opts.WatchList
	}
	return !st.noWatchList && !watchlist.DoesClientNotSupportWatchListSemantics(r.lw)
}

// list makes a consistent paginated LIST.
func (r *Reflector) list(ctx context.Context) ([]interface{}, string, error) {
	opts := metav1.ListOptions{ResourceVersion: "", Limit: r.opts.PageSize}
	var (
		items []interface{}
		rv    string
	)
	for {
		r.count(func(s *Stats) { s.Lists++ })
		obj, err := r.lw.ListWithContext(ctx, opts)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				// The continue token outlived etcd's compaction: the pages
				// so far and the rest no longer form one snapshot. Start
				// over with one unpaginated list, as client-go's pager does.
				klog.FromContext(ctx).V(2).Info("List continuation expired; listing without pages", "err", err)
				opts = metav1.ListOptions{ResourceVersion: ""}
				items, rv = nil, ""
				continue
			}
			return nil, "", fmt.Errorf("reflector %s: list: %w", r.opts.Name, err)
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, "", fmt.Errorf("reflector %s: list: reading list metadata: %w", r.opts.Name, err)
		}
		if rv == "" {
			rv = lm.GetResourceVersion()
		}
		objs, err := meta.ExtractListWithAlloc(obj)
		if err != nil {
			return nil, "", fmt.Errorf("reflector %s: list: extracting items: %w", r.opts.Name, err)
		}
		for _, o := range objs {
			items = append(items, o)
		}
		if lm.GetContinue() == "" {
			break
		}
		opts.Continue = lm.GetContinue()
	}
	if rv == "" {
		return nil, "", fmt.Errorf("reflector %s: list: server returned no resourceVersion", r.opts.Name)
	}
	if items == nil {
		items = []interface{}{}
	}
	return items, rv, nil
}

// watchList makes a streaming list: a watch whose initial events are the
// current state, ended by the initial-events-end bookmark. It returns the
// watch, left open for the events that follow.
func (r *Reflector) watchList(ctx context.Context) (watch.Interface, []interface{}, string, error) {
	timeout := r.watchTimeoutSeconds(false)
	r.count(func(s *Stats) { s.WatchLists++ })
	w, err := r.lw.WatchWithContext(ctx, metav1.ListOptions{
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeout,
	})
	if err == nil && isNilInterface(w) {
		err = errNoWatch
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("reflector %s: streaming list: %w", r.opts.Name, err)
	}
	// Initial events are keyed so that a (not expected) update or delete
	// before the end bookmark is folded in rather than duplicated.
	tmp := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return nil, nil, "", ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil, "", fmt.Errorf("reflector %s: streaming list: %w", r.opts.Name, errStreamEndedEarly)
			}
			if ev.Type == watch.Error {
				w.Stop()
				return nil, nil, "", fmt.Errorf("reflector %s: streaming list: %w", r.opts.Name, apierrors.FromObject(ev.Object))
			}
			if err := r.checkObject(ev.Object); err != nil {
				r.report(ctx, err)
				continue
			}
			var serr error
			switch ev.Type {
			case watch.Added, watch.Modified:
				serr = tmp.Update(ev.Object)
			case watch.Deleted:
				serr = tmp.Delete(ev.Object)
			case watch.Bookmark:
				m, _ := meta.Accessor(ev.Object) // checkObject made sure it works
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					continue
				}
				if m.GetResourceVersion() == "" {
					w.Stop()
					return nil, nil, "", fmt.Errorf("reflector %s: streaming list: initial-events-end bookmark has no resourceVersion", r.opts.Name)
				}
				return w, tmp.List(), m.GetResourceVersion(), nil
			}
			if serr != nil {
				r.report(ctx, fmt.Errorf("reflector %s: streaming list: %s event: %w", r.opts.Name, ev.Type, serr))
			}
		}
	}
}

// watch makes one watch from st.lastRV (or continues the one a streaming
// list left open) and consumes it until it ends, then decides what follows.
func (r *Reflector) watch(ctx context.Context, st *runState) {
	logger := klog.FromContext(ctx)
	start := r.opts.Clock.Now()
	w := st.pending
	st.pending = nil
	catchUp := false
	// timeout is the watch's timeoutSeconds, 0 for the watch a streaming
	// list left open (its timeout started with the list).
	var timeout int64
	var deadline <-chan time.Time
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
		defer t.Stop()
		deadline = t.C()
	}
	if w == nil {
		catchUp = r.catchingUp(st)
		timeout = r.watchTimeoutSeconds(catchUp)
		r.count(func(s *Stats) { s.Watches++ })
		var err error
		w, err = r.lw.WatchWithContext(ctx, metav1.ListOptions{
			ResourceVersion:     st.lastRV,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      &timeout,
		})
		if err == nil && isNilInterface(w) {
			err = errNoWatch
		}
		if err != nil {
			if ctx.Err() == nil {
				r.watchFailed(ctx, st, fmt.Errorf("reflector %s: watch from %s: %w", r.opts.Name, st.lastRV, err))
			}
			return
		}
	}
	events, bookmarks, err := r.consume(ctx, w, st, deadline)
	w.Stop()
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, errCatchUpDeadline) {
		r.giveUpResume(st)
		return
	}
	if err != nil {
		r.watchFailed(ctx, st, fmt.Errorf("reflector %s: watch from %s: %w", r.opts.Name, st.lastRV, err))
		return
	}
	switch {
	case !catchUp:
	case bookmarks > 0:
		st.catchUpMisses = 0
	default:
		st.catchUpMisses++
		if st.catchUpMisses == maxCatchUpMisses {
			logger.V(1).Info("Server sent no bookmark on catch-up watches; waiting for an event at or past the sync target, or the catch-up deadline", "catchUpDeadline", r.opts.CatchUpDeadline)
		}
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
		r.sleep(ctx, st)
		return
	}
	if timeout == 0 && events+bookmarks == 0 && elapsed < time.Second {
		r.report(ctx, fmt.Errorf("reflector %s: watch from %s closed at once with no events", r.opts.Name, st.lastRV))
		r.sleep(ctx, st)
		return
	}
	logger.V(4).Info("Watch ended", "events", events, "bookmarks", bookmarks, "resourceVersion", st.lastRV)
}

// giveUpResume turns a resume that did not reach its sync target in time
// into a relist.
func (r *Reflector) giveUpResume(st *runState) {
	target, _ := r.SyncTarget()
	st.relist = ReasonCatchUp
	st.relistKV = []interface{}{"syncTarget", target, "resourceVersion", st.lastRV, "after", r.opts.CatchUpDeadline}
	st.catchUpDeadline = time.Time{}
}

func (r *Reflector) isCaughtUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUp
}

// watchFailed reports err and arranges the next step: a relist when the
// resume point is unusable, else a backoff before the next watch.
func (r *Reflector) watchFailed(ctx context.Context, st *runState, err error) {
	r.report(ctx, err)
	switch {
	case isExpired(err):
		st.relist, st.relistKV = ReasonExpired, []interface{}{"resourceVersion", st.lastRV}
	case isTooLargeResourceVersion(err):
		st.relist, st.relistKV = ReasonTooLarge, []interface{}{"resourceVersion", st.lastRV}
	default:
		r.sleep(ctx, st)
	}
}

// catchingUp says whether the next watch should be a short catch-up watch.
func (r *Reflector) catchingUp(st *runState) bool {
	if r.opts.CatchUpWatchTimeout <= 0 || st.catchUpMisses >= maxCatchUpMisses {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.targetSet && !r.caughtUp
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
				return events, bookmarks, apierrors.FromObject(ev.Object)
			}
			if err := r.checkObject(ev.Object); err != nil {
				r.report(ctx, err)
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
				r.report(ctx, fmt.Errorf("reflector %s: watch event of unknown type %q", r.opts.Name, ev.Type))
				continue
			}
			if qerr != nil {
				r.report(ctx, fmt.Errorf("reflector %s: queue %s %s at %s: %w", r.opts.Name, strings.ToLower(string(ev.Type)), objectName(m), rv, qerr))
			}
			isBookmark := ev.Type == watch.Bookmark
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

// observed records an event or bookmark at rv handed to the queue.
func (r *Reflector) observed(ctx context.Context, rv string, bookmark bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if bookmark {
		r.stats.Bookmarks++
	} else {
		r.stats.Events++
	}
	if rv == "" {
		return
	}
	r.lastRV = rv
	if !r.targetSet || r.caughtUp {
		return
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, r.target)
	switch {
	case err != nil:
		// Opaque RVs: a bookmark is the server saying it has sent
		// everything up to now, and every event here comes after the
		// probe; it is the only signal such a server gives.
		if bookmark {
			klog.FromContext(ctx).V(2).Info("Caught up by bookmark; resourceVersions are not comparable", "resourceVersion", rv, "syncTarget", r.target)
			r.markCaughtUpLocked(ctx, rv)
		}
	case cmp >= 0:
		r.markCaughtUpLocked(ctx, rv)
	}
}

func (r *Reflector) markCaughtUpLocked(ctx context.Context, rv string) {
	if r.caughtUp {
		return
	}
	r.caughtUp, r.caughtUpRV = true, rv
	close(r.caughtUpCh)
	klog.FromContext(ctx).V(2).Info("Caught up with sync target", "syncTarget", r.target, "resourceVersion", rv)
}

// checkObject rejects objects the reflector cannot use.
func (r *Reflector) checkObject(obj runtime.Object) error {
	if isNilInterface(obj) {
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

// report hands err to the watch error handler.
func (r *Reflector) report(ctx context.Context, err error) {
	if h := r.opts.WatchErrorHandler; h != nil {
		h(ctx, nil, err)
		return
	}
	klog.FromContext(ctx).V(2).Info("List or watch failed", "err", err)
}

// sleep waits for the next backoff delay. It returns false if ctx ended.
func (r *Reflector) sleep(ctx context.Context, st *runState) bool {
	t := r.opts.Clock.NewTimer(st.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

func (r *Reflector) count(f func(*Stats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.stats)
}

// errCatchUpDeadline ends a watch when Options.CatchUpDeadline has passed.
var errCatchUpDeadline = errors.New("sync target not reached by the catch-up deadline")

// errNoWatch is a ListerWatcher bug, reported rather than dereferenced.
var errNoWatch = errors.New("ListerWatcher returned neither a watch nor an error")

// errStreamEndedEarly: a server that ignores sendInitialEvents (before
// Kubernetes 1.27) answers with a plain watch, which ends at its timeout
// without the initial-events-end bookmark.
var errStreamEndedEarly = errors.New("stream closed before the initial-events-end bookmark")

// watchListUnsupported reports the streaming-list failures that a paginated
// LIST may not share: the server rejects or ignores the request.
func watchListUnsupported(err error) bool {
	return errors.Is(err, errStreamEndedEarly) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

// isExpired reports the errors that mean "this resourceVersion is gone":
// 410 Expired, and 410 Gone from servers before 1.18.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion reports the error a server gives for a
// resourceVersion newer than it knows: a status cause since 1.18, only the
// message before.
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsTimeout(err) {
		return false
	}
	s := st.Status()
	if strings.Contains(s.Message, "Too large resource version") {
		return true
	}
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return false
}
