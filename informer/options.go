package informer

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/informerdb/informerdb/deltafifo"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// Defaults of Options.
const (
	// DefaultMaxBatchSize is the default of Options.MaxBatchSize.
	DefaultMaxBatchSize = 5000
	// DefaultMaxBatchDelay is the default of Options.MaxBatchDelay.
	DefaultMaxBatchDelay = 10 * time.Millisecond
	// GroupDeltasPerOp bounds the deltas of a group: at most
	// GroupDeltasPerOp times Options.MaxBatchSize. The operations of its
	// commit are bounded by MaxBatchSize itself; this bounds how long the
	// changes of a few hot keys wait for one commit, and what they hold.
	GroupDeltasPerOp = 10
	// DefaultMaxQueued is the default of Options.MaxQueued: ten commits of
	// DefaultMaxBatchSize.
	DefaultMaxQueued = 10 * DefaultMaxBatchSize
	// DefaultTombstoneRetention is the default of
	// Options.TombstoneRetention: long enough for a controller that waits
	// for its leader election lease after its caches synced.
	DefaultTombstoneRetention = 10 * time.Minute
	// DefaultMaxTombstones is the default of Options.MaxTombstones.
	DefaultMaxTombstones = 10000
)

// Options configure an Informer. The zero value means defaults. New copies
// it; an Options value is not safe for concurrent mutation.
type Options struct {
	// Name identifies the informer in metrics (label "informer") and in
	// logs. Default Reflector.Name if set, else the store's name
	// (store.Info().Name, "core/v1/configmaps" in a Factory).
	Name string

	// Metrics, if set, exports the informer's metrics (see NewMetrics);
	// informers sharing one Metrics need distinct names. Default nil: no
	// metrics.
	Metrics *Metrics

	// ResyncPeriod is the resync period of handlers added with
	// AddEventHandler, and the informer's resync check period, as in
	// cache.NewSharedIndexInformer. A resync delivers OnUpdate(obj, obj) for
	// every stored object to the handlers whose period is due; it reads the
	// store and writes nothing. Default 0: no resync.
	ResyncPeriod time.Duration

	// MaxBatchSize bounds the operations (objects written or deleted, one
	// per key) of one store commit. Default DefaultMaxBatchSize (5000). A
	// relist is always committed whole, whatever its size (DESIGN invariant
	// 2).
	//
	// Commits are only that large when events arrive faster than the store
	// commits them: then a larger group costs the same fsyncs as a small
	// one, and a key changed several times in a group is written once (a
	// commit holds one operation per key, its newest), so the bound sets
	// the throughput of a durable store under load. What a commit costs
	// grows with its operations, not with the changes they fold, so a
	// group of changes to a few hot keys takes up to GroupDeltasPerOp times
	// MaxBatchSize deltas, all notified after its one commit. A commit holds
	// its group's objects (already in memory) and, for bolt, its dirty
	// pages until it is done. A store that implements store.BatchLimiter
	// bounds the operations of a commit further, to what it commits at its
	// usual cost (badger: what fits one badger transaction); pops are then
	// no larger either.
	//
	// bolt rewrites each page a commit touches, so under sustained updates
	// to objects spread over the store it gains most from larger commits:
	// 100,000 distinct objects updated in random order ran at 74,000 events
	// per second with 5000, 107,000 with 20,000 and 135,000 with 50,000, a
	// commit of 50,000 taking about 0.37 s before its events are notified
	// (BENCHMARKS.md section 3, "Random order, measured").
	MaxBatchSize int

	// MaxBatchDelay bounds how long a popped batch waits for further batches
	// to share its commit (group commit) while no commit is running: the
	// first batch of a commit is notified at most MaxBatchDelay after it was
	// popped, plus the time of its own commit and of the commit that was
	// running when it was popped. While a commit runs, the next group keeps
	// growing (within MaxBatchSize) until it is over, as it could not be
	// committed earlier anyway. Default DefaultMaxBatchDelay (10ms);
	// NoBatchDelay (or any negative value) commits every pop on its own,
	// which is the right choice for the memory backend, where commits cost
	// nothing.
	MaxBatchDelay time.Duration

	// MaxQueued bounds the watch events waiting in the informer's queue
	// for their commit. When the store falls behind (commits that keep
	// failing, as on a full disk), the reflector then waits for room
	// instead of the queue growing with every event until the process
	// runs out of memory. Nothing is lost: the watch resumes where it
	// stopped reading; if the API server closed it meanwhile, the
	// reflector watches again from the last event it queued, or relists
	// (after a 410, or when a resume did not catch up in time while it
	// waited). Relists, resyncs and bookmarks never wait. Default
	// DefaultMaxQueued (50,000); a negative value means no bound.
	MaxQueued int

	// Queue selects the queue between the reflector and the store, as
	// client-go's InOrderInformers feature gate chose between its RealFIFO
	// and its DeltaFIFO. Default InOrderQueue.
	Queue QueueKind

	// ServeStale, when true and the store holds a resume point, makes the
	// informer (and its handlers, once they have seen the persisted
	// objects) report HasSynced right after the persisted objects were
	// replayed, before it has caught up with the API server. Default false:
	// after a restart HasSynced waits until the informer has applied every
	// event up to a consistent read taken at start (DESIGN invariant 3).
	ServeStale bool

	// StateCatchUp, when set, shortens the catch-up of a resume, at the
	// cost of listing the metadata of every object once: a resumed
	// informer learns that it has applied every event up to its sync
	// target (a consistent read taken at start) from a bookmark, which
	// kube-apiserver sends one to two seconds after the catch-up watch
	// starts when the newest revision is not one of the informer's objects
	// (another resource's write, as in any live cluster). With
	// StateCatchUp, once the sync target is known the informer also lists
	// the server's state (MetadataStateLister: every object's key and
	// resourceVersion at a revision at or past the target) and syncs as
	// soon as its committed store holds exactly that state (or a newer
	// one), waiting only for the events of the keys that differ: changed
	// objects, objects created, and objects deleted while it was down,
	// whose deletes still come from the watch. HasSynced keeps its meaning
	// (DESIGN invariant 3); nothing is relisted. If the list fails, or is
	// older than the target, the catch-up is the bookmark's, as without
	// it. Its cost: one streaming list of metadata, which the API server
	// serves from its watch cache: the names, labels, annotations, owners
	// and managed fields of every object, about 320 bytes per ConfigMap
	// (22% of a cold start's bytes for ConfigMaps of 1 KiB, measured in
	// BENCHMARKS.md); and reading every stored object once, under the
	// lock commits take (a bounded store decodes each). A lister that
	// lists another scope than the informer's never matches its store: it
	// costs its bytes and saves nothing, it does not sync the informer
	// early. Worth it where the restart's seconds matter more than those
	// bytes. A lister lists one informer's objects: a template of several
	// informers' options (FactoryOptions.Informer,
	// ConstructorOptions.Informer) must leave it nil. Default nil: the
	// bookmark.
	StateCatchUp StateLister

	// TombstoneRetention is how long after the informer synced a handler
	// added late still receives the deletes it missed. A handler added
	// after the informer started (controller-runtime's builder adds its
	// handlers once the informer has synced) first receives, besides
	// OnAdd(obj, true) for every stored object,
	// OnDelete(cache.DeletedFinalStateUnknown{Key, Obj}) for every object
	// deleted since the informer started, Obj being the last state the
	// informer had of it: after a restart, the deletes made while the
	// process was down reach it as they reach handlers added before Run.
	// The deletes come before the adds. Once the retention has passed,
	// handlers added later receive the stored objects only, as in
	// client-go. Default DefaultTombstoneRetention (10 minutes); a
	// negative value keeps none.
	TombstoneRetention time.Duration

	// MaxTombstones bounds the deletes kept for handlers added late that
	// are applied after the informer synced (live deletes, which the
	// handlers present then heard of); past it, the newer ones are not
	// kept, and that is logged. The deletes applied before the informer
	// synced (those made while the process was down) are always kept:
	// there are at most as many as the store held and the catch-up
	// brought. Default DefaultMaxTombstones (10,000).
	MaxTombstones int

	// Tombstones, if set, persists the deletes kept for handlers added late
	// (see TombstoneRetention), so that they survive a crash: each is
	// committed to it before the delete itself is committed to the
	// informer's store, and a process that dies after that commit, before
	// a handler added late heard of the delete, hands it to the handlers of
	// its next run (to every one of them, before their initial adds). It
	// must be a store of its own, in the informer's database, with the
	// informer's codec and key function and no indexes, owned by the
	// caller like the informer's store. It is emptied when the retention
	// ends, and when Run returns (its context ended) after the informer
	// synced with every handler told of everything: that run's handlers
	// heard of every delete. A crash keeps it; so does a stop with no
	// handler, which is a crash for the handlers the next run adds. A Factory and an InformerConstructor open one per informer,
	// named after the informer's store with "/deleted". Default nil: the
	// deletes are kept in memory only.
	Tombstones store.Store

	// Transform, if set, runs on every object before it is stored and
	// handed to handlers, like cache.SharedInformer.SetTransform (which
	// overrides it). The resourceVersion of each event is read before it
	// runs, so a transform that strips metadata cannot break resumption.
	// Objects replayed from the store at start were transformed when they
	// were stored and are not transformed again: a build whose transform
	// keeps or drops other fields serves the stored objects as the old
	// transform left them until they change. Name the transform's version
	// in the store's Scope (store.Options.Scope; FactoryOptions.Store.Scope
	// for a Factory or an InformerConstructor), so that a change relists.
	// Default nil.
	Transform cache.TransformFunc

	// WatchErrorHandler, if set, is called whenever the list or watch fails,
	// before the reflector backs off and retries; see SetWatchErrorHandler.
	// Default nil: the error is logged.
	WatchErrorHandler cache.WatchErrorHandlerWithContext

	// KeyFunc computes object keys in the queue; it must agree with the
	// store's key function. Default cache.DeletionHandlingMetaNamespaceKeyFunc.
	KeyFunc cache.KeyFunc

	// Clock drives resync and commit retries. Default the real clock.
	Clock clock.WithTicker

	// Logger is used when the context given to Run carries none. Default
	// klog.Background(). The informer logs at V(2) and above, except for
	// failures (failed commits, incomparable resourceVersions).
	Logger *klog.Logger

	// Reflector holds the list/watch settings passed to the reflector
	// (Name, PageSize, WatchList, watch timeouts, Backoff, ExpectedGVK).
	// The informer sets ResumeFrom (from the store), WatchErrorHandler (from
	// WatchErrorHandler or SetWatchErrorHandler), and, when unset,
	// ExpectedType (the example object) and Clock (Clock).
	Reflector reflector.Options
}

// QueueKind names a queue for Options.Queue.
type QueueKind int

const (
	// InOrderQueue, the default, is deltafifo.FIFO: events are applied,
	// and handed to handlers, in the order they arrived, a relist in one
	// commit with its resourceVersion; the persisted resume point describes
	// the store exactly.
	InOrderQueue QueueKind = iota

	// DeltaFIFOQueue is deltafifo.DeltaFIFO, client-go's queue before
	// InOrderInformers: the deltas of a key accumulate until the key is
	// popped, and reach its handlers together, keys in the order of their
	// first delta since their last pop. Pick it for handlers that rely on
	// that per-key grouping (a burst of changes of one object handled
	// back to back, as client-go's DeltaFIFO informers did). Its costs:
	//
	//   - The resume point is a watermark: the newest event such that it
	//     and every event before it are applied (deltafifo.Batch). A key
	//     popped ahead of it is stored in a newer state than the resume
	//     point describes, so after a crash the resumed watch replays that
	//     key's events since the watermark: its handlers may see it go back
	//     to an older state, then forward again to the server's.
	//   - A relist is handed out key by key. The informer gathers its keys
	//     and commits them in one commit with the list resourceVersion once
	//     the last one is out (DESIGN invariant 2), so handlers hear of a
	//     relist only once it is all popped, as with InOrderQueue.
	//   - MaxQueued does not apply: the queue never holds the reflector up.
	DeltaFIFOQueue
)

func (k QueueKind) String() string {
	switch k {
	case InOrderQueue:
		return "InOrderQueue"
	case DeltaFIFOQueue:
		return "DeltaFIFOQueue"
	}
	return fmt.Sprintf("QueueKind(%d)", int(k))
}

// NoBatchDelay, as Options.MaxBatchDelay, commits every popped batch on its
// own.
const NoBatchDelay time.Duration = -1

func (o Options) withDefaults() (Options, error) {
	if o.ResyncPeriod < 0 {
		return o, fmt.Errorf("informer: options: ResyncPeriod %v is negative", o.ResyncPeriod)
	}
	if o.Queue != InOrderQueue && o.Queue != DeltaFIFOQueue {
		return o, fmt.Errorf("informer: options: unknown Queue %v", o.Queue)
	}
	if o.MaxBatchSize < 0 {
		return o, fmt.Errorf("informer: options: MaxBatchSize %d is negative", o.MaxBatchSize)
	}
	if o.MaxBatchSize == 0 {
		o.MaxBatchSize = DefaultMaxBatchSize
	}
	if o.MaxTombstones < 0 {
		return o, fmt.Errorf("informer: options: MaxTombstones %d is negative", o.MaxTombstones)
	}
	if o.MaxTombstones == 0 {
		o.MaxTombstones = DefaultMaxTombstones
	}
	if o.TombstoneRetention == 0 {
		o.TombstoneRetention = DefaultTombstoneRetention
	}
	if o.MaxQueued == 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	switch {
	case o.MaxBatchDelay == 0:
		o.MaxBatchDelay = DefaultMaxBatchDelay
	case o.MaxBatchDelay < 0:
		o.MaxBatchDelay = 0
	}
	if o.KeyFunc == nil {
		o.KeyFunc = cache.DeletionHandlingMetaNamespaceKeyFunc
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		l := klog.Background()
		o.Logger = &l
	}
	return o, nil
}

// queue is what both queues of package deltafifo implement.
type queue interface {
	deltafifo.Queue
	Len() int
}

// newQueue returns the queue Options.Queue selects, fed by the reflector
// and popped by popLoop.
func (inf *Informer) newQueue() queue {
	o := deltafifo.Options{
		KeyFunction:           inf.opts.KeyFunc,
		KnownObjects:          inf.view,
		EmitDeltaTypeReplaced: true,
		Transformer:           inf.transform,
		// A single pop cannot be split across commits.
		MaxBatch:  inf.storeLimit(),
		MaxQueued: inf.opts.MaxQueued, // negative: no bound
	}
	if inf.opts.Queue == DeltaFIFOQueue {
		// One key per pop; MaxBatch and MaxQueued do not apply.
		return deltafifo.NewDeltaFIFO(&o)
	}
	return deltafifo.New(&o)
}
