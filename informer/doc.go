// Package informer provides Informer, a client-go SharedIndexInformer whose
// cache is a store.Store: objects, indexes and the resume resourceVersion
// outlive the process, and a restarted informer resumes its watch from the
// persisted resourceVersion instead of listing every object again.
//
//	s, err := store.Open(ctx, "bolt:///var/lib/ctrl/cache.db", &store.Options{Name: "v1/configmaps", Codec: codec})
//	inf, err := informer.New(lw, &corev1.ConfigMap{}, s, nil)
//	reg, err := inf.AddEventHandler(handler)
//	go inf.RunWithContext(ctx)
//	lister := listersv1.NewConfigMapLister(inf.GetIndexer())
//
// # Pipeline
//
// The reflector lists and watches into an in-order FIFO (or a DeltaFIFO,
// see Options.Queue) whose known objects are the store. The informer pops batches of deltas and applies each batch
// (or a group of batches, see Options.MaxBatchDelay) in ONE store commit,
// together with the resourceVersion up to which everything is then applied.
// Only after the commit are the handlers notified. A relist is always its
// own commit, so the store never holds half of one. Commits run on their own
// goroutine, in pop order: while one commit waits for its fsync, the next
// group is popped and prepared, and grows until that commit is over, so the
// size of commits adapts to how fast the store commits. Where the store can
// stage a commit (store.StagedBatch: the indexer.Base backends, bolt and
// badger in their default modes, memory), a group prepared ahead is made
// durable first and then, on an applier goroutine, applied to the store's
// reads and notified, in order, while the next group is made durable:
// readers and handlers see a group only once it is durable, as before. A
// failed commit is logged and retried with backoff; nothing is notified for
// it and the resume point does not move. A store that refuses every write
// until it is reopened (store.ErrWritesStopped, after a failed fsync) needs
// a restart of the process: the informer then retries only every ten
// seconds, and CheckCommits is a liveness check for that.
//
// A change the store rejects as invalid (an object its codec or an index
// function refuses) would fail its commit for ever. It is skipped as the
// reflector skips an event the queue refuses (and as client-go drops what
// its store refuses): the rest of its commit, a relist included, is still
// committed whole with the resume point; the key keeps its last state the
// store accepts (an earlier change of the same commit, or the stored one);
// handlers are not told of the rejected change; it is logged; and, the
// resume point having moved past it, a restart does not see it again. Only
// a store without store.BatchPreparer whose codec refuses an object makes
// the informer apply that one commit operation by operation instead.
//
// # Restart
//
// When the store holds a resume point, Run first hands every handler
// OnAdd(obj, true) for each persisted object, then starts the reflector from
// that resume point: handlers receive what changed while the process was
// down, deletes included. If the API server no longer has the resume point
// (410 Gone), the reflector relists and the objects deleted meanwhile reach
// handlers as cache.DeletedFinalStateUnknown carrying the last stored
// object. If the API server no longer serves the resource at all (404: its
// CRD was deleted), before or after the restart, the store is emptied the
// same way, every object reaching handlers as deleted, and the resource is
// listed afresh once it is served again. A store that holds no object is
// listed rather than resumed: that costs what resuming does, and an emptied
// store keeps a resume point that no longer describes it.
//
// A handler added after the informer started, as controller-runtime's
// builder adds its handlers once the informer has synced, receives
// OnDelete(cache.DeletedFinalStateUnknown) for every object deleted since
// the informer started, carrying the last stored object, then
// OnAdd(obj, true) for every stored object: the deletes made while the
// process was down reach it too. Such tombstones are kept until
// Options.TombstoneRetention (10 minutes) after the informer synced, those
// of live deletes up to Options.MaxTombstones; with Options.Tombstones (a
// Factory and an InformerConstructor open one per informer) they are
// persisted before the deletes they record are committed, so a process that
// dies before any handler heard of a delete hands it to every handler of
// its next run.
//
// # Relists
//
// A relist (after a 410, at any time, running or restarted) notifies as
// client-go's informer does, with one difference: a name that was deleted
// and created again while the watch was not looking (the listed object has
// another UID than the stored one) reaches handlers as OnDelete of a
// cache.DeletedFinalStateUnknown carrying the old object, then OnAdd of the
// new one, where client-go calls OnUpdate(old, new) across the two
// objects. Handlers that key their state by UID, or clean up after the old
// object, hear of its deletion. TestDifferential runs client-go's informer
// and this one on the same changes and checks that this is the only
// difference.
//
// # Differences from client-go
//
// Besides the relists of recreated names above, and the store's own
// differences (package indexer), handlers can tell these from client-go's:
//
//   - A resync goes through the queue, as in client-go, then through a
//     group commit that writes nothing: its OnUpdate(obj, obj) calls come
//     once that group is committed, up to Options.MaxBatchDelay later
//     (TestResyncNotifiedAfterGroupCommit).
//   - A transform (Options.Transform) that returns another type than the
//     store's codec is refused by the backends that encode objects (bolt,
//     badger, memory and memdb with a snapshot file): the change is left
//     out as any change the store rejects, and the logged error names the
//     type the codec wants and the one the transform returned
//     (indexer.ErrWrongType). memory:// and memdb:// without a file keep
//     it, as client-go's store does (TestTransformToAnotherType).
//   - An update between two objects without a resourceVersion (a transform
//     may strip it) reaches every handler; client-go takes it for a resync
//     and hands it only to the handlers whose resync is due (TestTransform).
//
// # HasSynced
//
// A cold start is synced once the first relist is committed, as in client-go.
// A resumed informer is synced once it has applied every event up to a
// consistent read taken at start (the reflector's sync target), so that
// HasSynced never reports a stale cache as fresh; Options.ServeStale opts in
// to serving the persisted state at once. The rule is the reflector's
// (reflector.Reflector.Synced; see "The resume rule" in package reflector),
// which the informer asks after each commit. A registration's HasSynced also
// waits until its handler has been handed every notification queued before
// the informer synced.
//
// # Many resources
//
// A Factory keeps the informers of many resources of one cluster in one
// database, one store per resource and kind of informer: the clientset's
// types (InformerFor), unstructured objects through the dynamic client
// (DynamicInformerFor, for custom resources) and metadata alone
// (MetadataInformerFor); each store records a scope fingerprint (cluster, resource,
// namespace, selectors), so a database reused for another scope is relisted
// rather than served. InformerConstructor plugs into controller-runtime as
// its cache.Options.NewInformer; it learns each informer's scope from the
// list request its ListerWatcher makes (through InformerConstructor's
// Config), so that no store ever holds two scopes. NewInformerConstructor
// identifies the cluster as NewFactory does and opens the database,
// returning its errors (URL, path safety, another process's lock); an
// informer it cannot make persistent stops the manager with that error
// (mgr.Add(c)), and client-go's in-memory informer runs instead only with
// ConstructorOptions.FallBackToMemory.
//
// NewSharedInformerFactory returns client-go's informers.SharedInformerFactory
// over one database, and NewGeneratedFactory the factory that a
// code-generated package of custom resources expects
// (internalinterfaces.SharedInformerFactory): controllers written on those
// factories become persistent by changing their constructor (README, "From
// client-go").
//
// # Metrics
//
// NewMetrics registers the informers' Prometheus metrics on a registry the
// caller supplies (never the global one by default); Options.Metrics hands
// it to each informer, which reports under the label informer=Options.Name
// from New until its Run returns (see Metrics). The metrics and their labels
// are listed in the README. Reflector counters and gauges are read at scrape
// time; commit latency and size histograms are observed as commits happen.
//
// # Logs
//
// The informer and its reflector log through the logr.Logger of the
// context given to RunWithContext (Options.Logger or klog's otherwise). At
// the default verbosity they say one line per resume ("Resuming watch") or
// relist ("Listing", with reason=cold, expired, too-large, time-travel,
// catch-up, scope-change, corrupt), one when the resource is not served
// (the store is emptied, reason gone), and otherwise only failures; V(2)
// adds syncs and list results, V(4) every watch.
//
// # Concurrency
//
// Informer is safe for concurrent use. Each handler is called from one
// goroutine of its own, in order; handlers run concurrently with each other
// and must treat the objects they get as read-only.
package informer
