package informer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

type notificationKind uint8

const (
	notifyAdd notificationKind = iota + 1
	notifyUpdate
	notifyDelete
)

// notification is one call to make on a handler.
type notification struct {
	kind    notificationKind
	oldObj  interface{} // update: the previous object; delete: the deleted object
	newObj  interface{} // add, update
	initial bool        // add: the isInInitialList argument
	// counted notifications were queued before the informer synced (or are
	// the initial list of a handler added later); the registration is
	// synced once every counted notification has been handled.
	counted bool
	// queued is when the notification was queued for the handler, for the
	// handler lag metric; set by listener.add.
	queued time.Time
}

// initialBufferSize is the initial capacity of a listener's buffer; it
// grows without bound.
const initialBufferSize = 1024

// crashPause is how long a listener waits after a recovered handler panic
// before it calls the handler again, as client-go's does, so that a
// handler panicking on every object does not spin a core.
const crashPause = time.Second

// listener relays notifications to one handler. A distributor appends to an
// unbounded buffer under mu and never blocks; one goroutine (run) takes from
// the buffer and calls the handler, so a slow handler delays only itself.
//
// listener is the cache.ResourceEventHandlerRegistration handed to users; it
// is safe for concurrent use.
type listener struct {
	handler cache.ResourceEventHandler
	logger  klog.Logger
	name    string

	// requestedResync is what the handler asked for; resyncPeriod and
	// nextResync are guarded by the processor's mu.
	requestedResync time.Duration
	resyncPeriod    time.Duration
	nextResync      time.Time

	// now stamps queued notifications for the handler lag metric; nil
	// without metrics.
	now func() time.Time
	// clock times crashPause; set by processor.add; nil: the real clock.
	clock clock.Clock

	mu      sync.Mutex // guards buf and closed
	buf     ring
	closed  bool
	wake    chan struct{} // capacity 1: something was added, or closed
	stopped chan struct{} // closed when run has returned (or will never run)

	// inflight is when the notification the handler runs was queued
	// (Unix nanoseconds); 0 when none or without metrics.
	inflight atomic.Int64

	// pending counts counted notifications not yet handled (or dropped).
	pending  atomic.Int64
	upstream atomic.Bool // the informer has synced
	synced   chan struct{}
	syncOnce sync.Once
}

var (
	_ cache.ResourceEventHandlerRegistration = (*listener)(nil)
	_ cache.DoneChecker                      = (*listener)(nil)
)

func newListener(logger klog.Logger, handler cache.ResourceEventHandler, requested, period time.Duration, now time.Time) *listener {
	l := &listener{
		handler:         handler,
		logger:          logger,
		name:            fmt.Sprintf("informerdb handler %T", handler),
		requestedResync: requested,
		resyncPeriod:    period,
		buf:             ring{buf: make([]notification, initialBufferSize)},
		wake:            make(chan struct{}, 1),
		stopped:         make(chan struct{}),
		synced:          make(chan struct{}),
	}
	l.nextResync = now.Add(period)
	return l
}

// add queues notes, in order: the resync ones only when syncing, none of
// the operations in rejected, each counted when counted. They share one
// queueing time. It never blocks; a closed listener drops them.
func (l *listener) add(notes []queuedNote, rejected map[int]bool, counted, syncing bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	var now time.Time
	if l.now != nil {
		now = l.now()
	}
	added := 0
	for i := range notes {
		qn := &notes[i]
		if qn.resync && !syncing || qn.op >= 0 && rejected[qn.op] {
			continue
		}
		n := qn.n
		n.counted, n.queued = counted, now
		l.buf.push(n)
		added++
	}
	if counted {
		l.pending.Add(int64(added))
	}
	l.mu.Unlock()
	if added > 0 {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// queue returns how many notifications the handler has not finished
// (queued, and the one it runs) and when the oldest of them was queued
// (zero when there is none).
func (l *listener) queue() (depth int, oldest time.Time) {
	if at := l.inflight.Load(); at != 0 {
		depth, oldest = 1, time.Unix(0, at)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.buf.peek(); ok {
		depth += l.buf.len()
		if oldest.IsZero() {
			oldest = n.queued
		}
	}
	return depth, oldest
}

// run calls the handler for each queued notification, in order, until the
// listener is closed. Notifications still queued when it is closed are
// dropped, as client-go does when a handler is removed. After a panic it
// recovered, it waits crashPause before the next call, as client-go does.
func (l *listener) run() {
	defer close(l.stopped)
	crashed := false
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		n, ok := l.buf.pop()
		l.mu.Unlock()
		if !ok {
			<-l.wake
			continue
		}
		if !n.queued.IsZero() {
			l.inflight.Store(n.queued.UnixNano())
		}
		if crashed && !l.pauseAfterCrash() {
			return // closed meanwhile: n is dropped with the others
		}
		crashed = !l.deliver(n)
		l.inflight.Store(0)
		if n.counted {
			l.finishedOne()
		}
	}
}

// pauseAfterCrash waits crashPause, or until the listener is closed, and
// reports whether it is still open. Notifications added meanwhile stay
// queued.
func (l *listener) pauseAfterCrash() bool {
	clk := l.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	t := clk.NewTimer(crashPause)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			return true
		case <-l.wake:
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed {
				return false
			}
		}
	}
}

// deliver calls the handler, turning a panic into a logged error as
// client-go does (utilruntime.HandleCrash re-panics unless configured not
// to). It reports whether the handler returned normally.
func (l *listener) deliver(n notification) (returned bool) {
	defer utilruntime.HandleCrashWithLogger(l.logger)
	switch n.kind {
	case notifyAdd:
		l.handler.OnAdd(n.newObj, n.initial)
	case notifyUpdate:
		l.handler.OnUpdate(n.oldObj, n.newObj)
	case notifyDelete:
		l.handler.OnDelete(n.oldObj)
	}
	return true
}

// close stops the listener: queued notifications are dropped and run
// returns after the notification it is delivering, if any.
func (l *listener) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.buf.reset()
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) finishedOne() {
	if l.pending.Add(-1) == 0 && l.upstream.Load() {
		l.markSynced()
	}
}

// upstreamSynced tells the listener that the informer has synced; every
// counted notification has been queued by then.
func (l *listener) upstreamSynced() {
	l.upstream.Store(true)
	if l.pending.Load() == 0 {
		l.markSynced()
	}
}

func (l *listener) markSynced() { l.syncOnce.Do(func() { close(l.synced) }) }

// HasSynced reports whether the informer has synced and this handler has
// been handed every notification queued for it before that (including, for
// a handler added after the informer started, the objects that existed when
// it was added).
func (l *listener) HasSynced() bool {
	return isClosed(l.synced)
}

// HasSyncedChecker returns a cache.DoneChecker whose channel closes when
// HasSynced becomes true.
func (l *listener) HasSyncedChecker() cache.DoneChecker { return l }

// Name describes the registration, for cache.WaitFor.
func (l *listener) Name() string { return l.name }

// Done is closed once HasSynced is true.
func (l *listener) Done() <-chan struct{} { return l.synced }

// ShutdownChan is closed once the handler has returned for the last time
// after RemoveEventHandler, or when the informer stopped. It lets
// cache.ShutDownEventHandler wait for a removed handler.
func (l *listener) ShutdownChan() <-chan struct{} { return l.stopped }
