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
	// logs. Default Reflector.Name if set, else the store's name.
	Name string

	// Metrics, if set, exports the informer's metrics (see NewMetrics);
	// informers sharing one Metrics need distinct names. Default nil.
	Metrics *Metrics

	// ResyncPeriod is the resync period of handlers added with
	// AddEventHandler, and the informer's resync check period, as in
	// cache.NewSharedIndexInformer. A resync delivers OnUpdate(obj, obj) for
	// every stored object to the handlers whose period is due; it writes
	// nothing. Default 0: no resync.
	ResyncPeriod time.Duration

	// MaxBatchSize bounds the operations (objects written or deleted, one
	// per key) of one store commit. Default DefaultMaxBatchSize. A relist
	// is always committed whole, whatever its size (DESIGN invariant 2).
	// Commits are this large only when events arrive faster than the
	// store commits them; a larger group then costs the same fsyncs, so
	// the bound sets a durable store's throughput under load (bolt gains
	// most, see BENCHMARKS.md). A group holds at most GroupDeltasPerOp
	// times MaxBatchSize deltas, all notified after its one commit. A store
	// that implements store.BatchLimiter bounds commits further (badger:
	// one transaction).
	MaxBatchSize int

	// MaxBatchDelay bounds how long a popped batch waits for further
	// batches to share its commit (group commit) while no commit is
	// running; while one runs, the next group keeps growing (within
	// MaxBatchSize) until it is over. Default DefaultMaxBatchDelay;
	// NoBatchDelay (or any negative value) commits every pop on its own,
	// the right choice for the memory backend.
	MaxBatchDelay time.Duration

	// MaxQueued bounds the watch events waiting in the informer's queue
	// for their commit: when the store falls behind (commits failing on a
	// full disk), the reflector waits for room instead of the queue
	// growing until the process runs out of memory. Nothing is lost: the
	// watch resumes where it stopped reading, or relists. Relists, resyncs
	// and bookmarks never wait. Default DefaultMaxQueued; negative: no
	// bound.
	MaxQueued int

	// Queue selects the queue between the reflector and the store, as
	// client-go's InOrderInformers feature gate chose between its RealFIFO
	// and its DeltaFIFO. Default InOrderQueue.
	Queue QueueKind

	// ServeStale, when true and the store holds a resume point, makes the
	// informer (and its handlers, once they have seen the persisted
	// objects) report HasSynced right after the persisted objects were
	// replayed, before it has caught up with the API server. Default false
	// (DESIGN invariant 3).
	ServeStale bool

	// StateCatchUp, when set, shortens a resume's catch-up, which otherwise
	// waits for a bookmark (one to two seconds after the watch starts):
	// once the sync target is known, the informer lists the server's state
	// through it (MetadataStateLister: every object's key and
	// resourceVersion at or past the target) and syncs as soon as its
	// committed store holds that state or a newer one; deletes still come
	// from the watch. If the list fails or is older than the target, the
	// catch-up is the bookmark's. Its cost: one streaming list of every
	// object's metadata (BENCHMARKS.md), and reading every stored object
	// once under the commits' lock. A lister of another scope than the
	// informer's costs that and never syncs it early. A lister is per
	// informer: a template of several informers' options
	// (FactoryOptions.Informer, ConstructorOptions.Informer) leaves it nil.
	// Default nil.
	StateCatchUp StateLister

	// TombstoneRetention is how long after the informer synced a handler
	// added late still receives, before its initial adds, the deletes it
	// missed: OnDelete(cache.DeletedFinalStateUnknown{Key, Obj}) for every
	// object deleted since the informer started, Obj being its last state,
	// the deletes made while the process was down included (see
	// AddEventHandlerWithOptions). Default DefaultTombstoneRetention;
	// negative: none.
	TombstoneRetention time.Duration

	// MaxTombstones bounds the deletes kept for handlers added late that
	// are applied after the informer synced; past it, newer ones are not
	// kept, and that is logged. The deletes applied before the sync are
	// always kept. Default DefaultMaxTombstones.
	MaxTombstones int

	// Tombstones, if set, persists the deletes kept for handlers added late,
	// so that they survive a crash: each is committed to it before the
	// delete itself, and a process that dies before a handler added late
	// heard of it hands it to every handler of its next run. It must be a
	// store of its own in the informer's database, with the informer's
	// codec and key function and no indexes, owned by the caller. It is
	// emptied when the retention ends, and when Run returns after the
	// informer synced with every handler told of everything. A Factory
	// and an InformerConstructor open one per informer (see
	// TombstoneStoreSuffix). Default nil: kept in memory only.
	Tombstones store.Store

	// Transform, if set, runs on every object before it is stored and
	// handed to handlers, like cache.SharedInformer.SetTransform (which
	// overrides it); each event's resourceVersion is read before it runs.
	// Objects replayed from the store were transformed when stored and are
	// not transformed again: name the transform's version in the store's
	// Scope (store.Options.Scope), so that a change relists. Default nil.
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
	// klog.Background().
	Logger *klog.Logger

	// Reflector holds the list/watch settings passed to the reflector.
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
	// popped and reach its handlers together, keys in the order of their
	// first delta since their last pop. Its costs:
	//
	//   - The resume point is a watermark: the newest event such that it
	//     and every event before it are applied. A key popped ahead of it
	//     is stored newer than the resume point describes, so after a crash
	//     its handlers may see it go back to an older state, then forward.
	//   - A relist is handed out key by key; it is committed whole once
	//     its last key is out (DESIGN invariant 2), and notified then.
	//   - MaxQueued does not apply.
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
