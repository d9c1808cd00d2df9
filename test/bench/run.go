package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"

	// The backends a scenario can name.
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

// syncTimeout bounds the wait for an informer to sync. It turns a hang into
// an error; nothing is judged by how long a sync took.
const syncTimeout = 10 * time.Minute

// Backends lists the names StoreURL accepts, persistent ones only: a
// restart needs a database that outlives the store.
var Backends = []string{"bolt", "badger", "memdb-file", "memory-file"}

// StoreURL returns the database URL of a named backend under dir: bolt,
// badger, memdb-file or memory-file (the in-memory backends with their
// snapshot file, saved on Close). A name may carry URL parameters, as in
// "bolt?cache=1000".
func StoreURL(backend, dir string) (string, error) {
	name, params, _ := cutAny(backend, "?")
	if params != "" {
		params = "?" + params
	}
	switch name {
	case "bolt":
		return "bolt://" + filepath.Join(dir, "cache.db") + params, nil
	case "badger":
		return "badger://" + filepath.Join(dir, "badger") + params, nil
	case "memdb-file":
		return "memdb://" + filepath.Join(dir, "cache.snap") + params, nil
	case "memory-file":
		return "memory://" + filepath.Join(dir, "cache.snap") + params, nil
	}
	return "", fmt.Errorf("bench: backend %q: unknown (want one of %v)", backend, Backends)
}

func cutAny(s, sep string) (before, after string, found bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// Phase is one informer start measured from its beginning (for informerdb,
// from opening the store) until it and its handler have synced.
type Phase struct {
	// Name is "client-go cold start", "informerdb cold start" or
	// "informerdb restart".
	Name string
	// Synced is the time to synced: informer and handler.
	Synced time.Duration
	// Cost is what the API server sent for it, until the informer stopped.
	Cost Cost
	// Events are the notifications the handler had received at sync.
	Events Events
	// Objects is the number of objects in the informer's cache at sync.
	Objects int
	// Steps is where an informerdb start spent its time; zero for
	// client-go.
	Steps Steps
	// SyncedByState says that the informers synced by the server's
	// listed state (informer.Options.StateCatchUp), not by a bookmark.
	SyncedByState bool
}

// Steps splits an informerdb start, from opening the store to synced.
type Steps struct {
	// Open is store.Open: reading (and, in the default mode, decoding)
	// the persisted objects.
	Open time.Duration
	// Start is from the open store to the reflector's start: the
	// informer's start and the replay of the persisted objects to the
	// handler.
	Start time.Duration
	// Probe is the freshness probe of a resume (a LIST of one object), or
	// the first list of a cold start.
	Probe time.Duration
	// CatchUp is from the probe until the reflector reached the sync
	// target: waiting for the watch's events and the bookmark that says
	// the informer has everything up to it.
	CatchUp time.Duration
	// Apply is from there until the informer and the handler synced.
	Apply time.Duration
}

// Events counts handler notifications.
type Events struct {
	// Initial counts OnAdd(obj, true): the initial list of a cold start, or
	// the persisted objects replayed by a restart.
	Initial int64
	// Added, Updated and Deleted count the other notifications: changes.
	Added, Updated, Deleted int64
}

// controller is the example controller: handlers feed a workqueue, and
// workers reconcile each key by reading the lister, as controllers do.
type controller struct {
	queue  workqueue.TypedRateLimitingInterface[string]
	lister listersv1.ConfigMapLister
	wg     sync.WaitGroup

	initial, added, updated, deleted, reconciled atomic.Int64
}

func newController(idx cache.Indexer) *controller {
	return &controller{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "demo"}),
		lister: listersv1.NewConfigMapLister(idx),
	}
}

func (c *controller) enqueue(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *controller) OnAdd(obj interface{}, initial bool) {
	if initial {
		c.initial.Add(1)
	} else {
		c.added.Add(1)
	}
	c.enqueue(obj)
}

func (c *controller) OnUpdate(_, obj interface{}) { c.updated.Add(1); c.enqueue(obj) }
func (c *controller) OnDelete(obj interface{})    { c.deleted.Add(1); c.enqueue(obj) }

func (c *controller) events() Events {
	return Events{Initial: c.initial.Load(), Added: c.added.Load(), Updated: c.updated.Load(), Deleted: c.deleted.Load()}
}

// start runs workers until stop.
func (c *controller) start(workers int) {
	for range workers {
		c.wg.Go(func() {
			for {
				key, quit := c.queue.Get()
				if quit {
					return
				}
				c.reconcile(key)
				c.queue.Done(key)
			}
		})
	}
}

func (c *controller) reconcile(key string) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		c.queue.Forget(key)
		return
	}
	// A real controller would act on the object; reading it through the
	// lister is the part the cache serves.
	if _, err := c.lister.ConfigMaps(ns).Get(name); err != nil && !apierrors.IsNotFound(err) {
		c.queue.AddRateLimited(key)
		return
	}
	c.queue.Forget(key)
	c.reconciled.Add(1)
}

func (c *controller) stop() {
	c.queue.ShutDown()
	c.wg.Wait()
}

// storeOptions are the options of the ConfigMap store of a scenario.
func storeOptions(scope string) (*store.Options, error) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		return nil, fmt.Errorf("bench: codec: %w", err)
	}
	return &store.Options{
		Name:     "v1/configmaps",
		Codec:    codec,
		Scope:    scope,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}, nil
}

// scope is the store scope of ConfigMaps in namespace ns ("" for all) of cl.
func scope(cl *Cluster, ns string) string {
	return fmt.Sprintf("cluster=%s;resource=v1/configmaps;namespace=%s", cl.Host(), ns)
}

func listWatch(cl *Cluster, ns string) cache.ListerWatcher {
	return cache.NewFilteredListWatchFromClient(cl.Client().CoreV1().RESTClient(), "configmaps", ns, func(*metav1.ListOptions) {})
}

// RunInformerDB starts an informerdb informer on the store at url over the
// ConfigMaps of namespace ns ("" for all), waits until it and the example
// controller's handler have synced, stops it and closes the store.
//
// With stateCatchUp the informer has informer.Options.StateCatchUp: a
// MetadataStateLister of its ConfigMaps.
func RunInformerDB(ctx context.Context, cl *Cluster, name, url, ns string, stateCatchUp bool) (Phase, error) {
	opts, err := storeOptions(scope(cl, ns))
	if err != nil {
		return Phase{}, err
	}
	before, err := cl.snapshot(ctx)
	if err != nil {
		return Phase{}, err
	}
	began := time.Now()
	s, err := store.Open(ctx, url, opts)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: %s: %w", name, err)
	}
	iopts := informer.Options{
		// The defaults, as users have them: among them the shortest
		// catch-up watch, whose pre-deadline bookmark tells a resumed
		// informer that it has caught up (reflector.Options.CatchUpWatchTimeout).
		Reflector: reflector.Options{Name: "demo-configmaps"},
	}
	if stateCatchUp {
		mc, err := metadata.NewForConfig(cl.config)
		if err != nil {
			_ = s.Close()
			return Phase{}, fmt.Errorf("bench: %s: metadata client: %w", name, err)
		}
		iopts.StateCatchUp = informer.MetadataStateLister(mc, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, nil)
	}
	inf, err := informer.New(cache.ToListerWatcherWithContext(listWatch(cl, ns)), &corev1.ConfigMap{}, s, &iopts)
	if err != nil {
		_ = s.Close()
		return Phase{}, fmt.Errorf("bench: %s: %w", name, err)
	}
	opened := time.Now()
	p, err := runPhase(ctx, cl, name, inf, began, before)
	ist := inf.Stats()
	p.SyncedByState = ist.SyncedByState
	if st := ist.Reflector; err == nil && (!st.CaughtUpAt.IsZero() || ist.SyncedByState) {
		caughtUp := st.CaughtUpAt
		if ist.SyncedByState {
			// Synced by the state: the catch-up ran until the informer
			// synced, with no bookmark (nor apply step) of its own.
			caughtUp = began.Add(p.Synced)
		}
		p.Steps = Steps{
			Open:    opened.Sub(began),
			Start:   st.StartedAt.Sub(opened),
			Probe:   st.TargetAt.Sub(st.StartedAt),
			CatchUp: caughtUp.Sub(st.TargetAt),
			Apply:   began.Add(p.Synced).Sub(caughtUp),
		}
	}
	if cerr := s.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("bench: %s: close store: %w", name, cerr)
	}
	return p, err
}

// RunClientGo is RunInformerDB for client-go's SharedIndexInformer: every
// start of it is a cold start.
func RunClientGo(ctx context.Context, cl *Cluster, name, ns string) (Phase, error) {
	before, err := cl.snapshot(ctx)
	if err != nil {
		return Phase{}, err
	}
	began := time.Now()
	inf := cache.NewSharedIndexInformer(listWatch(cl, ns), &corev1.ConfigMap{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return runPhase(ctx, cl, name, inf, began, before)
}

// runPhase runs inf with the example controller until synced, then stops
// both and measures what the API server sent.
func runPhase(ctx context.Context, cl *Cluster, name string, inf cache.SharedIndexInformer, began time.Time, before snapshot) (Phase, error) {
	ctl := newController(inf.GetIndexer())
	reg, err := inf.AddEventHandler(ctl)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: %s: add handler: %w", name, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(runCtx)
	}()
	ctl.start(2)
	waitCtx, waitCancel := context.WithTimeout(ctx, syncTimeout)
	synced := cache.WaitFor(waitCtx, "", inf.HasSyncedChecker(), reg.HasSyncedChecker())
	waitCancel()
	p := Phase{Name: name, Synced: time.Since(began), Events: ctl.events(), Objects: len(inf.GetStore().ListKeys())}
	cancel()
	<-done
	ctl.stop()
	if !synced {
		if err := ctx.Err(); err != nil {
			return p, fmt.Errorf("bench: %s: %w", name, err)
		}
		return p, fmt.Errorf("bench: %s: %w", name, errNotSynced)
	}
	after, err := cl.snapshot(ctx)
	if err != nil {
		return p, err
	}
	p.Cost = cl.cost(before, after)
	return p, nil
}

var errNotSynced = errors.New("informer did not sync within " + syncTimeout.String())
