package reflector

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
)

// This file holds the resume rule of the package documentation; "step N"
// refers to its numbered steps.

// Persisted is what the start rule reads of the store a reflector feeds.
type Persisted struct {
	// ResourceVersion is the store's resume point, "" when it has none.
	ResourceVersion string
	// Empty reports whether the store holds no object. It is called only
	// when ResourceVersion is set (listing keys is not free).
	Empty func() bool
	// Reset says that the store was emptied when it was opened, because
	// what it caches changed (its scope, or the keys its key function
	// computes).
	Reset bool
}

// StartFrom sets o.ResumeFrom, and o.ColdReason for a cold start, by the
// start rule (step 1) for the store p describes. It returns p's resume point
// when the store holds no object and is listed instead of resumed, ""
// otherwise.
func (o *Options) StartFrom(p Persisted) (unused string) {
	o.ResumeFrom = p.ResourceVersion
	if o.ResumeFrom != "" && p.Empty != nil && p.Empty() {
		// An empty store may hold a resume point that does not describe
		// it (emptied because the resource was not served): resuming
		// would miss the objects the server holds from before it.
		unused, o.ResumeFrom = o.ResumeFrom, ""
	}
	if o.ResumeFrom == "" && o.ColdReason == "" && p.Reset {
		o.ColdReason = ReasonScopeChange
	}
	return unused
}

// begin starts a Run: a resume probes the server (step 2), a cold start
// lists with Options.ColdReason. It returns false when ctx ended first.
func (r *Reflector) begin(ctx context.Context, st *runState) bool {
	if r.opts.ResumeFrom == "" {
		r.opts.Early.Stop()
		st.startRelist(r.opts.ColdReason)
		return true
	}
	if e := r.opts.Early.take(ctx, r.opts.ResumeFrom, r.opts.Clock.Now()); e != nil && r.useEarly(ctx, st, e) {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	return r.probe(ctx, st)
}

// probe makes the probe LIST, retrying until it succeeds, and decides
// between resuming and relisting. It returns false when ctx ended first.
func (r *Reflector) probe(ctx context.Context, st *runState) bool {
	for {
		p, err := r.probeOnce(ctx)
		if err == nil {
			st.goneNoted = false // served: a later 404 is a new absence
			r.resumeOrRelist(ctx, st, p)
			return true
		}
		if !r.listFailed(ctx, st, err) {
			return false
		}
	}
}

// resumeOrRelist decides, once the probe returned p, whether the reflector
// watches from Options.ResumeFrom or relists (step 2).
func (r *Reflector) resumeOrRelist(ctx context.Context, st *runState, p string) {
	logger := klog.FromContext(ctx)
	resume := r.opts.ResumeFrom
	// The probe becomes the sync target only when the watch resumes; a
	// relist is its own target, so that an informer does not compare a
	// resume point from another history with the probe (invariant 6).
	if st.gone {
		return // emptied while not served: list afresh
	}
	cmp, err := resourceversion.CompareResourceVersion(resume, p)
	switch {
	case err != nil:
		logger.Info("Resuming watch; time-travel check skipped: resourceVersions are not comparable",
			"resumeFrom", resume, "syncTarget", p, "err", err)
	case cmp > 0:
		st.startRelist(ReasonTimeTravel, "resumeFrom", resume, "serverResourceVersion", p)
		return
	default:
		logger.Info("Resuming watch", "resumeFrom", resume, "syncTarget", p)
	}
	st.lastRV = resume
	r.mu.Lock()
	r.setTargetLocked(p)
	r.stats.Resumes++
	if err == nil && cmp == 0 {
		// Nothing happened since the store was written.
		r.markCaughtUpLocked(ctx, resume)
	}
	r.mu.Unlock()
	if r.opts.CatchUpDeadline > 0 {
		st.catchUpDeadline = r.opts.Clock.Now().Add(r.opts.CatchUpDeadline)
	}
}

// probeOnce makes one consistent LIST with limit=1 and returns its
// resourceVersion: the probe, the nudge of a catch-up, and the check that a
// resource is still served after a watch got 404.
func (r *Reflector) probeOnce(ctx context.Context) (string, error) {
	_, lm, err := r.listOnce(ctx, "probe list", metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err != nil {
		return "", err
	}
	if lm.GetResourceVersion() == "" {
		return "", fmt.Errorf("reflector %s: probe list: server returned no resourceVersion", r.opts.Name)
	}
	return lm.GetResourceVersion(), nil
}

// SyncTarget returns the resourceVersion the informer must reach before it
// reports synced: the probe's after a resume, else the first relist's. ok is
// false until it is known.
func (r *Reflector) SyncTarget() (rv string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target, r.targetSet
}

// TargetKnown returns a channel closed once the sync target is known (see
// SyncTarget).
func (r *Reflector) TargetKnown() <-chan struct{} { return r.targetCh }

// setTargetLocked makes rv the sync target. The caller holds mu.
func (r *Reflector) setTargetLocked(rv string) {
	r.target, r.targetSet = rv, true
	r.stats.TargetAt = r.opts.Clock.Now()
	close(r.targetCh)
}

// CaughtUp returns a channel closed once the reflector has handed the queue
// a list, an event or a bookmark at or past the sync target.
func (r *Reflector) CaughtUp() <-chan struct{} { return r.caughtUpCh }

// CaughtUpByRelist reports whether the reflector reached its sync target
// with a relist rather than with watch events: the informer is then synced
// by applying that relist, not by comparing resourceVersions (step 5).
func (r *Reflector) CaughtUpByRelist() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUpByRelist
}

// observed counts an event or bookmark at rv handed to the queue, which may
// reach the sync target (step 3).
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
		if bookmark { // opaque RVs: the only progress statement (step 3)
			klog.FromContext(ctx).V(2).Info("Caught up by bookmark; resourceVersions are not comparable", "resourceVersion", rv, "syncTarget", r.target)
			r.markCaughtUpLocked(ctx, rv)
		}
	case cmp >= 0:
		r.markCaughtUpLocked(ctx, rv)
	}
}

// relisted notes a relist at rv handed to the queue: it is the sync target
// if none is known yet, and it reaches the target (a consistent list made
// after the probe is at least as new).
func (r *Reflector) relisted(ctx context.Context, rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastRV = rv
	if !r.targetSet {
		r.setTargetLocked(rv)
	}
	if !r.caughtUp {
		r.caughtUpByRelist = true
	}
	r.markCaughtUpLocked(ctx, rv)
}

func (r *Reflector) markCaughtUpLocked(ctx context.Context, rv string) {
	if r.caughtUp {
		return
	}
	r.caughtUp, r.caughtUpRV = true, rv
	r.stats.CaughtUpAt = r.opts.Clock.Now()
	close(r.caughtUpCh)
	klog.FromContext(ctx).V(2).Info("Caught up with sync target", "syncTarget", r.target, "resourceVersion", rv)
}

func (r *Reflector) isCaughtUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUp
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

// catchUpWatchEnded follows a catch-up watch that got bookmarks bookmarks
// (closedEarly: it closed before its timeout). After maxCatchUpMisses
// catch-up watches in a row without a bookmark the reflector stops making
// them (a server that sends none, such as one without a watch cache); after
// one that ran to its timeout without reaching the sync target it nudges the
// server.
func (r *Reflector) catchUpWatchEnded(ctx context.Context, st *runState, bookmarks int, closedEarly bool) {
	missed := bookmarks == 0
	if !missed {
		st.catchUpMisses = 0
	}
	if !closedEarly && !r.isCaughtUp() && !r.nudge(ctx) {
		// etcd has nothing past the sync target yet, so the server had
		// no bookmark to send: that says nothing of whether it sends
		// bookmarks at all.
		missed = false
	}
	if missed {
		st.catchUpMisses++
		if st.catchUpMisses == maxCatchUpMisses {
			klog.FromContext(ctx).V(1).Info("Server sent no bookmark on catch-up watches; waiting for an event at or past the sync target, or the catch-up deadline", "catchUpDeadline", r.opts.CatchUpDeadline)
		}
	}
}

// nudge makes a consistent LIST of one object, and discards it, after a
// catch-up watch that did not reach the sync target: served from the watch
// cache only once the cache has caught up with etcd (it asks etcd for a
// progress notification), it moves the cache past a target whose newest
// write the watch filtered out, so that the next catch-up watch gets a
// bookmark past it (see "Catching up after a resume" in the package
// documentation).
//
// It returns whether etcd has moved past the sync target, or cannot tell
// (the LIST failed, or resourceVersions do not compare). While it has not,
// the server has no bookmark to send, and a catch-up watch without one is
// not a miss.
func (r *Reflector) nudge(ctx context.Context) bool {
	rv, err := r.probeOnce(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Catch-up LIST failed; the next catch-up watch goes ahead without it", "err", err)
		}
		return true
	}
	target, _ := r.SyncTarget()
	cmp, err := resourceversion.CompareResourceVersion(rv, target)
	return err != nil || cmp > 0
}

// giveUpResume turns a resume that did not reach its sync target in time
// into a relist (step 4).
func (r *Reflector) giveUpResume(st *runState) {
	target, _ := r.SyncTarget()
	st.startRelist(ReasonCatchUp, "syncTarget", target, "resourceVersion", st.lastRV, "after", r.opts.CatchUpDeadline)
	st.catchUpDeadline = time.Time{}
}

// Applied is what an informer fed by the reflector has applied, the input
// of Synced.
type Applied struct {
	// ResourceVersion is the resume point of its last commit
	// (Options.ResumeFrom before any).
	ResourceVersion string
	// Relist says that its last commit applied a relist's Replace
	// (including the empty one of a resource the server stopped serving).
	Relist bool
	// CatchUpApplied says that it has applied every delta its queue had
	// taken when the reflector caught up by a bookmark (what syncs when
	// resourceVersions do not compare).
	CatchUpApplied bool
}

// Synced applies the sync rule (step 5) to what an informer has applied.
// It returns why the informer is synced, for its log, or "" while it is not.
// The first time the applied resume point does not compare with the sync
// target it logs so on logger.
func (r *Reflector) Synced(logger klog.Logger, a Applied) (why string) {
	if a.Relist {
		return "relist applied"
	}
	if r.opts.ResumeFrom == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.caughtUpByRelist || !r.targetSet {
		// After a relist only its Replace syncs (see CaughtUpByRelist).
		return ""
	}
	c, err := resourceversion.CompareResourceVersion(a.ResourceVersion, r.target)
	if err == nil {
		if c >= 0 {
			return "caught up with the sync target"
		}
		return ""
	}
	if !r.caughtUp {
		return ""
	}
	if !r.incomparableLogged {
		r.incomparableLogged = true
		logger.Info("ResourceVersions are not comparable; syncing once the bookmark by which the reflector caught up is applied",
			"applied", a.ResourceVersion, "syncTarget", r.target, "caughtUp", r.caughtUpRV, "err", err)
	}
	if a.ResourceVersion == r.caughtUpRV || a.CatchUpApplied {
		return "applied the bookmark by which the reflector caught up (resourceVersions not comparable)"
	}
	return ""
}

// ReachesTarget reports whether a consistent read at rv is at or past the
// sync target, which it returns (package informer's Options.StateCatchUp);
// err says why rv does not compare with it.
func (r *Reflector) ReachesTarget(rv string) (target string, ok bool, err error) {
	target, known := r.SyncTarget()
	if !known {
		return "", false, nil
	}
	c, err := resourceversion.CompareResourceVersion(rv, target)
	return target, err == nil && c >= 0, err
}
