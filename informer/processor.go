package informer

import (
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// minimumResyncPeriod is the smallest resync period a handler gets, as in
// client-go.
const minimumResyncPeriod = time.Second

// processor holds the listeners of one informer and hands notifications to
// them. It is safe for concurrent use.
type processor struct {
	mu sync.RWMutex // guards listeners, running, and each listener's resync fields
	// listeners maps each listener to whether it takes part in the current
	// resync round; as in client-go, it does until the first resync check,
	// so that without resync every handler hears of a relist's unchanged
	// objects.
	listeners map[*listener]bool
	running   bool
	wg        sync.WaitGroup
	clock     clock.Clock // times the listeners' crashPause
}

func newProcessor(clk clock.Clock) *processor {
	return &processor{listeners: map[*listener]bool{}, clock: clk}
}

// add registers l, starting its goroutine if the processor runs.
func (p *processor) add(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.clock = p.clock
	p.listeners[l] = true
	if p.running {
		p.startLocked(l)
	}
}

func (p *processor) startLocked(l *listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		l.run()
	}()
}

// remove unregisters l; it reports whether l was registered.
func (p *processor) remove(l *listener) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.listeners[l]; !ok {
		return false
	}
	delete(p.listeners, l)
	l.close()
	if !p.running {
		close(l.stopped) // run never started
	}
	return true
}

// start starts the goroutine of every listener.
func (p *processor) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = true
	for l := range p.listeners {
		p.startLocked(l)
	}
}

// stop closes every listener and waits for their goroutines to return.
func (p *processor) stop() {
	p.mu.Lock()
	for l := range p.listeners {
		l.close()
	}
	running := p.running
	if !running {
		for l := range p.listeners {
			close(l.stopped)
		}
	}
	p.listeners = map[*listener]bool{}
	p.running = false
	p.mu.Unlock()
	p.wg.Wait()
}

// distribute queues notes, in order, for every listener (the resync ones
// only for the listeners taking part in the current resync round), skipping
// those of the operations in rejected. Each listener takes them under one
// lock, and is woken once.
func (p *processor) distribute(notes []queuedNote, rejected map[int]bool, counted bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l, syncing := range p.listeners {
		l.add(notes, rejected, counted, syncing)
	}
}

// queue returns the notifications waiting in every listener's buffer, and
// when the oldest of them was queued (zero when none waits).
func (p *processor) queue() (depth int, oldest time.Time) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l := range p.listeners {
		d, o := l.queue()
		depth += d
		if d > 0 && (oldest.IsZero() || o.Before(oldest)) {
			oldest = o
		}
	}
	return depth, oldest
}

// caughtUp reports whether there is a listener and every listener has
// handled every notification queued for it.
func (p *processor) caughtUp() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l := range p.listeners {
		if d, _ := l.queue(); d > 0 {
			return false
		}
	}
	return len(p.listeners) > 0
}

// each calls f for every listener.
func (p *processor) each(f func(*listener)) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for l := range p.listeners {
		f(l)
	}
}

// shouldResync marks the listeners whose resync is due as taking part in a
// resync round and reports whether there is any.
func (p *processor) shouldResync(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	some := false
	for l := range p.listeners {
		due := l.resyncPeriod > 0 && !now.Before(l.nextResync)
		p.listeners[l] = due
		if due {
			some = true
			l.nextResync = now.Add(l.resyncPeriod)
		}
	}
	return some
}

// setCheckPeriod recomputes every listener's resync period for a new resync
// check period.
func (p *processor) setCheckPeriod(logger klog.Logger, check time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.listeners {
		l.resyncPeriod = effectiveResync(logger, l.requestedResync, check)
	}
}

// effectiveResync is the resync period a handler gets for the one it asked
// for, given the informer's resync check period: none if the informer does
// not resync, never shorter than the check period.
func effectiveResync(logger klog.Logger, requested, check time.Duration) time.Duration {
	switch {
	case requested == 0:
		return 0
	case check == 0:
		logger.V(2).Info("Resync period ignored: the informer does not resync", "requested", requested)
		return 0
	case requested < check:
		logger.V(2).Info("Resync period raised to the informer's resync check period", "requested", requested, "checkPeriod", check)
		return check
	}
	return requested
}
