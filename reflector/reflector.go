package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/internal/typednil"
)

// Queue receives what the reflector observes. deltafifo.Queue satisfies it.
// The reflector calls it from one goroutine, in the order the server sent
// the events. A call may block (back-pressure): the reflector stops reading
// the watch meanwhile, and Run cannot return before the call does.
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
	// ReasonScopeChange and ReasonCorrupt are cold starts with a known
	// cause (Options.ColdReason).
	ReasonScopeChange = "scope-change"
	ReasonCorrupt     = "corrupt"
	// ReasonGone counts the absences of the resource (a LIST got 404: its
	// CRD was deleted, or its API group removed) that emptied a store that
	// may have held objects, with an empty Replace, so that every object
	// reaches handlers as deleted (DESIGN invariant 5). When the resource
	// is served again it is listed from scratch (reason cold).
	ReasonGone = "gone"
)

// Reasons lists every relist reason, in the order of RelistStats' fields.
var Reasons = []string{ReasonCold, ReasonExpired, ReasonTooLarge, ReasonTimeTravel, ReasonCatchUp, ReasonScopeChange, ReasonCorrupt, ReasonGone}

// Stats are the reflector's counters since New.
type Stats struct {
	// Lists counts LIST requests: the probe, the catch-up nudges, the
	// checks that a resource is still served, and every page.
	Lists int64
	// WatchLists counts streaming-list requests (sendInitialEvents=true).
	WatchLists int64
	// Watches counts plain WATCH requests.
	Watches int64
	// Resumes counts starts that chose to watch from ResumeFrom without a
	// list (the watch may still end in a relist).
	Resumes int64
	// Relists counts relists by reason, each once, when its list is first
	// handed to the queue (so a reader that sees the informer synced sees
	// it counted), however many attempts its Replace takes. Gone counts
	// stores emptied instead.
	Relists RelistStats
	// Events counts ADDED, MODIFIED and DELETED events handed to the
	// queue, including the ones it refused.
	Events int64
	// Bookmarks counts BOOKMARK events handed to the queue.
	Bookmarks int64
	// StartedAt is when Run started, TargetAt when the sync target became
	// known, and CaughtUpAt when the reflector reached it, on
	// Options.Clock; zero until then.
	StartedAt, TargetAt, CaughtUpAt time.Time
	// Dropped counts ADDED, MODIFIED and DELETED events lost: refused by
	// the queue (these are in Events too), or unusable (an object of
	// another type or GVK, without metadata, an unknown event type). Each
	// is reported to the WatchErrorHandler (see the package Caveats).
	Dropped int64
}

// RelistStats counts relists by reason (see Stats.Relists).
type RelistStats struct {
	Cold, Expired, TooLarge, TimeTravel, CatchUp, ScopeChange, Corrupt, Gone int64
}

// counters maps every reason of Reasons to its field of s.
func (s *RelistStats) counters() map[string]*int64 {
	return map[string]*int64{
		ReasonCold: &s.Cold, ReasonExpired: &s.Expired, ReasonTooLarge: &s.TooLarge,
		ReasonTimeTravel: &s.TimeTravel, ReasonCatchUp: &s.CatchUp,
		ReasonScopeChange: &s.ScopeChange, ReasonCorrupt: &s.Corrupt, ReasonGone: &s.Gone,
	}
}

// ByReason returns the counters keyed by reason (every reason of Reasons,
// zeros included).
func (s RelistStats) ByReason() map[string]int64 {
	m := make(map[string]int64, len(Reasons))
	for reason, c := range s.counters() {
		m[reason] = *c
	}
	return m
}

func (s *RelistStats) add(reason string) {
	if c, ok := s.counters()[reason]; ok {
		*c++
	}
}

// Reflector lists and watches one resource and feeds a Queue, resuming from
// a persisted resourceVersion when it has one (see the package
// documentation).
type Reflector struct {
	lw      cache.ListerWatcherWithContext
	q       Queue
	opts    Options
	expType reflect.Type
	started atomic.Bool

	// caughtUpCh is closed when the sync target has been reached,
	// targetCh when it became known.
	caughtUpCh, targetCh chan struct{}

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
	// caughtUpByRelist says the reaching call was a relist's Replace.
	caughtUpByRelist bool
	// incomparableLogged records that Synced logged that the sync target
	// does not compare with the applied resume point.
	incomparableLogged bool
}

// New returns a Reflector that lists and watches through lw and feeds q.
func New(lw cache.ListerWatcherWithContext, q Queue, options *Options) (*Reflector, error) {
	var opts Options
	if options != nil {
		opts = *options
	}
	if typednil.Is(lw) {
		return nil, fmt.Errorf("reflector: new: ListerWatcher is nil: %w", ErrInvalid)
	}
	if typednil.Is(q) {
		return nil, fmt.Errorf("reflector: new: Queue is nil: %w", ErrInvalid)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("reflector: new %s: %w: %w", opts.Name, ErrInvalid, err)
	}
	r := &Reflector{lw: lw, q: q, opts: o, caughtUpCh: make(chan struct{}), targetCh: make(chan struct{})}
	if o.ExpectedType != nil {
		r.expType = reflect.TypeOf(o.ExpectedType)
	}
	return r, nil
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

// runState is the state of one Run, owned by its goroutine.
type runState struct {
	delay wait.DelayFunc
	// lastRV is where the next watch starts.
	lastRV string
	// relist, when set, is why the next step is a full list; relistKV
	// adds details to its log line. Set through startRelist.
	relist        string
	relistKV      []interface{}
	relistLogged  bool
	relistCounted bool
	// pending is the watch left open by a streaming list, or the catch-up
	// watch of pendingEarly (Options.Early).
	pending      watch.Interface
	pendingEarly *Early
	// catchUpMisses counts catch-up watches in a row that ended without a
	// bookmark.
	catchUpMisses int
	// noWatchList records that the streaming list failed in auto mode.
	noWatchList bool
	// catchUpDeadline, when set, is when a resume that has not reached the
	// sync target is given up for a relist.
	catchUpDeadline time.Time
	// gone records that the store was emptied because the server does not
	// serve the resource, until a list succeeds again.
	gone bool
	// goneNoted records that the current absence of the resource (404s
	// since it was last served) has been logged and counted, so that a
	// retried emptying Replace is not counted again.
	goneNoted bool
	// mayHoldObjects is false while the store is known to hold nothing:
	// after a cold start, an empty list or an emptied store, until an
	// object is added or updated. After a resume it is assumed true.
	mayHoldObjects bool
	// checkServed makes the next step a LIST of one object that tells
	// whether the resource is still served, after a watch got 404.
	checkServed bool
	// lastRelist is when the last full list was handed to the queue; zero
	// before any.
	lastRelist time.Time
	// slept records a backoff since the last watch started or the last
	// relist; afterBackoff, that the current watch started after one
	// (see backOffRelist).
	slept, afterBackoff bool
}

// Run lists and watches until ctx is done, then returns nil. Failed requests
// are reported to Options.WatchErrorHandler and retried with backoff. It
// returns an error only when Run was called before.
func (r *Reflector) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		// A second Run would start again from Options.ResumeFrom, which
		// the queue has moved past.
		return fmt.Errorf("reflector %s: run: already started; a Reflector runs once, make a new one to restart", r.opts.Name)
	}
	logger := klog.FromContext(ctx).WithValues("reflector", r.opts.Name)
	ctx = klog.NewContext(ctx, logger)

	st := &runState{delay: r.opts.Backoff.delayFunc(r.opts.Clock), mayHoldObjects: r.opts.ResumeFrom != ""}
	r.count(func(s *Stats) { s.StartedAt = r.opts.Clock.Now() })
	defer st.dropPending()
	if !r.begin(ctx, st) {
		return nil
	}
	for ctx.Err() == nil {
		if st.relist == "" && st.checkServed {
			if err := r.checkServed(ctx, st); err != nil {
				r.listFailed(ctx, st, err)
				continue
			}
		}
		if st.relist != "" {
			if err := r.relist(ctx, st); err != nil {
				r.listFailed(ctx, st, err)
				continue
			}
		}
		r.watch(ctx, st)
	}
	logger.V(3).Info("Reflector stopped")
	return nil
}

// listFailed reports a failed LIST, empties the store if it said the
// resource is not served (see resourceGone), and backs off. A failure
// because ctx ended is not reported. It returns false if ctx ended.
func (r *Reflector) listFailed(ctx context.Context, st *runState, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	r.report(ctx, err)
	r.resourceGone(ctx, st, err)
	return r.sleep(ctx, st)
}

// startRelist makes the next step a full list for reason: a new decision to
// relist, logged and counted once however many attempts it takes.
func (st *runState) startRelist(reason string, kv ...interface{}) {
	st.relist, st.relistKV, st.relistLogged, st.relistCounted = reason, kv, false, false
}

// report hands err to the watch error handler, or logs it.
func (r *Reflector) report(ctx context.Context, err error) {
	if h := r.opts.WatchErrorHandler; h != nil {
		h(ctx, nil, err)
		return
	}
	logger := klog.FromContext(ctx)
	switch {
	case isExpired(err), isTooLargeResourceVersion(err):
		// Routine: the relist that follows is logged.
		logger.V(2).Info("Watch closed", "err", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		logger.V(1).Info("List or watch closed with unexpected EOF", "err", err)
	default:
		// As client-go's DefaultWatchErrorHandler: a failure that repeats
		// until someone fixes it (a 403 for missing RBAC, a selector the
		// server rejects) must show at default verbosity, or an informer
		// that never syncs would not say why.
		logger.Error(err, "List or watch failed")
	}
}

// sleep waits for the next backoff delay. It returns false if ctx ended.
func (r *Reflector) sleep(ctx context.Context, st *runState) bool {
	t := r.opts.Clock.NewTimer(st.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		st.slept = true
		return true
	}
}

func (r *Reflector) count(f func(*Stats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.stats)
}

// dropPending stops the watch left pending, and ends the requests of the
// Early it came from.
func (st *runState) dropPending() {
	switch {
	case st.pendingEarly != nil:
		st.pendingEarly.release()
	case st.pending != nil:
		st.pending.Stop()
	}
	st.pending, st.pendingEarly = nil, nil
}
