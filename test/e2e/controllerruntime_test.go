package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/test/apiserver"
)

// crNamespaces are the namespaces of the multi-namespace cache: its
// per-namespace informers are created in map iteration order, different at
// each start.
var crNamespaces = []string{"cr-a", "cr-b"}

// crSetLoggerOnce sends controller-runtime's global logger, which the
// informers it runs log to, to klog.
var crSetLoggerOnce sync.Once

// crStoreName is the store InformerConstructor names after a ConfigMap list
// of one namespace.
func crStoreName(ns string) string { return "core/v1/ConfigMap@ns=" + ns }

// TestControllerRuntimeManagerRestart runs a real controller-runtime manager
// whose multi-namespace cache builds its informers with
// InformerConstructor, stops it, changes ConfigMaps in both namespaces, and
// restarts it on the same bolt database, several times: the cache creates
// the namespaces' informers in map iteration order, so each order is likely
// to be seen (the test logs which it was). Each restart must resume
// both namespaces from their own stores: the handler gets the persisted
// objects of its namespace and then exactly what changed while down,
// deletes as plain OnDelete; the API server sees only the two limit=1
// probes; the cache and each store hold exactly their namespace's objects.
func TestControllerRuntimeManagerRestart(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	const n = 100 // per namespace
	for _, ns := range crNamespaces {
		createNamespace(t, c, ns)
		createConfigMaps(t, c, ns, n)
	}
	url := "bolt://" + t.TempDir() + "/cache.db"

	// Cold start.
	persisted := serverStates(t, c, crNamespaces)
	before := srv.Metrics(t)
	r := startCRManager(t, srv, url, crOptions{namespaces: crNamespaces})
	r.checkInformers(t, "cold start")
	r.waitSynced(t)
	for _, ns := range crNamespaces {
		got := r.recs[ns].waitN(t, len(persisted[ns]))
		sortByName(got)
		if diff := cmp.Diff(replayOf(persisted[ns]), got); diff != "" {
			t.Errorf("cold start: notifications in %s (-want +got):\n%s", ns, diff)
		}
	}
	coldCost := srv.Metrics(t).Sub(before)
	t.Logf("cold start: lists=%d watch_events=%d", coldCost.Lists["configmaps"], coldCost.WatchEvents["configmaps"])
	checkCRCache(t, r, persisted)
	r.checkNoOtherEvents(t)
	r.stop(t)
	checkCRStores(t, url, persisted)

	for round := 1; round <= 4; round++ {
		t.Logf("round %d", round)
		// The namespace changed last alternates: the other one's informer
		// then resumes with a sync target past all its own events.
		order := slices.Clone(crNamespaces)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		changes := map[string][]ev{}
		for _, ns := range order {
			changes[ns] = changeRound(t, c, ns, round)
		}
		server := serverStates(t, c, crNamespaces) // nothing changes from here on

		before := srv.Metrics(t)
		r := startCRManager(t, srv, url, crOptions{namespaces: crNamespaces})
		r.checkInformers(t, fmt.Sprintf("round %d", round))
		started := time.Now()
		r.waitSynced(t)
		syncedAfter := time.Since(started) // logged, not asserted
		got := map[string][]ev{}
		wantChanges := 0
		for _, ns := range crNamespaces {
			got[ns] = r.recs[ns].waitN(t, len(persisted[ns])+len(changes[ns]))
			wantChanges += len(changes[ns])
		}
		cost := srv.Metrics(t).Sub(before)
		r.checkResumed(t, round)

		for _, ns := range crNamespaces {
			p := len(persisted[ns])
			replay := got[ns][:p]
			sortByName(replay)
			if diff := cmp.Diff(replayOf(persisted[ns]), replay); diff != "" {
				t.Errorf("round %d: replay of the persisted objects of %s (-want +got):\n%s", round, ns, diff)
			}
			// The deletes made while down arrive as plain OnDelete, in
			// order with the other changes.
			if diff := cmp.Diff(changes[ns], blankDeleteRVs(got[ns][p:])); diff != "" {
				t.Errorf("round %d: changes made in %s while down, as delivered after the replay (-want +got):\n%s", round, ns, diff)
			}
			if extra := r.recs[ns].events()[p+len(changes[ns]):]; len(extra) != 0 {
				t.Errorf("round %d: %d notifications in %s beyond the changes (a relist notifies every object again), the first: %+v",
					round, len(extra), ns, extra[:min(3, len(extra))])
			}
		}
		r.checkNoOtherEvents(t)
		checkCRCache(t, r, server)

		// Each of the two namespace informers resumes with one limit=1
		// consistency probe, and one more limit=1 LIST after each catch-up
		// watch that did not reach its sync target (the namespace changed
		// last before the stop holds the newest ConfigMap write, which the
		// other namespace's watch filters out; see reflector's "Catching up
		// after a resume"). The constructor's scope probe is answered by
		// its transport and never sent. A full list would be a LIST the
		// reflectors do not count as such (they relisted: checkResumed), or
		// (watch-list) as many watch events as objects.
		if got, want := cost.Lists["configmaps"], r.reflectorLists(); got != want {
			t.Errorf("round %d: restart made %d LIST requests for configmaps, the reflectors %d (probes and catch-up LISTs); metrics delta %+v", round, got, want, cost)
		}
		if got, limit := cost.WatchEvents["configmaps"], int64(wantChanges+20*len(crNamespaces)); got > limit {
			t.Errorf("round %d: restart received %d watch events for configmaps, want at most %d (the %d changes, and bookmarks): a relist?", round, got, limit, wantChanges)
		}
		t.Logf("round %d: synced %v after start; changes=%d; API server: lists=%d watch_events=%d",
			round, syncedAfter.Round(time.Millisecond), wantChanges, cost.Lists["configmaps"], cost.WatchEvents["configmaps"])

		r.stop(t)
		checkCRStores(t, url, server)
		persisted = server
	}
}

// crManager is a controller-runtime manager started by startCRManager.
type crManager struct {
	c    *informer.InformerConstructor
	mgr  manager.Manager
	inf  crcache.Informer
	reg  cache.ResourceEventHandlerRegistration
	recs map[string]*recorder // by namespace
	// other records notifications for objects of no namespace in recs.
	other *recorder

	mu        sync.Mutex                    // guards made, informers and reconciled
	made      []string                      // per NewInformer call, in order: the store's name, or <client-go informer>
	informers map[string]*informer.Informer // the informerdb informers made, by store name
	// reconciled holds the names the ConfigMap controller reconciled
	// (crOptions.reconcile).
	reconciled map[string]bool

	cancel   context.CancelFunc
	done     chan struct{} // closed when mgr.Start returned
	err      error         // mgr.Start's error, set before done is closed
	stopOnce sync.Once
}

// crOptions configures startCRManager.
type crOptions struct {
	// namespaces are the cache's DefaultNamespaces; each gets a recording
	// handler.
	namespaces []string
	// readCluster leaves ConstructorOptions.Cluster unset: the
	// constructor reads the cluster's identity (the kube-system
	// namespace's UID), as users' constructors do.
	readCluster bool
	// reconcile adds a controller of ConfigMaps built with the builder,
	// as users build theirs, recording the names it reconciles.
	reconcile bool
}

// startCRManager starts a manager whose cache makes its informers with an
// InformerConstructor on the database at url, and adds a handler to its
// ConfigMap informer that records per namespace. Cleanup stops the manager
// if the test has not.
func startCRManager(t *testing.T, srv *apiserver.Server, url string, o crOptions) *crManager {
	t.Helper()
	// controller-runtime hands its informers a context carrying its
	// global logger, which discards everything until SetLogger is called.
	crSetLoggerOnce.Do(func() { ctrl.SetLogger(klog.Background()) })
	logger := testr.New(t)
	copts := &informer.ConstructorOptions{
		Cluster: "e2e",
		Informer: informer.Options{
			// Used where the context carries no logger: controller-runtime
			// runs its informers with its own (see crSetLoggerOnce).
			Logger: &logger,
			Reflector: reflector.Options{
				// As startInformerOn: the shortest catch-up watch, whose
				// pre-deadline bookmark comes about 1-2s in.
				CatchUpWatchTimeout: 3 * time.Second,
				Backoff:             reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
			},
		},
	}
	if o.readCluster {
		copts.Cluster = ""
	}
	c, err := informer.NewInformerConstructor(t.Context(), url, srv.Config(), copts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	r := &crManager{c: c, recs: map[string]*recorder{}, other: newRecorder(), informers: map[string]*informer.Informer{}, reconciled: map[string]bool{}, done: make(chan struct{})}
	cacheOpts := crcache.Options{NewInformer: func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		inf := c.NewInformer(lw, obj, resync, indexers)
		name := "<client-go informer>"
		i, ok := informer.Of(inf)
		if ok {
			name = i.Store().Info().Name
		}
		r.mu.Lock()
		r.made = append(r.made, name)
		if ok {
			r.informers[name] = i
		}
		r.mu.Unlock()
		return inf
	}}
	cacheOpts.DefaultNamespaces = map[string]crcache.Config{}
	for _, ns := range o.namespaces {
		cacheOpts.DefaultNamespaces[ns] = crcache.Config{}
		r.recs[ns] = newRecorder()
	}
	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{
		Scheme: clientgoscheme.Scheme,
		Logger: logger,
		// Nothing listens: no metrics, health probes or pprof; no leader
		// election (the default).
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		PprofBindAddress:       "0",
		// Each test's manager has its own controller of ConfigMaps.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cacheOpts,
	})
	if err != nil {
		_ = c.Close()
		t.Fatalf("ctrl.NewManager: %v", err)
	}
	if err := mgr.Add(c); err != nil {
		_ = c.Close()
		t.Fatalf("mgr.Add(constructor): %v", err)
	}
	if o.reconcile {
		err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(
			reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
				r.mu.Lock()
				r.reconciled[req.Name] = true
				r.mu.Unlock()
				return reconcile.Result{}, nil
			}))
		if err != nil {
			_ = c.Close()
			t.Fatalf("NewControllerManagedBy: %v", err)
		}
	}
	inf, err := mgr.GetCache().GetInformer(t.Context(), &corev1.ConfigMap{})
	if err != nil {
		_ = c.Close()
		t.Fatalf("GetInformer(ConfigMap): %v", err)
	}
	r.mgr, r.inf = mgr, inf
	r.reg, err = inf.AddEventHandler(nsSplitter{recs: r.recs, other: r.other})
	if err != nil {
		_ = c.Close()
		t.Fatalf("AddEventHandler: %v", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.err = mgr.Start(ctx)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// waitSynced waits until the manager's cache and the recording handlers
// have synced.
func (r *crManager) waitSynced(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	go func() {
		// A manager that fails to start ends the wait.
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !r.mgr.GetCache().WaitForCacheSync(ctx) {
		select {
		case <-r.done:
			t.Fatalf("manager stopped before its cache synced: %v", r.err)
		default:
		}
		t.Fatalf("manager's cache did not sync within %v", waitLimit)
	}
	select {
	case <-r.reg.HasSyncedChecker().Done():
	case <-r.done:
		t.Fatalf("manager stopped before the handler synced: %v", r.err)
	case <-ctx.Done():
		t.Fatalf("handler (%s) did not sync within %v", r.reg.HasSyncedChecker().Name(), waitLimit)
	}
}

// stopped returns the manager's Start error if it returned, else "no".
func (r *crManager) stopped() string {
	select {
	case <-r.done:
		return fmt.Sprintf("yes, with %v", r.err)
	default:
		return "no"
	}
}

// waitReconciled waits until the ConfigMap controller reconciled every
// name (crOptions.reconcile).
func (r *crManager) waitReconciled(t *testing.T, names []string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return r.reconciled[n] })
		r.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reconciled within %v: %v (manager stopped: %v)", waitLimit, missing, r.stopped())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reconciledNames returns the names reconciled so far, sorted.
func (r *crManager) reconciledNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Keys(r.reconciled))
	slices.Sort(out)
	return out
}

// stats returns the reflector counters of the informerdb informer on the
// store named name.
func (r *crManager) stats(t *testing.T, name string) reflector.Stats {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	inf := r.informers[name]
	if inf == nil {
		t.Fatalf("the constructor made no persistent informer on %s", name)
	}
	return inf.Stats().Reflector
}

// stop stops the manager, waits until its Start returned (its informers
// have stopped) and closes the constructor's stores. It is idempotent.
func (r *crManager) stop(t *testing.T) {
	t.Helper()
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(waitLimit):
			t.Fatalf("manager did not stop within %v", waitLimit)
		}
		if r.err != nil {
			t.Errorf("manager Start: %v", r.err)
		}
		if err := r.c.Close(); err != nil {
			t.Errorf("InformerConstructor.Close: %v", err)
		}
	})
}

// informersMade returns what NewInformer made, in order (see crManager.made).
func (r *crManager) informersMade() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.made)
}

// checkInformers checks that the manager made one informer per namespace,
// each on the store of its namespace, and logs in which order.
func (r *crManager) checkInformers(t *testing.T, when string) {
	t.Helper()
	made := r.informersMade()
	t.Logf("%s: NewInformer made, in order: %v", when, made)
	var want []string
	for _, ns := range crNamespaces {
		want = append(want, crStoreName(ns))
	}
	got := slices.Sorted(slices.Values(made))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: informers made by NewInformer, by store (-want +got):\n%s", when, diff)
	}
}

// reflectorLists sums the LIST requests the namespace informers' reflectors
// made.
func (r *crManager) reflectorLists() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, ns := range crNamespaces {
		if inf := r.informers[crStoreName(ns)]; inf != nil {
			n += inf.Stats().Reflector.Lists
		}
	}
	return n
}

// checkResumed checks that each namespace's informer resumed and did not
// relist, and logs its reflector's counters.
func (r *crManager) checkResumed(t *testing.T, round int) {
	t.Helper()
	for _, ns := range crNamespaces {
		name := crStoreName(ns)
		r.mu.Lock()
		inf := r.informers[name]
		r.mu.Unlock()
		if inf == nil {
			t.Errorf("round %d: no informer on store %s", round, name)
			continue
		}
		st := inf.Stats().Reflector
		t.Logf("round %d: %s: reflector lists=%d watches=%d events=%d bookmarks=%d resumes=%d relists=%+v",
			round, name, st.Lists, st.Watches, st.Events, st.Bookmarks, st.Resumes, st.Relists)
		if st.Resumes != 1 || st.Relists != (reflector.RelistStats{}) {
			t.Errorf("round %d: informer of %s: %d resumes, relists %+v; want 1 resume and no relist", round, ns, st.Resumes, st.Relists)
		}
	}
}

// checkNoOtherEvents fails the test if the handler got a notification for
// an object outside the cache's namespaces.
func (r *crManager) checkNoOtherEvents(t *testing.T) {
	t.Helper()
	if evs := r.other.events(); len(evs) != 0 {
		t.Errorf("notifications for objects outside %v: %+v", crNamespaces, evs)
	}
}

// nsSplitter hands each notification to the recorder of its object's
// namespace, or to other.
type nsSplitter struct {
	recs  map[string]*recorder // read-only
	other *recorder
}

func (s nsSplitter) recorderOf(ns string) *recorder {
	if r, ok := s.recs[ns]; ok {
		return r
	}
	return s.other
}

func (s nsSplitter) OnAdd(obj interface{}, initial bool) {
	s.recorderOf(cmOf(obj).Namespace).OnAdd(obj, initial)
}

func (s nsSplitter) OnUpdate(oldObj, newObj interface{}) {
	s.recorderOf(cmOf(newObj).Namespace).OnUpdate(oldObj, newObj)
}

func (s nsSplitter) OnDelete(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		ns, _, _ := strings.Cut(tomb.Key, "/")
		s.recorderOf(ns).OnDelete(obj)
		return
	}
	s.recorderOf(cmOf(obj).Namespace).OnDelete(obj)
}

// serverStates lists the ConfigMaps of each namespace from the API server.
func serverStates(t *testing.T, c kubernetes.Interface, namespaces []string) map[string]state {
	t.Helper()
	out := map[string]state{}
	for _, ns := range namespaces {
		out[ns] = serverState(t, c, selection{namespace: ns})
	}
	return out
}

// checkCRCache checks that the manager's cache holds exactly want: per
// namespace, and across namespaces, where an object of one namespace also
// held by another namespace's informer would show twice.
func checkCRCache(t *testing.T, r *crManager, want map[string]state) {
	t.Helper()
	for ns, st := range want {
		checkCRCacheNamespace(t, r, ns, st)
	}
	all := &corev1.ConfigMapList{}
	if err := r.mgr.GetCache().List(t.Context(), all); err != nil {
		t.Fatalf("cache List over every namespace: %v", err)
	}
	got := map[string]state{}
	seen := map[string]int{}
	for _, cm := range all.Items {
		key := cm.Namespace + "/" + cm.Name
		seen[key]++
		if seen[key] == 2 {
			t.Errorf("cache List over every namespace returns %s more than once: held by another namespace's informer", key)
		}
		if got[cm.Namespace] == nil {
			got[cm.Namespace] = state{}
		}
		got[cm.Namespace][cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cache List over every namespace (-server +cache):\n%s", diff)
	}
}

// checkCRCacheNamespace checks that the manager's cache lists exactly want
// in ns.
func checkCRCacheNamespace(t *testing.T, r *crManager, ns string, want state) {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := r.mgr.GetCache().List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("cache List in %s: %v", ns, err)
	}
	got := state{}
	for _, cm := range list.Items {
		if cm.Namespace != ns {
			t.Errorf("cache List in %s returned %s/%s", ns, cm.Namespace, cm.Name)
			continue
		}
		got[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cache in %s (-server +cache):\n%s", ns, diff)
	}
}

// checkCRStores reads the database at url, closed by every process, without
// opening its stores (opening one with another scope would empty it): it
// must hold one store per namespace, each with exactly that namespace's
// objects as on the server, and a resume point.
func checkCRStores(t *testing.T, url string, want map[string]state) {
	t.Helper()
	infos, err := store.Stores(t.Context(), url)
	if err != nil {
		t.Fatalf("stores of %s: %v", url, err)
	}
	var names, wantNames []string
	for _, info := range infos {
		names = append(names, info.Name)
	}
	for ns := range want {
		wantNames = append(wantNames, crStoreName(ns), crStoreName(ns)+informer.TombstoneStoreSuffix)
	}
	// The constructor's own, which keeps the database open.
	wantNames = append(wantNames, informer.ConstructorStoreName)
	sort.Strings(names)
	sort.Strings(wantNames)
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("stores in the database (-want +got):\n%s", diff)
	}
	cd := codec(t)
	for ns, st := range want {
		name := crStoreName(ns)
		got := state{}
		info, err := store.Export(t.Context(), url, name, func(rec store.Record) error {
			obj, err := cd.Decode(rec.Data)
			if err != nil {
				return fmt.Errorf("decode %s: %w", rec.Key, err)
			}
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				return fmt.Errorf("record %s holds a %T", rec.Key, obj)
			}
			if cm.Namespace != ns || rec.Key != ns+"/"+cm.Name {
				t.Errorf("store %s holds %s (key %s), an object of another namespace", name, cm.Namespace+"/"+cm.Name, rec.Key)
				return nil
			}
			got[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
			return nil
		})
		if err != nil {
			t.Errorf("export store %s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(st, got); diff != "" {
			t.Errorf("store %s (-server +store):\n%s", name, diff)
		}
		if info.ResourceVersion == "" {
			t.Errorf("store %s has no resume point", name)
		}
		if !strings.Contains(info.Scope, "/namespaces/"+ns+"/configmaps") {
			t.Errorf("store %s has scope %q, want one of a list in namespace %s", name, info.Scope, ns)
		}
	}
}

// changeRound changes the ConfigMaps of ns while the manager is down: two
// updates, two deletes, a delete and re-create under the same name, and two
// creates, on the first names in order. It returns the notifications a
// resumed informer must deliver, in order, with the resourceVersions of
// deletions blank (the API server does not return them).
func changeRound(t *testing.T, c kubernetes.Interface, ns string, round int) []ev {
	t.Helper()
	var names []string
	for name := range serverState(t, c, selection{namespace: ns}) {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) < 5 {
		t.Fatalf("%s holds %d ConfigMaps, want at least 5", ns, len(names))
	}
	var want []ev
	for _, name := range names[0:2] {
		old, cur := updateConfigMap(t, c, ns, name, fmt.Sprintf("round-%d", round))
		want = append(want, ev{Op: "update", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion, OldUID: string(old.UID), OldRV: old.ResourceVersion})
	}
	for _, name := range names[2:4] {
		old := deleteConfigMap(t, c, ns, name)
		want = append(want, ev{Op: "delete", Name: old.Name, UID: string(old.UID)})
	}
	old := deleteConfigMap(t, c, ns, names[4])
	cur := createConfigMap(t, c, ns, names[4], "recreated")
	want = append(want,
		ev{Op: "delete", Name: old.Name, UID: string(old.UID)},
		ev{Op: "add", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion})
	for i := range 2 {
		cur := createConfigMap(t, c, ns, fmt.Sprintf("r%d-new-%d", round, i), "a")
		want = append(want, ev{Op: "add", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion})
	}
	return want
}
