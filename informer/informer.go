package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/informerdb/informerdb/deltafifo"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// ErrStopped is returned (wrapped) by methods that cannot be used once the
// informer has stopped. Its text is client-go's, for callers that match it.
var ErrStopped = errors.New("informer has stopped already")

// ErrStarted is returned (wrapped) by setters that must be called before the
// informer starts.
var ErrStarted = errors.New("informer: already started")

// Informer is a cache.SharedIndexInformer whose cache is a store.Store: its
// objects, indexes and resume point outlive the process, and a restarted
// informer resumes its watch from the persisted resourceVersion instead of
// listing every object again.
//
// Handlers see client-go's semantics, notified once the store holds the
// change, and after a restart hear of what changed while the process was
// down (see the package doc: Pipeline, Restart, Concurrency).
//
// An Informer is safe for concurrent use. It runs once; the store is owned
// by the caller, who closes it after Run returns (a Factory or an
// InformerConstructor closes the stores it opened, see Factory.Shutdown).
type Informer struct {
	lw      cache.ListerWatcherWithContext
	example runtime.Object
	store   store.Store
	reads   *closedReads // the store, as GetStore and GetIndexer give it
	opts    Options
	view    *view
	proc    *processor
	logger  klog.Logger
	tombs   *tombstones // the deletes handlers added late are owed
	// applier applies and notifies staged commits; set by popLoop before
	// its committer starts, used by the committer only.
	applier *applier

	mu                sync.Mutex // guards the fields below up to applyMu
	started, stopped  bool
	transform         cache.TransformFunc
	watchErrorHandler cache.WatchErrorHandlerWithContext
	resyncCheckPeriod time.Duration
	atEnd             []func() // run once the informer has ended (see closeStore)

	// ended is closed once the informer will never run again and every
	// goroutine it started has returned (see end).
	ended   chan struct{}
	endOnce sync.Once

	// applyMu serialises commits with their notifications, the replay of
	// persisted objects, sync decisions and the registration of handlers
	// after start. It guards the fields below.
	applyMu   sync.Mutex
	src       *reflector.Reflector
	synced    bool
	resuming  bool   // started on a store with a resume point
	appliedRV string // resume point of the last commit
	// caughtUpArrived is how many events the queue had taken once the
	// bookmark by which the reflector caught up was queued, where
	// resourceVersions are not comparable (0 otherwise); handedOut is how
	// many the last committed group handed out (deltafifo.Batch.HandedOut).
	caughtUpArrived, handedOut uint64
	state                      *stateWait // Options.StateCatchUp's wait, or nil
	// heard holds, per key, the state handlers last heard of where a group
	// took a change the previous commit left out (see correctHeard).
	heard map[string]heardState

	syncedCh        chan struct{} // closed when synced turns true
	syncedByState   atomic.Bool   // Stats.SyncedByState
	bookmarkArrived atomic.Uint64 // see bookmarkCounter
	// lastGroup is the size of the last group gathered (see newGroup);
	// only popLoop uses it.
	lastGroup struct{ ops, notes int }

	name    string           // Options.Name, defaulted
	metrics *informerMetrics // nil without Options.Metrics
	// srcPub and queuePub publish src and the queue to Stats, and
	// rvAdvanced when the resume point last advanced (Unix nanoseconds),
	// without applyMu: a metrics scrape must not wait for a commit.
	srcPub     atomic.Pointer[reflector.Reflector]
	queuePub   atomic.Pointer[queue]
	rvAdvanced atomic.Int64

	stats struct {
		commits, deltas atomic.Int64
		popped          atomic.Int64 // deltas popped, committed or not
		commitFailures  atomic.Int64
		rejected        atomic.Int64 // keys whose change the store refused, left out
		stateLists      atomic.Int64
		failing         atomic.Pointer[commitFailure] // nil while commits succeed
	}

	// onRun, set by an InformerConstructor before Run, is called with the
	// Run's context once the informer started (see resumeSiblings).
	onRun func(ctx context.Context)
	// startedAhead: an InformerConstructor started the informer before it
	// was asked for. hold, set with it, keeps it from committing until
	// closed, once it is known to run with its asker's transform.
	startedAhead bool
	hold         chan struct{}
	periodCh     chan time.Duration // a shorter check period (see adoptResync)

	// afterNotify, set by tests, runs right after a commit's notifications
	// were handed to the handlers.
	afterNotify atomic.Pointer[func()]
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// commitFailure is a commit being retried: when it first failed (on the
// informer's clock), and its last failure.
type commitFailure struct {
	since time.Time
	err   error
}

// New returns an informer that lists and watches through lw the objects of
// exampleObject's type, keeps them in s and notifies its handlers. Nothing
// happens until Run.
func New(lw cache.ListerWatcherWithContext, exampleObject runtime.Object, s store.Store, options *Options) (*Informer, error) {
	var opts Options
	if options != nil {
		opts = *options
	}
	if lw == nil {
		return nil, fmt.Errorf("informer: new: nil ListerWatcher")
	}
	if s == nil {
		return nil, fmt.Errorf("informer: new: nil store")
	}
	if opts.Tombstones != nil && opts.Tombstones == s {
		return nil, fmt.Errorf("informer: new: Options.Tombstones is the informer's store; it needs a store of its own")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	inf := &Informer{
		lw:                lw,
		example:           exampleObject,
		store:             s,
		opts:              o,
		view:              newView(s),
		proc:              newProcessor(o.Clock),
		tombs:             newTombstones(o.Tombstones, o),
		logger:            *o.Logger,
		transform:         o.Transform,
		watchErrorHandler: o.WatchErrorHandler,
		resyncCheckPeriod: o.ResyncPeriod,
		syncedCh:          make(chan struct{}),
		ended:             make(chan struct{}),
		periodCh:          make(chan time.Duration, 1),
		name:              o.Name,
	}
	if inf.name == "" {
		inf.name = o.Reflector.Name
	}
	if inf.name == "" {
		inf.name = s.Info().Name
	}
	inf.reads = &closedReads{Indexer: s, logger: inf.logger, name: inf.name}
	if o.Metrics != nil {
		if inf.metrics, err = o.Metrics.add(inf.name, inf); err != nil {
			return nil, err
		}
	}
	return inf, nil
}

// Name returns the informer's name (Options.Name, defaulted), its label in
// metrics.
func (inf *Informer) Name() string { return inf.name }

// Run runs the informer until stopCh is closed; see RunWithContext.
func (inf *Informer) Run(stopCh <-chan struct{}) {
	inf.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx is done and every goroutine it
// started has returned. An informer runs once: a second call logs and
// returns at once. When it returns, or when the informer fails to start,
// the informer is stopped as in client-go: IsStopped is true and the
// ShutdownChan of every handler registration is closed.
func (inf *Informer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	if _, err := logr.FromContext(ctx); err != nil {
		ctx = klog.NewContext(ctx, inf.logger)
	}
	logger := klog.FromContext(ctx)

	q, src, err := inf.start(ctx, logger)
	if errors.Is(err, ErrStarted) || errors.Is(err, ErrStopped) {
		// Another Run owns the informer, or it has ended already.
		logger.Error(err, "Informer not started")
		return
	}
	defer inf.end()
	if err != nil {
		logger.Error(err, "Informer not started")
		return
	}
	inf.proc.start()
	if inf.onRun != nil {
		inf.onRun(ctx)
	}

	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	wg.Go(func() {
		if err := src.Run(runCtx); err != nil && runCtx.Err() == nil {
			logger.Error(err, "Reflector stopped")
		}
	})
	if period := inf.checkPeriod(); period > 0 {
		// Made before anything is applied: a test that saw the informer
		// sync can step a fake clock.
		t := inf.opts.Clock.NewTicker(period)
		wg.Go(func() {
			defer t.Stop()
			inf.resyncLoop(runCtx, q, t)
		})
	}
	if inf.opts.StateCatchUp != nil && inf.resuming && !inf.opts.ServeStale {
		wg.Go(func() { inf.catchUpByState(runCtx, logger) })
	}
	wg.Go(func() {
		select {
		case <-runCtx.Done():
		case <-src.CaughtUp():
			inf.applyMu.Lock()
			defer inf.applyMu.Unlock()
			inf.caughtUpArrived = inf.bookmarkArrived.Load()
			inf.checkSyncedLocked(logger, false)
		}
	})

	if inf.hold != nil {
		select {
		case <-inf.hold:
		case <-runCtx.Done():
		}
	}
	inf.popLoop(runCtx, q)

	cancel()
	q.Close()
	wg.Wait()
	if inf.HasSynced() && inf.proc.caughtUp() {
		// A stop, not a crash, with every handler told of every delete:
		// the next run owes them nothing.
		inf.tombs.dropPersisted(logger)
	}
}

// start builds the queue and the reflector, marks the informer started and
// replays the stored objects to the handlers, under mu: a handler added
// meanwhile sees the store once, not twice.
func (inf *Informer) start(ctx context.Context, logger klog.Logger) (deltafifo.Queue, *reflector.Reflector, error) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.stopped {
		return nil, nil, fmt.Errorf("informer: run: %w: an informer runs once", ErrStopped)
	}
	if inf.started {
		return nil, nil, fmt.Errorf("informer: run: %w: an informer runs once", ErrStarted)
	}
	q := inf.newQueue()
	ropts := inf.opts.Reflector
	if ropts.Name == "" {
		ropts.Name = inf.name
	}
	unused := ropts.StartFrom(reflector.Persisted{
		ResourceVersion: inf.store.ResourceVersion(),
		Empty:           func() bool { return len(inf.store.ListKeys()) == 0 },
		Reset:           inf.store.Info().Reset != "",
	})
	if unused != "" {
		logger.V(2).Info("The store is empty; listing instead of resuming", "resourceVersion", unused)
	}
	if inf.example != nil && ropts.ExpectedType == nil {
		ropts.ExpectedType = inf.example
	}
	ropts.WatchErrorHandler = withReflector(inf.watchErrorHandler, ropts.Name, inf.example)
	if ropts.Clock == nil {
		ropts.Clock = inf.opts.Clock
	}
	src, err := reflector.New(inf.lw, &bookmarkCounter{Queue: q, arrived: &inf.bookmarkArrived}, &ropts)
	if err != nil {
		inf.started, inf.stopped = true, true
		return nil, nil, fmt.Errorf("informer: run: %w", err)
	}
	inf.started = true
	inf.applyMu.Lock()
	inf.src = src
	inf.srcPub.Store(src)
	inf.queuePub.Store(&q)
	inf.resuming = ropts.ResumeFrom != ""
	inf.appliedRV = ropts.ResumeFrom
	inf.rvAdvanced.Store(inf.opts.Clock.Now().UnixNano())
	inf.tombs.load(ctx, logger, inf.store)
	inf.applyMu.Unlock()
	inf.replay(logger)
	return q, src, nil
}

// initialNotesLocked returns what a handler receives first, once the
// informer started: OnDelete(cache.DeletedFinalStateUnknown) for every
// tombstone, then OnAdd(obj, true) for each of objs, the stored objects;
// deletes first, so that a name deleted and created again is heard of in
// that order. The caller holds applyMu.
func (inf *Informer) initialNotesLocked(objs []interface{}) []queuedNote {
	notes := slices.Grow(inf.tombs.notesLocked(), len(objs))
	for _, obj := range objs {
		notes = append(notes, queuedNote{n: notification{kind: notifyAdd, newObj: obj, initial: true}, op: -1})
	}
	return notes
}

// end stops the informer for good, once nothing it started runs any more:
// no handler can be added, every registration is shut down, the informer
// leaves its Metrics, and atEnd runs. Only the first call does anything.
func (inf *Informer) end() {
	inf.endOnce.Do(func() {
		// The requests started before Run, unless its reflector took them.
		inf.opts.Reflector.Early.Stop()
		inf.mu.Lock()
		// Set before the listeners are stopped, under mu as in
		// AddEventHandler: a handler added after stop would never be
		// shut down.
		inf.started, inf.stopped = true, true
		inf.mu.Unlock()
		inf.proc.stop()
		if inf.metrics != nil {
			inf.metrics.m.remove(inf.name, inf)
		}
		inf.mu.Lock()
		close(inf.ended)
		atEnd := inf.atEnd
		inf.atEnd = nil
		inf.mu.Unlock()
		for _, f := range atEnd {
			f()
		}
	})
}

// closeStore is how the owner of the informer's store (op names it) lets
// go of it. An informer that has ended, or never started, is ended and its
// store closed now. A running one keeps running: its store is closed when
// it ends, and an error logged, there being no caller left to return it
// to.
func (inf *Informer) closeStore(op string) error {
	inf.mu.Lock()
	if !inf.started || isClosed(inf.ended) {
		inf.started, inf.stopped = true, true // no Run from now on
		inf.mu.Unlock()
		inf.end()
		return inf.closeStores()
	}
	inf.atEnd = append(inf.atEnd, func() {
		if err := inf.closeStores(); err != nil {
			inf.logger.Error(err, "Closing the store of a stopped informer failed", "informer", inf.name, "after", op)
		}
	})
	inf.mu.Unlock()
	return nil
}

// closeStores closes the informer's store and its tombstone store.
func (inf *Informer) closeStores() error {
	inf.reads.closed.Store(true)
	err := inf.store.Close()
	if inf.opts.Tombstones != nil {
		err = errors.Join(err, inf.opts.Tombstones.Close())
	}
	return err
}

// replay hands the handlers registered before start their initial
// notifications (see initialNotesLocked), before the reflector starts.
// With Options.ServeStale and a resume point, the informer is synced then.
func (inf *Informer) replay(logger klog.Logger) {
	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	objs := inf.store.List()
	inf.proc.distribute(inf.initialNotesLocked(objs), nil, true)
	if len(objs) > 0 {
		logger.V(2).Info("Replayed persisted objects to handlers", "objects", len(objs), "resourceVersion", inf.appliedRV)
	}
	if inf.resuming && inf.opts.ServeStale {
		inf.markSyncedLocked(logger, "serving persisted state (ServeStale)")
	}
}

// checkSyncedLocked asks the reflector whether the informer has synced
// (reflector.Synced, the one sync rule), after a commit (replaced: of a
// relist) or when the reflector caught up.
func (inf *Informer) checkSyncedLocked(logger klog.Logger, replaced bool) {
	if inf.synced || inf.src == nil {
		return
	}
	why := inf.src.Synced(logger, reflector.Applied{
		ResourceVersion: inf.appliedRV,
		Relist:          replaced,
		// Not a later pop than the one current at catch-up: a backlog
		// queued before the bookmark is popped after it too, and must be
		// applied first. The queue's arrival count tells when the
		// bookmark is out.
		CatchUpApplied: inf.caughtUpArrived > 0 && inf.handedOut >= inf.caughtUpArrived,
	})
	if why != "" {
		inf.markSyncedLocked(logger, why)
	}
}

func (inf *Informer) markSyncedLocked(logger klog.Logger, why string) {
	if inf.synced {
		return
	}
	inf.synced = true
	inf.tombs.synced()
	close(inf.syncedCh)
	logger.V(2).Info("Informer synced", "reason", why, "resourceVersion", inf.appliedRV)
	inf.proc.each(func(l *listener) { l.upstreamSynced() })
}

// resyncLoop queues a resync whenever a handler's resync period is due.
func (inf *Informer) resyncLoop(ctx context.Context, q deltafifo.Queue, t clock.Ticker) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-inf.periodCh:
			t.Stop()
			t = inf.opts.Clock.NewTicker(d)
			defer t.Stop()
			continue
		case <-t.C():
		}
		if inf.proc.shouldResync(inf.opts.Clock.Now()) {
			if err := q.Resync(); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Queueing a resync failed")
			}
		}
	}
}

// adoptResync makes d the informer's default resync period after it
// started, and its resync check period if shorter. The informer must
// resync already unless d is zero.
func (inf *Informer) adoptResync(d time.Duration) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.opts.ResyncPeriod = d
	if d > 0 && d < minimumResyncPeriod {
		d = minimumResyncPeriod
	}
	if d > 0 && d < inf.resyncCheckPeriod {
		inf.resyncCheckPeriod = d
		inf.proc.setCheckPeriod(inf.logger, d)
		select {
		case <-inf.periodCh:
		default:
		}
		inf.periodCh <- d
	}
}

func (inf *Informer) checkPeriod() time.Duration {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return inf.resyncCheckPeriod
}

// AddEventHandler adds a handler with the informer's default resync period
// (Options.ResyncPeriod).
func (inf *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a handler with its own resync period;
// zero means no resync.
func (inf *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler. A handler added after the
// informer started first receives
// OnDelete(cache.DeletedFinalStateUnknown{Key, Obj}) for every object
// deleted since the informer started (or recorded by an earlier run that
// ended before its handlers heard of it), Obj being the last state the
// informer had, within Options.TombstoneRetention; then OnAdd(obj, true)
// for every object in the store; then every later change. Its
// registration's HasSynced waits for all of those. Resync periods follow
// client-go: at least one second, and, once the informer runs, at least
// its resync check period.
func (inf *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if handler == nil {
		return nil, fmt.Errorf("informer: add event handler: nil handler")
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.stopped {
		return nil, fmt.Errorf("informer: add event handler %T: %w", handler, ErrStopped)
	}
	logger := inf.logger
	if options.Logger != nil {
		logger = *options.Logger
	}
	requested := inf.opts.ResyncPeriod
	if options.ResyncPeriod != nil {
		requested = *options.ResyncPeriod
	}
	if requested > 0 && requested < minimumResyncPeriod {
		logger.V(2).Info("Resync period raised to the minimum", "requested", requested, "minimum", minimumResyncPeriod)
		requested = minimumResyncPeriod
	}
	if requested > 0 && requested < inf.resyncCheckPeriod {
		if inf.started {
			requested = inf.resyncCheckPeriod
		} else {
			inf.resyncCheckPeriod = requested
			inf.proc.setCheckPeriod(logger, requested)
		}
	}
	l := newListener(logger, handler, requested, effectiveResync(logger, requested, inf.resyncCheckPeriod), inf.opts.Clock.Now())
	if inf.metrics != nil {
		l.now = inf.opts.Clock.Now
	}
	if !inf.started {
		inf.proc.add(l)
		return l, nil
	}

	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	l.add(inf.initialNotesLocked(inf.store.List()), nil, true, false)
	inf.proc.add(l)
	if inf.synced {
		l.upstreamSynced()
	}
	return l, nil
}

// RemoveEventHandler removes a handler. Notifications queued for it and not
// yet delivered are dropped; it may still be running one when this returns
// (cache.ShutDownEventHandler waits for it). Removing an unknown or removed
// handler does nothing.
func (inf *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	l, ok := handle.(*listener)
	if !ok {
		return fmt.Errorf("informer: remove event handler: registration %T was not returned by this informer", handle)
	}
	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	inf.proc.remove(l)
	return nil
}

// GetStore returns the store.
func (inf *Informer) GetStore() cache.Store { return inf.reads }

// GetIndexer returns the store, a cache.Indexer; generated listers work on
// it. A read after the factory that made the informer closed the store is
// logged (see Factory.Shutdown).
func (inf *Informer) GetIndexer() cache.Indexer { return inf.reads }

// Store returns the store with its informerdb methods.
func (inf *Informer) Store() store.Store { return inf.store }

// AddIndexers adds indexes, before or after start; after start the store
// fills them from the stored objects and persists them.
func (inf *Informer) AddIndexers(indexers cache.Indexers) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.stopped {
		return fmt.Errorf("informer: add indexers: %w", ErrStopped)
	}
	if err := inf.store.AddIndexers(indexers); err != nil {
		return fmt.Errorf("informer: add indexers: %w", err)
	}
	return nil
}

// GetController returns a cache.Controller view of the informer, for
// compatibility; its Run methods do nothing.
func (inf *Informer) GetController() cache.Controller { return controllerView{inf} }

// HasSynced reports whether the informer has synced (see the package doc,
// HasSynced). A handler's own HasSynced is on its registration.
func (inf *Informer) HasSynced() bool {
	return isClosed(inf.syncedCh)
}

// HasSyncedChecker returns a cache.DoneChecker for HasSynced.
func (inf *Informer) HasSyncedChecker() cache.DoneChecker { return syncedChecker{inf} }

// LastSyncResourceVersion returns the resume point of the last commit: every
// event at or before it is reflected in the store.
func (inf *Informer) LastSyncResourceVersion() string {
	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	if inf.appliedRV == "" {
		return inf.store.ResourceVersion()
	}
	return inf.appliedRV
}

// SetWatchErrorHandler sets the function called when a list or watch fails,
// before the informer starts. The *cache.Reflector the handler gets only
// describes the reflector (Name, TypeDescription), for handlers that pass
// it on to cache.DefaultWatchErrorHandler; it is never run.
func (inf *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	if handler == nil {
		return inf.SetWatchErrorHandlerWithContext(nil)
	}
	return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { handler(r, err) })
}

// withReflector returns h called with a *cache.Reflector that describes the
// informer's reflector, never nil (cache.DefaultWatchErrorHandler
// dereferences it); nil when h is nil.
func withReflector(h cache.WatchErrorHandlerWithContext, name string, example runtime.Object) cache.WatchErrorHandlerWithContext {
	if h == nil {
		return nil
	}
	// Only a description: it is never run, and has no ListerWatcher or store.
	r := cache.NewReflectorWithOptions(nil, example, nil, cache.ReflectorOptions{Name: name})
	return func(ctx context.Context, _ *cache.Reflector, err error) { h(ctx, r, err) }
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with a context.
func (inf *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	return inf.beforeStart("set watch error handler", func() { inf.watchErrorHandler = handler })
}

// SetTransform sets the transform applied to objects before they are stored
// (see Options.Transform). It must be called before the informer starts.
func (inf *Informer) SetTransform(handler cache.TransformFunc) error {
	return inf.beforeStart("set transform", func() { inf.transform = handler })
}

// beforeStart calls set, the setter op, under mu, unless the informer has
// started.
func (inf *Informer) beforeStart(op string, set func()) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.started {
		return fmt.Errorf("informer: %s: %w", op, ErrStarted)
	}
	set()
	return nil
}

// IsStopped reports whether the informer has stopped (its Run returned or
// is returning, its start failed, or its maker let go of it before it
// ran); it cannot be started again.
func (inf *Informer) IsStopped() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return inf.stopped
}

// Stats counts what the informer has applied. It is a value copied out of
// the informer.
type Stats struct {
	// Commits is the number of store commits (including commits of
	// notifications only, such as resyncs).
	Commits int64
	// Deltas is the number of deltas applied.
	Deltas int64
	// PendingDeltas is the number of deltas taken from the queue and not
	// yet applied: gathered into the next group commit, or in a commit
	// being retried.
	PendingDeltas int64
	// Queued is the number of entries in the informer's queue (keys with
	// deltas, bookmarks, relists, resyncs), not yet taken for a commit;
	// zero before Run.
	Queued int64
	// CommitFailures is the number of store commits that failed and were
	// retried. Commits of a batch the store rejects in part are not
	// failures.
	CommitFailures int64
	// CommitFailingSince is when the commit being retried first failed,
	// and LastCommitError its last failure; zero and nil while commits
	// succeed (from the moment the retried commit is durable) and once the
	// informer stopped. Nothing new reaches the store or the handlers
	// meanwhile (see CheckCommits).
	CommitFailingSince time.Time
	LastCommitError    error
	// Rejected is the number of changes the store refused as invalid
	// (store.ErrInvalid) and the informer left out of their commits,
	// logging each (see the package doc); changes of one key in one commit
	// count once.
	Rejected int64
	// ReadErrors counts the reads of the store that failed where
	// cache.Indexer cannot return an error (store.ReadFailer), and
	// ReadError is the first; CheckCommits fails from then on.
	ReadErrors int64
	ReadError  error
	// StateLists counts the lists of Options.StateCatchUp (one per resume
	// at most), and SyncedByState says that the informer synced because
	// its store held that state rather than by the reflector's catch-up.
	StateLists    int64
	SyncedByState bool
	// StartedAhead says that an InformerConstructor started the informer
	// before it was asked for (see ConstructorOptions.ResumeOnDemand).
	StartedAhead bool
	// Reflector holds the reflector's counters; zero before Run.
	Reflector reflector.Stats
}

// Stats returns what the informer has applied so far.
func (inf *Informer) Stats() Stats {
	st := Stats{Commits: inf.stats.commits.Load(), CommitFailures: inf.stats.commitFailures.Load(), Rejected: inf.stats.rejected.Load(),
		StateLists: inf.stats.stateLists.Load(), SyncedByState: inf.syncedByState.Load(), StartedAhead: inf.startedAhead}
	if f := inf.stats.failing.Load(); f != nil {
		st.CommitFailingSince, st.LastCommitError = f.since, f.err
	}
	// deltas before popped: a commit between the two loads could only
	// make the difference too large for an instant, never negative.
	st.Deltas = inf.stats.deltas.Load()
	st.PendingDeltas = inf.stats.popped.Load() - st.Deltas
	if q := inf.queuePub.Load(); q != nil {
		st.Queued = int64((*q).Len())
	}
	if src := inf.srcPub.Load(); src != nil {
		st.Reflector = src.Stats()
	}
	if rf, ok := inf.store.(store.ReadFailer); ok {
		st.ReadErrors, st.ReadError = rf.ReadErrors(), rf.ReadErr()
	}
	return st
}

// CheckCommits is a liveness check: it returns nil while the informer's
// commits get through, and an error once the commit it is retrying has
// been failing for maxFailing (maxFailing <= 0: while any is retried), or
// at once if the store refuses writes until it is reopened
// (store.ErrWritesStopped), which no retry heals: only a restart of the
// process can help. A full disk fails commits until space is freed:
// maxFailing is how long to wait for that. With controller-runtime:
//
//	mgr.AddHealthzCheck("informerdb", func(*http.Request) error { return inf.CheckCommits(2 * time.Minute) })
//
// It also fails for good once a read of the store failed that cache.Indexer
// gives no way to return (store.ReadFailer: a bounded-mode store meeting a
// damaged record, which listers then miss); the error wraps the store's
// (store.ErrCorrupt). Dropping the store (store.Drop, `snapshot drop`)
// repairs it by a relist. Whether the informer has synced is a readiness
// matter, not checked here.
func (inf *Informer) CheckCommits(maxFailing time.Duration) error {
	if rf, ok := inf.store.(store.ReadFailer); ok {
		if err := rf.ReadErr(); err != nil {
			return fmt.Errorf("informer %s: a read of the store failed (%d so far): %w", inf.name, rf.ReadErrors(), err)
		}
	}
	f := inf.stats.failing.Load()
	if f == nil {
		return nil
	}
	if errors.Is(f.err, store.ErrWritesStopped) {
		return fmt.Errorf("informer %s: the store refuses writes until the process restarts (commits failing since %s): %w", inf.name, f.since.Format(time.RFC3339), f.err)
	}
	if d := inf.opts.Clock.Since(f.since); d >= maxFailing {
		return fmt.Errorf("informer %s: commits have been failing for %s (since %s): %w", inf.name, d.Truncate(time.Millisecond), f.since.Format(time.RFC3339), f.err)
	}
	return nil
}

type syncedChecker struct{ inf *Informer }

func (c syncedChecker) Name() string {
	return fmt.Sprintf("informerdb informer %T", c.inf.example)
}

func (c syncedChecker) Done() <-chan struct{} { return c.inf.syncedCh }

// controllerView is what GetController returns.
type controllerView struct{ inf *Informer }

func (controllerView) RunWithContext(context.Context)        {}
func (controllerView) Run(<-chan struct{})                   {}
func (c controllerView) HasSynced() bool                     { return c.inf.HasSynced() }
func (c controllerView) HasSyncedChecker() cache.DoneChecker { return c.inf.HasSyncedChecker() }
func (c controllerView) LastSyncResourceVersion() string     { return c.inf.LastSyncResourceVersion() }

func typeName(obj interface{}) string { return fmt.Sprintf("%T", obj) }

// bookmarkCounter is the queue as the reflector writes to it: after each
// bookmark it notes how many events the queue has taken, which tells the
// informer which group brings the bookmark it caught up by.
type bookmarkCounter struct {
	deltafifo.Queue
	arrived *atomic.Uint64
}

func (q *bookmarkCounter) Bookmark(resourceVersion string) error {
	err := q.Queue.Bookmark(resourceVersion)
	if err == nil {
		q.arrived.Store(q.Arrived())
	}
	return err
}
