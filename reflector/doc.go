// Package reflector lists and watches one Kubernetes resource and feeds a
// [Queue], like client-go's cache.Reflector, except that it can resume: given
// the resourceVersion persisted with the informer's store (Options.ResumeFrom),
// a restarted reflector watches from there instead of listing every object
// again.
//
//	r, err := reflector.New(lw, fifo, &reflector.Options{
//		Name:         "v1/configmaps",
//		ExpectedType: &corev1.ConfigMap{},
//		ResumeFrom:   st.ResourceVersion(),
//	})
//	...
//	err = r.Run(ctx) // until ctx is done
//
// # The resume rule
//
// resume.go holds the whole rule; each step names the DESIGN invariant it
// keeps:
//
//  1. Start ([Options.StartFrom]): a store with a resume point R and at least
//     one object resumes from R; any other lists (an emptied store may keep an
//     R that no longer describes it), with reason scope-change when the store
//     was emptied because its scope changed (invariant 5).
//  2. Probe: a resume first makes a LIST with limit=1 and resourceVersion=""
//     (a consistent read); its resourceVersion P is the sync target
//     (invariant 3). R newer than P (etcd restored from a backup) relists
//     (reason time-travel); R and P that do not compare (opaque
//     resourceVersions) skip that check, and the log says so (invariant 6).
//     Otherwise the reflector watches from R: the probe is the only LIST of
//     a resume. A probe and first catch-up watch started before Run
//     ([StartEarly], Options.Early) are used if Run resumes from the same R
//     within one catch-up watch timeout of their start (invariant 10).
//  3. Catch-up: the target is reached by the first event or bookmark at or
//     past P, or by a relist (a consistent list made after the probe); with
//     opaque resourceVersions, by a bookmark received after the probe, the
//     only progress statement such a server makes. Short catch-up watches
//     make the server's bookmark come within seconds (invariant 10; see
//     below). The reflector never reports catching up on a guess.
//  4. Giving up: a resume that has not reached P by Options.CatchUpDeadline
//     relists (reason catch-up) rather than leave the informer unsynced.
//  5. Sync ([Reflector.Synced], asked by the informer after each commit): an
//     informer is synced once it has applied a relist, or, after a resume,
//     once its applied resume point is at or past P; never by comparing
//     resourceVersions once the reflector reached P by a relist
//     ([Reflector.CaughtUpByRelist]), as a resume point persisted before it
//     may come from another history (invariants 3 and 6). With opaque
//     resourceVersions, once it has applied the bookmark by which the
//     reflector caught up and everything queued before it.
//
// A cold start lists everything with a consistent read and hands the queue
// one Replace(list, listRV); the sync target is listRV. The list is a
// streaming list (a watch with sendInitialEvents=true ended by the bookmark
// annotated k8s.io/initial-events-end) when Options.WatchList allows it, else
// a LIST paginated by Options.PageSize. In the default auto mode a streaming
// list that fails, whatever the error, is followed at once by a paginated
// LIST, as in client-go. After a failure that says the server rejects or
// ignores the request (400, 403, 404, 405, 406, 415, 422, or a stream ended
// without the bookmark) the rest of the Run lists with LIST only; after
// another failure the next relist streams again. A ListerWatcher that
// declares it does not support watch-list semantics is never asked for one.
//
// # Watching
//
// Every watch asks for bookmarks; a bookmark becomes Queue.Bookmark(rv), so
// the resume point moves on quiet resources too. A watch that ends is
// restarted from the last resourceVersion seen. Errors are reported to
// Options.WatchErrorHandler and retried after a backoff for as long as Run
// runs, as client-go does, even those a retry cannot fix (a field selector
// the server rejects). A watch that gets 404 makes the
// reflector ask, with a LIST of one object, whether the resource is still
// served: if not, it empties the store (see ReasonGone). 410 Gone or
// Expired, or "too large resource version", relists (reasons expired,
// too-large) into Queue.Replace, which reconciles the list against the
// persisted objects. A relist that would follow the previous one within
// Backoff.Reset waits a backoff first, so that a watch failing right after
// every list cannot become a LIST storm, unless the failed watch already
// followed a backoff: as in client-go, a disruption costs one backoff.
//
// # Catching up after a resume
//
// On a quiet resource no event may come at or past P, and clients cannot ask
// kube-apiserver (v1.36) for a bookmark; but its watch cache sends each watch
// a bookmark two seconds before the watch's deadline, carrying the newest
// resourceVersion it has processed, at least P once a consistent probe has
// returned. So until it reaches P the reflector makes short catch-up watches
// (Options.CatchUpWatchTimeout, default 3s: the bookmark comes one to two
// seconds in) instead of the usual [MinWatchTimeout, 2*MinWatchTimeout).
//
// A bookmark is sent only past the last event the watch processed, counting
// events its namespace or selectors filter out, and the cache moves only
// with events of the resource and etcd progress notifications. So after a
// catch-up watch that ran to its timeout without reaching P, the reflector
// makes one more consistent LIST of one object (counted in Stats.Lists),
// which makes the cache ask etcd for progress. After three catch-up watches
// in a row without any bookmark (a server without a watch cache) it returns
// to normal timeouts, leaving catch-up to events and Options.CatchUpDeadline.
// Callers that cannot afford the bookmark wait can pay bytes instead:
// package informer's Options.StateCatchUp lists the metadata of every object
// once [Reflector.TargetKnown] is closed (see [Reflector.ReachesTarget]).
//
// # Logging and concurrency
//
// Contextual logging through klog.FromContext: at default verbosity one line
// per resume, per full list (with its reason) and per absence of the
// resource; details at V(2) and above. A Reflector's methods are safe for
// concurrent use; Run may be called once, and calls the Queue (see Queue)
// from its own goroutine only.
//
// # Caveats
//
// Resync is not driven by the reflector. An event the queue refuses (a
// key-function or transform error) is reported and dropped, and the resume
// point moves past it: after a restart it is not seen again, and the object
// stays as the store last had it until another event or a relist.
// client-go's reflector does the same; stopping would stall the informer on
// one bad object. Events of an unexpected type or GVK are dropped likewise.
// Stats.Dropped counts both.
//
// A server older than Kubernetes 1.27 ignores sendInitialEvents; the
// reflector notices only when that watch ends at its timeout (5 to 10
// minutes by default), then falls back to LIST. Set WatchList to false for
// such servers.
package reflector
