package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/test/apiserver"
)

// TestStateCatchUpMultiNamespaceCache: a controller-runtime cache of two
// namespaces on an InformerConstructor with StateCatchUp, in a live
// cluster (a lease renewed every second, and a write outside the watched
// namespaces after the last change), asked for its ConfigMap informer
// after it started, as a controller's watch asks (controller-runtime then
// makes and waits for each namespace's informer in turn). Every restart
// syncs both informers by the listed state, with catch-up watches so long
// that their bookmark would come only after the test's wait: each
// informer then holds exactly the server's objects of its namespace, the
// handler (added once synced, as controller-runtime adds its handlers) got
// the deletes made while down as tombstones and the server's objects, and
// nothing was relisted.
func TestStateCatchUpMultiNamespaceCache(t *testing.T) {
	t.Parallel()
	srv, nss, url := liveNamespaces(t, "state", 200)
	c := srv.Client()

	r := startStateCache(t, srv, url, nss)
	r.waitSynced(t)
	r.stop(t)

	for round := 1; round <= 2; round++ {
		changes := map[string][]ev{}
		for _, ns := range nss {
			changes[ns] = changeRound(t, c, ns, round)
		}
		// The newest revision is none of the watched objects'.
		createConfigMap(t, c, "state-elsewhere", fmt.Sprintf("other-%d", round), "other")
		server := serverStates(t, c, nss)

		r := startStateCache(t, srv, url, nss)
		r.waitSynced(t)
		for _, ns := range nss {
			inf := r.informer(t, ns)
			st := inf.Stats()
			if !st.SyncedByState || st.StateLists != 1 {
				t.Errorf("round %d: %s: SyncedByState %v, StateLists %d; want true, 1", round, ns, st.SyncedByState, st.StateLists)
			}
			if st.Reflector.Resumes != 1 || st.Reflector.Relists != (reflector.RelistStats{}) {
				t.Errorf("round %d: %s: %d resumes, relists %+v; want 1 resume, no relist", round, ns, st.Reflector.Resumes, st.Reflector.Relists)
			}
			if diff := cmp.Diff(server[ns], storeState(t, inf.GetStore())); diff != "" {
				t.Errorf("round %d: %s: store at sync (-server +store):\n%s", round, ns, diff)
			}
			checkLateHandler(t, round, ns, r.recs[ns], changes[ns], server[ns])
		}
		r.stop(t)
	}
}

// liveNamespaces starts an API server in a live cluster's conditions for a
// multi-namespace cache: namespaces <prefix>-a and <prefix>-b of n
// ConfigMaps each, a lease renewed every second in <prefix>-lease, and
// <prefix>-elsewhere for writes outside the watched namespaces. It returns
// the server, the two namespaces and the URL of a new bolt database.
func liveNamespaces(t *testing.T, prefix string, n int) (*apiserver.Server, []string, string) {
	t.Helper()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	nss := []string{prefix + "-a", prefix + "-b"}
	for _, ns := range append([]string{prefix + "-lease", prefix + "-elsewhere"}, nss...) {
		createNamespace(t, c, ns)
	}
	for _, ns := range nss {
		createConfigMaps(t, c, ns, n)
	}
	srv.RenewLease(t, prefix+"-lease")
	return srv, nss, "bolt://" + t.TempDir() + "/cache.db"
}

// stateCache is a controller-runtime cache started by startCRCache.
type stateCache struct {
	ctor   *informer.InformerConstructor
	recs   map[string]*recorder
	cancel context.CancelFunc
	done   chan error
	reg    cache.ResourceEventHandlerRegistration

	mu   sync.Mutex
	made map[string]cache.SharedIndexInformer // by store name
}

// startStateCache starts a cache of namespaces nss whose informers an
// InformerConstructor with StateCatchUp makes on the database at url,
// waits for it to start, and asks it for the ConfigMap informer, adding a
// handler recording per namespace.
func startStateCache(t *testing.T, srv *apiserver.Server, url string, nss []string) *stateCache {
	t.Helper()
	return startCRCache(t, srv, url, nss, &informer.ConstructorOptions{
		Cluster:      "e2e",
		StateCatchUp: true,
		Informer: informer.Options{Reflector: reflector.Options{
			// A bookmark would come only after the wait below: the
			// informers sync by the listed state or not at all.
			CatchUpWatchTimeout: 10 * time.Minute,
		}},
	}, nil)
}

// startCRCache starts a cache of namespaces nss whose informers an
// InformerConstructor with options copts makes on the database at url,
// waits for it to start, and asks it for the ConfigMap informer, adding a
// handler recording per namespace. transform, when set, gives each
// namespace's Config a transform of its own.
func startCRCache(t *testing.T, srv *apiserver.Server, url string, nss []string, copts *informer.ConstructorOptions, transform func(ns string) cache.TransformFunc) *stateCache {
	t.Helper()
	crSetLoggerOnce.Do(func() { ctrl.SetLogger(klog.Background()) })
	ctor, err := informer.NewInformerConstructor(t.Context(), url, srv.Config(), copts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	r := &stateCache{ctor: ctor, recs: map[string]*recorder{}, made: map[string]cache.SharedIndexInformer{}, done: make(chan error, 1)}
	opts := crcache.Options{DefaultNamespaces: map[string]crcache.Config{}}
	for _, ns := range nss {
		var cfg crcache.Config
		if transform != nil {
			cfg.Transform = transform(ns)
		}
		opts.DefaultNamespaces[ns] = cfg
		r.recs[ns] = newRecorder()
	}
	opts.NewInformer = func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, idx cache.Indexers) cache.SharedIndexInformer {
		inf := ctor.NewInformer(lw, obj, resync, idx)
		if i, ok := informer.Of(inf); ok {
			r.mu.Lock()
			r.made[i.Store().Info().Name] = inf
			r.mu.Unlock()
		}
		return inf
	}
	cc, err := crcache.New(ctor.Config(), opts)
	if err != nil {
		_ = ctor.Close()
		t.Fatalf("crcache.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	r.cancel = cancel
	go func() { r.done <- cc.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if !cc.WaitForCacheSync(wctx) {
		t.Fatalf("cache did not start")
	}
	// After the start, as a controller's watch asks: each namespace's
	// informer is made and waited for in turn.
	inf, err := cc.GetInformer(wctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatalf("GetInformer(ConfigMap): %v", err)
	}
	if r.reg, err = inf.AddEventHandler(nsSplitter{recs: r.recs, other: newRecorder()}); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	return r
}

func (r *stateCache) waitSynced(t *testing.T) {
	t.Helper()
	select {
	case <-r.reg.HasSyncedChecker().Done():
	case <-time.After(time.Minute):
		t.Fatalf("handler did not sync within a minute")
	}
}

func (r *stateCache) informer(t *testing.T, ns string) *informer.Informer {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	// Resolved now: an informer started ahead may have been replaced
	// since it was made (see ConstructorOptions.ResumeOnDemand).
	inf, ok := informer.Of(r.made[crStoreName(ns)])
	if !ok {
		t.Fatalf("no informerdb informer made for %s", ns)
	}
	return inf
}

// stop stops the cache and closes the constructor, once.
func (r *stateCache) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Errorf("cache Start: %v", err)
	}
	if err := r.ctor.Close(); err != nil {
		t.Errorf("constructor Close: %v", err)
	}
}
