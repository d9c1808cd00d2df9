package reflector

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/internal/typednil"
)

// This file holds the resume rule: whether a start resumes or relists, how
// a resume finds out it has caught up, when it is given up, and when the
// informer fed by the reflector is synced. Each step names the DESIGN
// invariant it keeps.
//
//  1. Start (Options.StartFrom). A store with a resume point R and at least
//     one object resumes from R. A store without R, or holding no object,
//     lists (an emptied store may keep an R that no longer describes it,
//     invariant 5); a store emptied when it was opened for another scope
//     lists with reason scope-change (invariant 5).
//  2. Probe (begin, probe, resumeOrRelist). A resume first makes a consistent LIST
//     of one object; its resourceVersion P is the sync target (invariant
//     3). R newer than P is time travel: relist (invariant 6). R and P that
//     do not compare (opaque resourceVersions): resume, and log that the
//     check was skipped (invariant 6). A resource emptied while not served
//     (ReasonGone) lists afresh (invariant 5). R equal to P has caught up
//     already. The probe and the first catch-up watch may have been
//     started before Run, while the store was opened (Options.Early,
//     invariant 10): they count if Run resumes from the resourceVersion
//     they started from, within one catch-up watch timeout of their start.
//  3. Catch-up (observedLocked, catchingUp, catchUpWatchEnded, nudge). The target is reached
//     by the first event or bookmark at or past P, or by a relist (a
//     consistent list made after the probe is at least as new as P). Short
//     catch-up watches and the one-object LIST after a catch-up watch that
//     missed make the server's bookmark come within seconds (invariant
//     10). With opaque resourceVersions only a bookmark counts.
//  4. Giving up (giveUpResume). A resume that has not reached P by
//     Options.CatchUpDeadline relists (reason catch-up) rather than leave
//     the informer unsynced for ever.
//  5. Sync (Synced). An informer is synced when it has applied a relist,
//     or, after a resume, once its applied resume point is at or past P
//     (invariant 3); never by comparing with P once the reflector reached
//     P by a relist, whose applied resume point may come from another
//     history (invariant 6). With opaque resourceVersions, once it has
//     applied the bookmark by which the reflector caught up and everything
//     queued before it. Package informer's opt-ins are the only other
//     ways: Options.ServeStale (synced at once, invariant 3's opt-out) and
//     Options.StateCatchUp (synced once its store holds a consistent state
//     read at or past P, see ReachesTarget).

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
// start rule (step 1 above) for the store p describes: resume from p's
// resume point when it has one and holds an object; else list, with
// reason scope-change when p was reset and o.ColdReason is unset. It
// returns p's resume point when it holds no object and is listed instead
// of resumed, "" otherwise.
func (o *Options) StartFrom(p Persisted) (unused string) {
	o.ResumeFrom = p.ResourceVersion
	if o.ResumeFrom != "" && p.Empty != nil && p.Empty() {
		// Nothing to resume: a full list costs what the resume's probe
		// does, and an empty store may hold a resume point that does not
		// describe it (emptied because the server stopped serving the
		// resource, which does not move the resume point): resuming would
		// miss the objects the server holds from before that point.
		unused, o.ResumeFrom = o.ResumeFrom, ""
	}
	if o.ResumeFrom == "" && o.ColdReason == "" && p.Reset {
		// Say why the store is empty instead of calling it a plain cold
		// start.
		o.ColdReason = ReasonScopeChange
	}
	return unused
}

// begin starts a Run: a resume probes the server (step 2 above), a cold
// start lists with Options.ColdReason. It returns false when ctx ended
// first.
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

// probe makes the consistent LIST with limit=1 whose RV is the sync target,
// retrying until it succeeds, and decides between resuming and relisting.
// It returns false when ctx ended first.
func (r *Reflector) probe(ctx context.Context, st *runState) bool {
	var p string
	for {
		var err error
		p, err = r.probeOnce(ctx)
		if err == nil {
			// Served: a later 404 is a new absence. (After an emptied
			// store, st.gone holds until the list that follows.)
			st.goneNoted = false
			break
		}
		if ctx.Err() != nil {
			return false
		}
		r.report(ctx, err)
		r.resourceGone(ctx, st, err)
		if !r.sleep(ctx, st) {
			return false
		}
	}
	r.resumeOrRelist(ctx, st, p)
	return true
}

// resumeOrRelist decides, once the probe returned p, whether the reflector
// watches from Options.ResumeFrom or relists (step 2 above).
func (r *Reflector) resumeOrRelist(ctx context.Context, st *runState, p string) {
	logger := klog.FromContext(ctx)
	resume := r.opts.ResumeFrom
	// The probe becomes the sync target only when the watch resumes. When
	// the reflector relists instead, the relist is the target: until it is
	// queued there is none, so an informer does not compare its persisted
	// resume point (from another history, after time travel) with the
	// probe and report synced on a store the relist is about to replace.
	if st.gone {
		// The store was emptied while the resource was not served: list
		// it afresh rather than resume.
		return
	}
	cmp, err := resourceversion.CompareResourceVersion(resume, p)
	switch {
	case err != nil:
		// Some servers (aggregated APIs) use opaque RVs. Time travel cannot
		// be detected there; say so rather than guess.
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

// probeOnce makes one consistent LIST of one object and returns its
// resourceVersion: the probe of a resume, the nudge of a catch-up, and the
// check that a resource is still served after a watch got 404.
func (r *Reflector) probeOnce(ctx context.Context) (string, error) {
	r.count(func(s *Stats) { s.Lists++ })
	obj, err := r.lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err != nil {
		return "", fmt.Errorf("reflector %s: probe list: %w", r.opts.Name, err)
	}
	if typednil.Is(obj) {
		return "", fmt.Errorf("reflector %s: probe list: %w", r.opts.Name, errNoList)
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

// SyncTarget returns the resourceVersion the informer must reach before it
// reports synced: after a resume, the RV of the consistent probe LIST; after
// a cold start, or a start that relists (time travel, a resource that was
// gone), the RV of that list. ok is false until it is known.
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

// CaughtUpResourceVersion returns the resourceVersion of the list, event or
// bookmark that reached the sync target; ok is false until then. See
// Synced for when the informer is synced.
func (r *Reflector) CaughtUpResourceVersion() (rv string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUpRV, r.caughtUp
}

// CaughtUpByRelist reports whether the reflector reached its sync target
// with a relist (a cold start, time travel, an expired or given-up resume)
// rather than with watch events. Such an informer is synced when it has
// applied that relist's Replace, and not by comparing resourceVersions:
// the resume point it persisted before may come from another history (an
// etcd restored from a backup) and compare as newer than the list.
func (r *Reflector) CaughtUpByRelist() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUpByRelist
}

// observedLocked notes an event or bookmark at rv handed to the queue,
// which may reach the sync target (step 3 above). The caller holds mu.
func (r *Reflector) observedLocked(ctx context.Context, rv string, bookmark bool) {
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

// relistedLocked notes a relist at rv handed to the queue: it is the sync
// target if none is known yet (a cold start, or a start that relisted
// instead of resuming), and it reaches the target. The caller holds mu.
func (r *Reflector) relistedLocked(ctx context.Context, rv string) {
	if !r.targetSet {
		r.setTargetLocked(rv)
	}
	// A consistent list made after the probe is at least as new as the
	// probe, so it reaches the target without comparing RVs.
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
// (closedEarly: it closed before its timeout). It counts the catch-up
// watches in a row that got none, and after one that ran to its timeout
// without reaching the sync target it nudges the server (see nudge).
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
		r.countCatchUpMiss(ctx, st)
	}
}

// countCatchUpMiss counts a catch-up watch that got no bookmark; after
// maxCatchUpMisses in a row the reflector stops making catch-up watches (a
// server that sends no bookmarks, such as one without a watch cache).
func (r *Reflector) countCatchUpMiss(ctx context.Context, st *runState) {
	st.catchUpMisses++
	if st.catchUpMisses == maxCatchUpMisses {
		klog.FromContext(ctx).V(1).Info("Server sent no bookmark on catch-up watches; waiting for an event at or past the sync target, or the catch-up deadline", "catchUpDeadline", r.opts.CatchUpDeadline)
	}
}

// nudge makes a consistent LIST of one object after a catch-up watch that
// did not reach the sync target, and discards it. kube-apiserver answers a
// watch's bookmark only with a resourceVersion past the last event the watch
// has processed, counting the events its namespace or selectors filtered
// out; and its watch cache's resourceVersion moves only with events of the
// resource or with etcd progress notifications. So when the newest write
// of the resource at or before the target is one this watch does not see
// (a ConfigMap of another namespace), its bookmarks carry nothing new, and
// none is sent until another write of the resource or a progress
// notification. A consistent LIST is served from the watch cache once the
// cache has caught up with etcd's current revision (ConsistentListFromCache
// asks etcd for a progress notification): once anything at all was written
// to etcd after the target (leases renew every few seconds), the next
// catch-up watch's bookmark carries a resourceVersion past it. See "Catching
// up after a resume" in the package documentation.
//
// It returns whether etcd has moved past the sync target (or cannot tell:
// the LIST failed, or resourceVersions do not compare). While it has not,
// the server has no bookmark to send, and a catch-up watch without one is
// not counted as a miss: so catch-up watches go on, each followed by such a
// LIST, until etcd moves (or the catch-up deadline).
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
// into a relist (step 4 above).
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
	// Relist says that its last commit applied a relist's Replace (a
	// cold start's list, any relist, or the empty Replace of a resource
	// the server stopped serving).
	Relist bool
	// CatchUpApplied says that it has applied every delta its queue had
	// taken when the reflector caught up by a bookmark: what syncs an
	// informer whose resourceVersions do not compare, where the bookmark
	// may be popped after a backlog queued before it.
	CatchUpApplied bool
}

// Synced applies the sync rule (step 5 above) to what an informer has
// applied, after each of its commits and once the reflector caught up.
// It returns why the informer is synced, for its log, or "" while it is
// not. The first time the applied resume point does not compare with the
// sync target (opaque resourceVersions) it logs so on logger, once.
func (r *Reflector) Synced(logger klog.Logger, a Applied) (why string) {
	if a.Relist {
		// A cold start syncs with its first relist, as client-go; any
		// applied relist is a consistent read at least as new as the
		// target (invariants 2 and 3).
		return "relist applied"
	}
	if r.opts.ResumeFrom == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.caughtUpByRelist {
		// The relist's Replace is what syncs: the resume point applied
		// before it may be from another history (time travel) and compare
		// as past the list (invariant 6).
		return ""
	}
	if !r.targetSet {
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

// ReachesTarget reports whether a consistent read of the server's state at
// rv is at or past the sync target, so that an informer whose store holds
// that state has applied everything up to the target (package informer's
// Options.StateCatchUp). It returns the target; err says why rv does not
// compare with it.
func (r *Reflector) ReachesTarget(rv string) (target string, ok bool, err error) {
	target, known := r.SyncTarget()
	if !known {
		return "", false, nil
	}
	c, err := resourceversion.CompareResourceVersion(rv, target)
	return target, err == nil && c >= 0, err
}
