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
// # Start
//
// [Options.StartFrom] sets ResumeFrom from the store: its resume point when
// it holds at least one object; "" (a cold start) when it holds none, since
// an emptied store may keep a resume point that no longer describes it.
//
// A resume (ResumeFrom != "") first makes a freshness probe: a LIST with
// limit=1 and resourceVersion="" (a consistent read). Its resourceVersion P is
// the sync target. If ResumeFrom is newer than P (etcd was restored from a
// backup: the server travelled back in time), the persisted point is
// discarded and the reflector relists (reason "time-travel"). If the two
// cannot be compared (servers with opaque resourceVersions), the check is
// skipped and the log says so. Otherwise the reflector watches from
// ResumeFrom with bookmarks: the probe is the only LIST of a resume.
//
// A cold start (ResumeFrom == "") lists everything with a consistent read and
// hands the queue one Replace(list, listRV); the sync target is listRV. The
// list is a streaming list (a watch with sendInitialEvents=true,
// resourceVersionMatch=NotOlderThan, ended by the bookmark annotated
// k8s.io/initial-events-end) when Options.WatchList allows it, else a LIST
// paginated by Options.PageSize. In the default auto mode a streaming list
// that fails, whatever the error, is followed at once by the paginated LIST,
// as in client-go: a ListerWatcher that does not speak the streaming list
// (client-go's fake controller source, aggregated API servers built on older
// libraries) still syncs. After a failure that says the server rejects or
// ignores the request (400, 403, 404, 405, 406, 415, 422, or a stream ended
// without the bookmark) the rest of the Run lists with LIST only, where
// client-go streams again on its next relist; after another failure (server
// unreachable, 429, 5xx) the next relist streams again. A ListerWatcher that
// declares it does not support watch-list semantics (client-go's
// watchlist.DoesClientNotSupportWatchListSemantics) is never asked for one.
//
// # Watching
//
// Every watch asks for bookmarks and is handed to the queue event by event;
// a bookmark becomes Queue.Bookmark(rv), so the persisted resume point moves
// on quiet resources too. A watch that ends or drops is restarted from the
// last resourceVersion seen. Errors other than the ones below are reported
// to Options.WatchErrorHandler and retried after an exponential backoff,
// each time, for as long as Run runs: also errors a retry cannot fix, such
// as 400 Bad Request or 422 Invalid for a field selector the server
// rejects, as client-go does (client-go relists after each failure; a LIST
// would be rejected too, so this reflector watches again). A watch that
// gets 404 makes the reflector ask, with a LIST of one object, whether the
// resource is still served: if so, it watches again from where it was; if
// not, it empties the store (see ReasonGone). A watch that fails with 410
// Gone or Expired ("too old resource version"), or with "too large
// resource version", means the resume point is unusable: the reflector
// relists (reasons "expired", "too-large") and hands the complete list to
// Queue.Replace, which reconciles it against the persisted objects (objects
// gone from the server become cache.DeletedFinalStateUnknown deletions).
// The first such relist is made at once; one that would follow the
// previous relist within Backoff.Reset waits a backoff first, so that a
// watch failing right after every list (a watch cache lagging behind etcd)
// cannot become a LIST storm, unless the watch that failed followed a
// backoff already (after a watch that closed early or failed): as in
// client-go, a disruption costs one backoff before its relist.
//
// # Catching up after a resume
//
// DESIGN invariant 3: an informer that resumed may report HasSynced only once
// it has applied everything up to P. Events in (ResumeFrom, P] arrive at once
// from the API server's watch cache, but on a quiet resource there may be no
// event at or past P, so the reflector needs the server to say "you have
// everything up to P". What kube-apiserver (v1.36, k8s.io/apiserver
// pkg/storage/cacher) offers, from its source:
//
//   - The initial-events-end bookmark is sent only to watches with
//     sendInitialEvents=true and allowWatchBookmarks=true
//     (Cacher.getBookmarkAfterResourceVersionLockedFunc returns 0, meaning
//     "none", otherwise; the same test is isListWatchRequest). With
//     sendInitialEvents=true the stream starts with the whole current state,
//     which is the full list a resume exists to avoid. A resumed watch
//     (sendInitialEvents unset or false) gets no such bookmark.
//   - Clients cannot request a bookmark or a progress notification:
//     RequestWatchProgress is used only between the watch cache and etcd
//     (conditionalProgressRequester); kubernetes/kubernetes#127693 asking for
//     client-requested bookmarks is open.
//   - The watch cache sends each watcher with allowWatchBookmarks a bookmark
//     about once a minute (defaultBookmarkFrequency) and also two seconds
//     before the watch's deadline (cacheWatcher.nextBookmarkTime: "right
//     before the watcher timeout - for now we simply set it 2s before the
//     deadline"), carrying the newest resourceVersion the cache has
//     processed. Since a consistent LIST is served from the watch cache only
//     after the cache has caught up with etcd (ConsistentListFromCache, using
//     etcd progress requests), that resourceVersion is at least P once the
//     probe has returned. (If the cache cannot catch up in time the server
//     answers the probe from etcd instead; a bookmark short of P then only
//     leads to one more catch-up watch.)
//   - A bookmark is sent only if its resourceVersion is past the last event
//     the watch processed, and the events its namespace or selectors
//     filter out count as processed (cacheWatcher.processInterval and
//     process). The cache's resourceVersion moves only with events of the
//     resource and with etcd progress notifications. So when the newest
//     write of the resource at or before P is one the watch does not see
//     (a ConfigMap of another namespace), and the watch cache already held
//     it when the watch started, no bookmark reaches the watch until
//     another write of the resource or a progress notification: measured
//     through controller-runtime's multi-namespace cache, about 69 seconds,
//     or a relist at the catch-up deadline. A consistent LIST makes the
//     cache ask etcd for a progress notification (see above), which moves
//     the cache past P as soon as etcd has any newer revision; leases renew
//     every few seconds on a live cluster.
//
// So the fastest honest signal is the pre-deadline bookmark of a short
// watch: after a resume, until the target is reached, the reflector makes
// catch-up watches with timeoutSeconds=Options.CatchUpWatchTimeout (default
// 3s) instead of the usual randomised [MinWatchTimeout, 2*MinWatchTimeout).
// The bookmark then comes about 1-2 seconds after the watch starts, not up to
// a minute. The target is reached by the first event or bookmark whose
// resourceVersion compares at or past P, or by a relist (a consistent list
// made after the probe is at least as new). After a catch-up watch that ran
// to its timeout without reaching the target, the reflector makes one more
// consistent LIST of one object (counted in Stats.Lists) before the next
// catch-up watch, for the case above. After three catch-up watches in a
// row without any bookmark the reflector returns to normal timeouts and waits
// for such an event. A server whose watches carry no bookmarks at all, such as
// kube-apiserver with --watch-cache=false (etcd serves the watch; measured:
// no bookmark in 40 seconds), gives a quiet resource no way to catch up, so
// Options.CatchUpDeadline (default 2 minutes, past the periodic bookmark)
// gives the resume up for a relist (reason "catch-up") rather than leave the
// informer unsynced; a negative one never gives it up. The reflector never
// reports catching up on a guess; the one exception is documented: when
// resourceVersions are not comparable, a bookmark received after the probe
// counts, because it is the only progress statement such a server makes.
//
// Measured against kube-apiserver v1.36.3 (the test/apiserver harness,
// reflector_integration_test.go): with the target moved past every event of
// the watched resource by a write elsewhere, a resumed reflector caught up
// 3.0-3.6 seconds after starting with catch-up watches of 5s (the default
// until 3s was measured to get its bookmark too), and 59.8 seconds without
// them (CatchUpWatchTimeout -1, periodic bookmark). With 3s, `make demo` (a
// lease renewed every second, the restart 3 seconds after the last change)
// caught up about one second after its probe. With
// the newest ConfigMap write in another namespace, it caught up 12.6 seconds
// after starting, after two catch-up LISTs; without them it relisted at its
// catch-up deadline (45 seconds in that test). Without the watch cache it
// relisted at its catch-up deadline.
//
// That bookmark wait (one to two seconds) is the floor of a resume that
// lists nothing. Callers that cannot afford it, such as controller-runtime's
// multi-namespace cache, which waits for each namespace's informer in turn,
// can pay bytes instead: package informer's Options.StateCatchUp lists the
// metadata of every object once [Reflector.TargetKnown] is closed and
// syncs the informer as soon as its store holds that state, whether or not
// the reflector has caught up.
//
// [Reflector.CaughtUp] is closed, and [Reflector.CaughtUpResourceVersion]
// returns that event's resourceVersion, once the reaching event has been
// handed to the queue.
//
// # The resume rule
//
// resume.go holds the whole rule, each step with the DESIGN invariant it
// keeps: the start decision ([Options.StartFrom]: a store with a resume
// point and at least one object resumes, any other lists), the probe, the
// catch-up, giving the resume up, and the one sync rule, [Reflector.Synced],
// which an informer asks after each commit: it is synced once it has
// applied a relist, or, after a resume, once its applied resume point is
// at or past the sync target; never by comparing resourceVersions once the
// reflector reached the target by a relist ([Reflector.CaughtUpByRelist]:
// time travel, an expired or given-up resume), as a resume point persisted
// before it may come from another history and compare as newer. Where
// resourceVersions do not compare, it is synced once it has applied the
// bookmark by which the reflector caught up, and everything queued before
// it.
//
// # Logging
//
// Contextual logging through klog.FromContext. At default verbosity a
// reflector logs one line per resume ("Resuming watch") and one per full list
// ("Listing" with its reason: cold, expired, too-large, time-travel,
// catch-up, or the cause of a cold start given as Options.ColdReason:
// scope-change or corrupt), and one per absence when a LIST gets 404 for the
// resource, saying whether it empties the store (reason gone; a store known
// to hold nothing is not counted); details are at V(2) and above. Stats
// counts the same reasons, for metrics, each relist once however many
// attempts it takes. Errors go to Options.WatchErrorHandler.
//
// # Concurrency
//
// A Reflector's methods are safe for concurrent use. Run may be called once;
// it calls the Queue from its own goroutine only.
//
// # Caveats
//
// Queue methods do not take a context: Run returns only after an in-flight
// call returns. Resync is not driven by the reflector.
//
// An event the queue refuses (its Add, Update or Delete returns an error,
// such as a key-function or transform error) is reported and dropped, and
// the resume point moves past it (with the next event or bookmark the
// queue takes, if not with this one): after a restart it is not seen
// again, and the object stays as the store last had it until another event
// or a relist brings its current state. client-go's reflector does the
// same (its watch handler logs store errors and goes on); stopping would
// stall the informer on one bad object, and watching again from before it
// would only meet it again. Events of an unexpected type or GVK are
// dropped likewise. Stats.Dropped counts both, so that metrics can show
// them.
//
// A server older than Kubernetes 1.27 ignores sendInitialEvents and answers a
// streaming list with a plain watch that carries no initial events; the
// reflector notices only when that watch ends at its timeout (5 to 10
// minutes by default), then falls back to LIST. Set WatchList to false for
// such servers.
//
// ExpectedGVK is compared with the GVK objects carry; typed clients decode
// objects with an empty one.
package reflector
