package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/test/apiserver"
)

// TestCRConstructorRecreatedCluster: a controller-runtime manager whose
// constructor identifies the cluster itself (no ConstructorOptions.Cluster)
// caches a namespace's ConfigMaps in bolt. The cluster is then torn down and
// created again behind the same URL (a new etcd: new UIDs, the kube-system
// namespace's included), some ConfigMaps are created again under the old
// names and others anew, and the resourceVersions are pushed past the old
// resume point, so that nothing but the cluster identity tells the old
// cluster's store from the new one's. The restarted manager must relist
// (reason scope-change, no resume) and neither its cache, nor its handlers,
// nor its reconciler may see any object of the old cluster.
func TestCRConstructorRecreatedCluster(t *testing.T) {
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	const ns = "crc-recreated"
	createNamespace(t, c, ns)
	createConfigMaps(t, c, ns, 40)
	url := "bolt://" + t.TempDir() + "/cache.db"
	oldUID := kubeSystemUID(t, c)

	old := serverState(t, c, selection{namespace: ns})
	first := startCRManager(t, srv, url, crOptions{namespaces: []string{ns}, readCluster: true, reconcile: true})
	first.waitSynced(t)
	first.waitReconciled(t, namesOf(old))
	st := first.stats(t, crStoreName(ns))
	if st.Relists.Cold != 1 {
		t.Errorf("first start: relists %+v, want one cold list", st.Relists)
	}
	first.stop(t)
	resumeRV := storeResumeRV(t, url, crStoreName(ns))
	if resumeRV == "" {
		t.Fatalf("the first manager left no resume point in %s", crStoreName(ns))
	}

	srv.RecreateCluster(t)
	newUID := kubeSystemUID(t, c)
	if newUID == oldUID {
		t.Fatalf("the recreated cluster's kube-system namespace has the old UID %s", oldUID)
	}
	createNamespace(t, c, ns)
	// Half of the old names again, as other objects, and new ones.
	names := namesOf(old)
	for _, name := range names[:len(names)/2] {
		createConfigMap(t, c, ns, name, "recreated")
	}
	for i := range 5 {
		createConfigMap(t, c, ns, fmt.Sprintf("new-%d", i), "new")
	}
	// Past the old resume point: a resume from it would look valid (no
	// time travel), and the watch would start after every object above.
	pushRevisionPast(t, srv, c, resumeRV)
	cur := serverState(t, c, selection{namespace: ns})

	before := srv.Metrics(t)
	second := startCRManager(t, srv, url, crOptions{namespaces: []string{ns}, readCluster: true, reconcile: true})
	second.waitSynced(t)
	st = second.stats(t, crStoreName(ns))
	t.Logf("after the cluster was recreated: old resume point %s, revision %d; reflector %+v; API server lists %d",
		resumeRV, srv.EtcdRevision(t), st, srv.Metrics(t).Sub(before).Lists["configmaps"])
	if st.Relists.ScopeChange != 1 || st.Resumes != 0 {
		// A resume would never deliver the objects created before
		// the old resume point: the wait below would only time out.
		t.Fatalf("after the cluster was recreated: %d resumes, relists %+v; want a scope-change relist and no resume", st.Resumes, st.Relists)
	}
	second.waitReconciled(t, namesOf(cur))
	// The cache, and so what the reconciler reads, is the new cluster's.
	list := &corev1.ConfigMapList{}
	if err := second.mgr.GetCache().List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("cache List: %v", err)
	}
	cached := state{}
	for _, cm := range list.Items {
		cached[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	if diff := cmp.Diff(cur, cached); diff != "" {
		t.Errorf("cache after the cluster was recreated (-server +cache):\n%s", diff)
	}
	// No notification carries an object of the old cluster; every current
	// object arrives once.
	oldUIDs := map[string]bool{}
	for _, v := range old {
		oldUIDs[v.UID] = true
	}
	var got []ev
	for _, e := range second.recs[ns].events() {
		if oldUIDs[e.UID] {
			t.Errorf("notification of an object of the old cluster: %+v", e)
		}
		got = append(got, e)
	}
	sortByName(got)
	if diff := cmp.Diff(replayOf(cur), got); diff != "" {
		t.Errorf("notifications after the cluster was recreated (-want +got):\n%s", diff)
	}
	// The reconciler was asked about the current objects only: an old name
	// not created again is not among them.
	if diff := cmp.Diff(namesOf(cur), second.reconciledNames()); diff != "" {
		t.Errorf("reconcile requests after the cluster was recreated (-want +got):\n%s", diff)
	}
	second.stop(t)
}

// kubeSystemUID returns the UID of the cluster's kube-system namespace.
func kubeSystemUID(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ks, err := c.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace kube-system: %v", err)
	}
	return string(ks.UID)
}

// storeResumeRV returns the resume point of the store name in the closed
// database at url.
func storeResumeRV(t *testing.T, url, name string) string {
	t.Helper()
	infos, err := store.Stores(t.Context(), url)
	if err != nil {
		t.Fatalf("stores of %s: %v", url, err)
	}
	for _, info := range infos {
		if info.Name == name {
			return info.ResourceVersion
		}
	}
	t.Fatalf("no store %s in %s", name, url)
	return ""
}

// pushRevisionPast writes ConfigMaps outside the watched namespace until
// the cluster's revision is past rv.
func pushRevisionPast(t *testing.T, srv *apiserver.Server, c kubernetes.Interface, rv string) {
	t.Helper()
	var target int64
	if _, err := fmt.Sscan(rv, &target); err != nil {
		t.Fatalf("resume point %q: %v", rv, err)
	}
	const filler = "crc-filler"
	createNamespace(t, c, filler)
	for i := 0; srv.EtcdRevision(t) <= target+10; i++ {
		createConfigMap(t, c, filler, fmt.Sprintf("filler-%d", i), "filler")
	}
}

// namesOf returns the names of st, sorted.
func namesOf(st state) []string {
	var out []string
	for name := range st {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// TestCRConstructorManagerNotBuiltFromConfig: a manager built from the
// caller's REST config rather than the constructor's Config lists around
// the constructor, which cannot tell what its informers cache. Such an
// informer does not run without persistence: the manager, which runs the
// constructor (mgr.Add), stops with the error and reconciles nothing. With
// FallBackToMemory the manager runs on client-go's in-memory informer. The
// database holds no store of ConfigMaps either way.
func TestCRConstructorManagerNotBuiltFromConfig(t *testing.T) {
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	const ns = "crc-unwrapped"
	createNamespace(t, c, ns)
	createConfigMaps(t, c, ns, 10)
	want := namesOf(serverState(t, c, selection{namespace: ns}))
	crSetLoggerOnce.Do(func() { ctrl.SetLogger(klog.Background()) })
	for _, fallBack := range []bool{false, true} {
		t.Run(fmt.Sprintf("FallBackToMemory=%v", fallBack), func(t *testing.T) {
			url := "bolt://" + t.TempDir() + "/cache.db"
			logger := testr.New(t)
			cons, err := informer.NewInformerConstructor(t.Context(), url, srv.Config(), &informer.ConstructorOptions{
				Informer: informer.Options{Logger: &logger}, FallBackToMemory: fallBack})
			if err != nil {
				t.Fatalf("NewInformerConstructor: %v", err)
			}
			mgr, err := ctrl.NewManager(srv.Config(), ctrl.Options{
				Scheme:                 clientgoscheme.Scheme,
				Logger:                 logger,
				Metrics:                metricsserver.Options{BindAddress: "0"},
				HealthProbeBindAddress: "0",
				PprofBindAddress:       "0",
				Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
				Cache:                  crcache.Options{NewInformer: cons.NewInformer, DefaultNamespaces: map[string]crcache.Config{ns: {}}},
			})
			if err != nil {
				t.Fatalf("ctrl.NewManager: %v", err)
			}
			if err := mgr.Add(cons); err != nil {
				t.Fatalf("mgr.Add(constructor): %v", err)
			}
			var mu sync.Mutex
			reconciled := map[string]bool{}
			err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(
				reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
					mu.Lock()
					defer mu.Unlock()
					reconciled[req.Name] = true
					return reconcile.Result{}, nil
				}))
			if err != nil {
				t.Fatalf("NewControllerManagedBy: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), waitLimit)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			reconciledNames := func() []string {
				mu.Lock()
				defer mu.Unlock()
				var out []string
				for name := range reconciled {
					out = append(out, name)
				}
				slices.Sort(out)
				return out
			}
			if !fallBack {
				err := <-done
				if err == nil || !strings.Contains(err.Error(), "its scope cannot be told") || ctx.Err() != nil {
					t.Errorf("manager Start = %v (its context: %v), want the informer's error at once, saying its scope cannot be told", err, ctx.Err())
				}
				if got := reconciledNames(); len(got) != 0 {
					t.Errorf("the manager reconciled %v without persistence", got)
				}
			} else {
				for !slices.Equal(reconciledNames(), want) {
					select {
					case err := <-done:
						t.Fatalf("manager stopped (%v) having reconciled %v of %v", err, reconciledNames(), want)
					case <-time.After(50 * time.Millisecond):
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("manager Start with FallBackToMemory: %v", err)
				}
			}
			if err := cons.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			infos, err := store.Stores(t.Context(), url)
			if err != nil {
				t.Fatalf("stores of %s: %v", url, err)
			}
			for _, info := range infos {
				if info.Name != informer.ConstructorStoreName {
					t.Errorf("database holds store %q, want only the constructor's own", info.Name)
				}
			}
		})
	}
}
