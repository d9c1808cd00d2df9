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
// see Options.Queue) whose known objects are the store. The informer pops
// batches of deltas and applies each batch (or a group of batches, see
// Options.MaxBatchDelay) in ONE store commit, together with the
// resourceVersion up to which everything is then applied; only then are
// the handlers notified. A relist is always its own commit. Commits run on
// their own goroutine, in pop order: while one waits for its fsync, the
// next group is popped and prepared, and grows until that commit is over,
// so the size of commits adapts to the store. Where the store can stage a
// commit (store.StagedBatch), a group is made durable first and then
// applied to the store's reads and notified on another goroutine while the
// next group is made durable: readers and handlers see a group only once
// it is durable. A failed commit is logged and retried with backoff;
// nothing is notified for it and the resume point does not move. A store
// that refuses every write until it is reopened (store.ErrWritesStopped)
// needs a restart of the process: CheckCommits is a liveness check for it.
//
// A change the store rejects as invalid (an object its codec or an index
// function refuses) is skipped, as the reflector skips an event the queue
// refuses: the rest of its commit, a relist included, is committed whole
// with the resume point; the key keeps its last state the store accepts;
// handlers are not told of the change, which is logged and not seen again
// after a restart.
//
// # Restart
//
// When the store holds a resume point, Run first hands every handler
// OnAdd(obj, true) for each persisted object, then resumes the watch from
// it: handlers receive what changed while the process was down, deletes
// included. After a 410 Gone the reflector relists, and the objects deleted
// meanwhile reach handlers as cache.DeletedFinalStateUnknown carrying the
// last stored object. If the API server no longer serves the resource (its
// CRD was deleted), the store is emptied the same way and the resource is
// listed afresh once it is served again. A store that holds no object is
// listed rather than resumed: an emptied store keeps a resume point that
// no longer describes it.
//
// A handler added after the informer started, as controller-runtime's
// builder adds its handlers once the informer has synced, first receives
// OnDelete(cache.DeletedFinalStateUnknown) for every object deleted since
// the informer started, then OnAdd(obj, true) for every stored object:
// the deletes made while the process was down reach it too (see
// Options.TombstoneRetention and Options.Tombstones).
//
// # Differences from client-go
//
// Besides the store's own differences (package indexer), handlers can tell
// these from client-go's (TestDifferential checks the first against
// client-go's informer):
//
//   - A relist that finds a name deleted and created again (another UID)
//     reports OnDelete of a cache.DeletedFinalStateUnknown carrying the old
//     object, then OnAdd of the new one, where client-go calls
//     OnUpdate(old, new).
//   - A resync goes through a group commit that writes nothing: its
//     OnUpdate(obj, obj) calls come up to Options.MaxBatchDelay later.
//   - A transform that returns another type than the store's codec is
//     refused by the backends that encode objects, as any change the store
//     rejects (indexer.ErrWrongType); memory:// and memdb:// without a file
//     keep it, as client-go's store does.
//   - An update between two objects without a resourceVersion (a transform
//     may strip it) reaches every handler; client-go takes it for a resync.
//
// # HasSynced
//
// A cold start is synced once the first relist is committed, as in
// client-go. A resumed informer is synced once it has applied every event
// up to a consistent read taken at start, so that HasSynced never reports
// a stale cache as fresh (Options.ServeStale opts out). The rule is the
// reflector's (reflector.Reflector.Synced), asked after each commit. A
// registration's HasSynced also waits until its handler has been handed
// every notification queued before the informer synced.
//
// # Many resources
//
// A Factory keeps the informers of many resources of one cluster in one
// database, one store per resource and kind of informer (InformerFor,
// DynamicInformerFor, MetadataInformerFor). NewSharedInformerFactory and
// NewGeneratedFactory are drop-ins for client-go's typed factory and for a
// code-generated one. InformerConstructor plugs into controller-runtime as
// its cache.Options.NewInformer. Each store records a scope fingerprint
// (cluster, resource, namespace, selectors), so a database reused for
// another scope is relisted rather than served.
//
// # Metrics and logs
//
// NewMetrics registers the informers' Prometheus metrics (listed in the
// README) on a registry the caller supplies; Options.Metrics hands it to
// each informer. The informer logs through the logger of the context given
// to RunWithContext (else Options.Logger): at the default verbosity one
// line per resume or relist (with its reason) and failures; V(2) adds syncs
// and list results, V(4) every watch.
//
// # Concurrency
//
// Informer is safe for concurrent use. Each handler is called from one
// goroutine of its own, in order; handlers run concurrently with each other
// and must treat the objects they get as read-only.
package informer
