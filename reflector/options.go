package reflector

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultPageSize            int64 = 500
	DefaultMinWatchTimeout           = 5 * time.Minute
	DefaultCatchUpWatchTimeout       = 3 * time.Second
	DefaultCatchUpDeadline           = 2 * time.Minute
	DefaultBackoffInitial            = 800 * time.Millisecond
	DefaultBackoffMax                = 30 * time.Second
	DefaultBackoffReset              = 2 * time.Minute
	DefaultBackoffFactor             = 2.0
	DefaultBackoffJitter             = 1.0

	// minCatchUpWatchTimeout is the shortest catch-up watch that gets the
	// pre-deadline bookmark, which the watch cache schedules two seconds
	// before the deadline, in one-second buckets.
	minCatchUpWatchTimeout = 3 * time.Second
	// maxCatchUpMisses is how many catch-up watches in a row may end
	// without any bookmark before the reflector concludes that the server
	// sends none.
	maxCatchUpMisses = 3
)

// Options configure a Reflector. The zero value means defaults, except that
// a Queue and a ListerWatcher must be given to New.
type Options struct {
	// Name appears in logs and errors. Default "reflector".
	Name string

	// ExpectedType, when set, is the Go type every watch event's object must
	// have (for example &corev1.Pod{}); an event of another type is dropped
	// and reported through WatchErrorHandler.
	ExpectedType runtime.Object
	// ExpectedGVK, when set, is the GroupVersionKind every watch event's
	// object must carry, like ExpectedType. Typed clients decode objects
	// with an empty GVK: use it with unstructured objects.
	ExpectedGVK *schema.GroupVersionKind

	// ResumeFrom is the persisted resume point (store.ResourceVersion()).
	// Non-empty: probe the server, then watch from it without listing.
	// Empty: cold start with a full list.
	ResumeFrom string
	// Early, when set, is the probe and the catch-up watch of this resume
	// started before Run (see Early).
	Early *Early

	// ColdReason is the reason logged and counted for the list of a cold
	// start: ReasonCold (the default), ReasonScopeChange when the store was
	// emptied because its scope changed, or ReasonCorrupt when its damaged
	// database was deleted.
	ColdReason string

	// PageSize is the limit of each page of a paginated LIST. Default
	// DefaultPageSize; negative lists in one request.
	PageSize int64

	// WatchList selects the streaming list (sendInitialEvents=true) for
	// full lists: nil (the default) tries it and falls back to a paginated
	// LIST (see the package documentation); false never uses it; true
	// always does, without fallback.
	WatchList *bool

	// MinWatchTimeout bounds normal watches: each gets a timeoutSeconds
	// drawn at random from [MinWatchTimeout, 2*MinWatchTimeout), so the
	// watches of many clients do not expire together. Default
	// DefaultMinWatchTimeout.
	MinWatchTimeout time.Duration

	// CatchUpWatchTimeout is the timeout of the short watches made after a
	// resume until the sync target is reached (see the package
	// documentation). Default DefaultCatchUpWatchTimeout, the shortest
	// that gets the server's pre-deadline bookmark; at least 3s; negative
	// disables catch-up watches, leaving catch-up to events and the
	// periodic bookmark.
	CatchUpWatchTimeout time.Duration

	// CatchUpDeadline bounds how long after a resume the reflector waits to
	// reach the sync target before it relists (reason catch-up): a server
	// that sends no bookmarks (kube-apiserver with --watch-cache=false)
	// gives a quiet resource no other way to catch up. Default
	// DefaultCatchUpDeadline, past the watch cache's one-minute periodic
	// bookmark. Negative never gives the resume up, so an informer whose
	// catch-up never comes never syncs.
	CatchUpDeadline time.Duration

	// Backoff spaces retries after failed lists and watches.
	Backoff Backoff

	// WatchErrorHandler is called, from Run's goroutine, with every error
	// of a list or watch (before the backoff that follows), with events the
	// reflector cannot use and with every queue call that fails. Its
	// *cache.Reflector argument is nil: this is not a client-go Reflector,
	// so a handler must not dereference it (package informer wraps
	// client-go handlers to give them one). Default, as client-go's
	// DefaultWatchErrorHandler: a 410 or "too large resourceVersion" at
	// V(2), an unexpected EOF at V(1), every other error at error level.
	WatchErrorHandler cache.WatchErrorHandlerWithContext

	// Clock drives backoff and watch timing. Default the real clock.
	Clock clock.WithTicker
}

// Backoff configures exponential backoff with jitter. Zero fields take
// client-go's defaults.
type Backoff struct {
	// Initial is the first delay. Default DefaultBackoffInitial.
	Initial time.Duration
	// Max caps the delay before jitter. Default DefaultBackoffMax.
	Max time.Duration
	// Factor multiplies the delay after each failure. Default
	// DefaultBackoffFactor.
	Factor float64
	// Jitter adds up to Jitter*delay at random. Default
	// DefaultBackoffJitter.
	Jitter float64
	// Reset starts over from Initial after this long without a retry.
	// Default DefaultBackoffReset.
	Reset time.Duration
}

func (b Backoff) withDefaults() (Backoff, error) {
	if b.Initial < 0 || b.Max < 0 || b.Factor < 0 || b.Jitter < 0 || b.Reset < 0 {
		return b, fmt.Errorf("backoff fields must not be negative")
	}
	if b.Initial == 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max == 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Max < b.Initial {
		return b, fmt.Errorf("backoff Max %v is below Initial %v", b.Max, b.Initial)
	}
	if b.Factor == 0 {
		b.Factor = DefaultBackoffFactor
	}
	if b.Factor < 1 {
		return b, fmt.Errorf("backoff Factor %v is below 1", b.Factor)
	}
	if b.Jitter == 0 {
		b.Jitter = DefaultBackoffJitter
	}
	if b.Reset == 0 {
		b.Reset = DefaultBackoffReset
	}
	return b, nil
}

// delayFunc returns a stateful function giving the next delay.
func (b Backoff) delayFunc(c clock.Clock) wait.DelayFunc {
	return wait.Backoff{
		Duration: b.Initial,
		Cap:      b.Max,
		Steps:    int(math.Ceil(float64(b.Max) / float64(b.Initial))),
		Factor:   b.Factor,
		Jitter:   b.Jitter,
	}.DelayWithReset(c, b.Reset)
}

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = "reflector"
	}
	switch {
	case o.PageSize == 0:
		o.PageSize = DefaultPageSize
	case o.PageSize < 0:
		o.PageSize = 0
	}
	if o.MinWatchTimeout < 0 {
		return o, fmt.Errorf("MinWatchTimeout %v is negative", o.MinWatchTimeout)
	}
	if o.MinWatchTimeout == 0 {
		o.MinWatchTimeout = DefaultMinWatchTimeout
	}
	if o.MinWatchTimeout < time.Second {
		return o, fmt.Errorf("MinWatchTimeout %v is below 1s (timeoutSeconds is in whole seconds)", o.MinWatchTimeout)
	}
	switch {
	case o.CatchUpWatchTimeout == 0:
		o.CatchUpWatchTimeout = DefaultCatchUpWatchTimeout
	case o.CatchUpWatchTimeout < 0:
		o.CatchUpWatchTimeout = -1
	case o.CatchUpWatchTimeout < minCatchUpWatchTimeout:
		return o, fmt.Errorf("CatchUpWatchTimeout %v is below %v: the server's pre-deadline bookmark would never come", o.CatchUpWatchTimeout, minCatchUpWatchTimeout)
	}
	switch {
	case o.CatchUpDeadline == 0:
		o.CatchUpDeadline = DefaultCatchUpDeadline
	case o.CatchUpDeadline < 0:
		o.CatchUpDeadline = -1
	}
	b, err := o.Backoff.withDefaults()
	if err != nil {
		return o, err
	}
	o.Backoff = b
	if o.ResumeFrom == "0" {
		// "0" means "any resourceVersion" to the API server: a watch from
		// it replays every object as ADDED, it resumes nothing.
		return o, fmt.Errorf(`ResumeFrom "0" is not a resume point; use "" for a cold start`)
	}
	switch o.ColdReason {
	case "":
		o.ColdReason = ReasonCold
	case ReasonCold, ReasonScopeChange, ReasonCorrupt:
	default:
		return o, fmt.Errorf("ColdReason %q: want %q, %q or %q", o.ColdReason, ReasonCold, ReasonScopeChange, ReasonCorrupt)
	}
	if o.ExpectedGVK != nil && o.ExpectedGVK.Empty() {
		return o, fmt.Errorf("ExpectedGVK is empty; leave it nil to accept any GVK")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o, nil
}
