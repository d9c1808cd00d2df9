package informer

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
	samplev1alpha1 "github.com/informerdb/informerdb/test/sample/apis/sample/v1alpha1"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
	samplescheme "github.com/informerdb/informerdb/test/sample/generated/clientset/versioned/scheme"
	sampleinternal "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/internalinterfaces"
	samplegroup "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/sample"
)

// A GeneratedFactory is what a generated package's group constructors
// take.
var _ sampleinternal.SharedInformerFactory = (*GeneratedFactory[sampleinternal.NewInformerFunc, versioned.Interface])(nil)

var configMapType = reflect.TypeOf(&corev1.ConfigMap{})

// typedTestOptions are the informerdb options of the typed factories'
// tests: testOptions, and stores without fsync.
func typedTestOptions() SharedInformerOption {
	return WithFactoryOptions(FactoryOptions{Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync}})
}

// TestSharedInformerFactory: client-go's group accessors run on
// informerdb. The ConfigMap informer of f.Core().V1().ConfigMaps() is an
// informerdb informer (the one InformerFor and ForResource return) in the
// store "core/v1/ConfigMap", with the namespace index the generated code
// asks for; its lister, ForResource's lister and WaitForCacheSync work as
// with client-go. A second factory on the database resumes: the persisted
// objects reach a handler as initial adds and the API server gets one
// limit=1 LIST, and the informer's metrics (FactoryOptions.Informer.Metrics)
// report the resume under the store's name.
func TestSharedInformerFactory(t *testing.T) {
	api := newFakeAPIServer(t, "uid-1")
	api.setCluster("uid-1", fakeConfigMap("ns-a", "a", "10"), fakeConfigMap("ns-a", "b", "11"), fakeConfigMap("ns-b", "c", "12"))
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")

	run := func(round string) (*Informer, []string, float64) {
		t.Helper()
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg)
		if err != nil {
			t.Fatalf("%s: NewMetrics: %v", round, err)
		}
		fo := FactoryOptions{Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync}}
		fo.Informer.Metrics = m
		f, err := NewSharedInformerFactory(t.Context(), dbURL, api.config(), 0, WithFactoryOptions(fo))
		if err != nil {
			t.Fatalf("%s: NewSharedInformerFactory: %v", round, err)
		}
		defer func() {
			if err := f.Close(); err != nil {
				t.Errorf("%s: Close: %v", round, err)
			}
		}()
		var _ informers.SharedInformerFactory = f
		cms := f.Core().V1().ConfigMaps()
		h := newRecorder()
		hreg, err := cms.Informer().AddEventHandler(h)
		if err != nil {
			t.Fatalf("%s: AddEventHandler: %v", round, err)
		}
		inf, ok := f.InformerFor(&corev1.ConfigMap{}, nil).(*Informer)
		if !ok {
			t.Fatalf("%s: InformerFor(ConfigMap) is %T, want the informerdb informer", round, f.InformerFor(&corev1.ConfigMap{}, nil))
		}
		if cms.Informer().GetIndexer() != inf.GetIndexer() {
			t.Errorf("%s: the ConfigMaps informer of Core().V1() and InformerFor's are not the same informer", round)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		f.Start(ctx.Done())
		res := f.WaitForCacheSyncWithContext(ctx)
		if res.Err != nil || !reflect.DeepEqual(res.Synced, map[reflect.Type]bool{configMapType: true}) {
			t.Fatalf("%s: WaitForCacheSyncWithContext = %+v, want the ConfigMap informer synced and no error", round, res)
		}
		waitDone(t, round+": handler sync", hreg.HasSyncedChecker())

		got, err := cms.Lister().ConfigMaps("ns-a").List(labels.Everything())
		if err != nil {
			t.Fatalf("%s: lister: %v", round, err)
		}
		var names []string
		for _, cm := range got {
			names = append(names, cm.Name)
		}
		slices.Sort(names)
		if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
			t.Errorf("%s: lister of ns-a (-want +got):\n%s", round, diff)
		}
		g, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
		if err != nil {
			t.Fatalf("%s: ForResource: %v", round, err)
		}
		if g.Informer() != cache.SharedIndexInformer(inf) {
			t.Errorf("%s: ForResource's informer is %T, not InformerFor's", round, g.Informer())
		}
		if all, err := g.Lister().List(labels.Everything()); err != nil || len(all) != 3 {
			t.Errorf("%s: ForResource's lister: %d objects, %v; want 3", round, len(all), err)
		}
		if err := f.CheckCommits(time.Minute); err != nil {
			t.Errorf("%s: CheckCommits: %v", round, err)
		}
		var evs []string
		for _, e := range h.all() {
			evs = append(evs, e.Op+" "+e.Key)
		}
		slices.Sort(evs)
		resumes, ok := metricValue(t, reg, MetricResumes, "core/v1/ConfigMap")
		if !ok {
			t.Errorf("%s: no %s series of informer core/v1/ConfigMap", round, MetricResumes)
		}
		return inf, evs, resumes
	}

	inf, evs, resumes := run("cold start")
	info := inf.Store().Info()
	if info.Name != "core/v1/ConfigMap" {
		t.Errorf("store name %q, want core/v1/ConfigMap", info.Name)
	}
	if want := "cluster=kube-system/uid-1;type=core/v1/ConfigMap;namespace=;labels=;fields="; info.Scope != want {
		t.Errorf("store scope %q, want %q", info.Scope, want)
	}
	if _, ok := inf.GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Errorf("indexers %v lack the namespace index the generated informer asks for", inf.GetIndexer().GetIndexers())
	}
	if st := inf.Stats().Reflector; st.Relists.Cold != 1 || resumes != 0 {
		t.Errorf("cold start: relists %+v, metric of resumes %v; want one cold list, no resume", st.Relists, resumes)
	}
	want := []string{"add ns-a/a", "add ns-a/b", "add ns-b/c"}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("cold start: notifications (-want +got):\n%s", diff)
	}

	lists := api.listCount()
	inf, evs, resumes = run("restart")
	if st := inf.Stats().Reflector; st.Resumes != 1 || st.Relists != (reflector.RelistStats{}) || resumes != 1 {
		t.Errorf("restart: %d resumes (metric %v), relists %+v; want one resume and no relist", st.Resumes, resumes, st.Relists)
	}
	if n := api.listCount() - lists; n != 1 {
		t.Errorf("restart made %d LISTs, want the 1 consistency probe", n)
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("restart: notifications (-want +got):\n%s", diff)
	}
}

// TestSharedInformerFactoryOptions: WithNamespace and the selectors of
// WithTweakListOptions choose what is listed and are part of the store's
// name and scope; WithCustomResyncConfig and WithTransform reach the
// informer; FactoryOptions.Informer.Name prefixes the informer's name.
func TestSharedInformerFactoryOptions(t *testing.T) {
	api := newFakeAPIServer(t, "uid-1")
	api.setCluster("uid-1", fakeConfigMap("ns-a", "a", "10"), fakeConfigMap("ns-b", "c", "12"))
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	fo := FactoryOptions{Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync, Scope: "v2"}}
	fo.Informer.Name = "ctrl"
	var tweaked atomic.Int64 // the informers' reflectors call the tweak concurrently
	f, err := NewSharedInformerFactory(t.Context(), dbURL, api.config(), time.Hour,
		WithFactoryOptions(fo),
		WithNamespace("ns-a"),
		WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "app=web"
			tweaked.Add(1)
		}),
		WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.ConfigMap{}: 5 * time.Minute}),
		WithTransform(func(obj interface{}) (interface{}, error) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				cm.Data = map[string]string{"v": "transformed"}
			}
			return obj, nil
		}),
	)
	if err != nil {
		t.Fatalf("NewSharedInformerFactory: %v", err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	cms := f.Core().V1().ConfigMaps()
	inf := f.InformerFor(&corev1.ConfigMap{}, nil).(*Informer)
	sec := f.InformerFor(&corev1.Secret{}, nil).(*Informer)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.StartWithContext(ctx)
	waitDone(t, "ConfigMap informer sync", inf.HasSyncedChecker())

	info := inf.Store().Info()
	if !strings.HasPrefix(info.Name, "core/v1/ConfigMap@ns=ns-a@sel=") {
		t.Errorf("store name %q, want core/v1/ConfigMap@ns=ns-a@sel=<digest>", info.Name)
	}
	if want := "cluster=kube-system/uid-1;type=core/v1/ConfigMap;namespace=ns-a;labels=app=web;fields=;scope=v2"; info.Scope != want {
		t.Errorf("store scope %q, want %q", info.Scope, want)
	}
	if inf.Name() != "ctrl/"+info.Name {
		t.Errorf("informer name %q, want ctrl/%s", inf.Name(), info.Name)
	}
	if diff := cmp.Diff(map[string]string{"ns-a/a": "transformed"}, storeValues(cms.Informer().GetStore())); diff != "" {
		t.Errorf("store: only ns-a, transformed (-want +got):\n%s", diff)
	}
	if tweaked.Load() == 0 {
		t.Errorf("the tweak was never applied to a request")
	}
	if inf.opts.ResyncPeriod != 5*time.Minute || sec.opts.ResyncPeriod != time.Hour {
		t.Errorf("resync periods: ConfigMaps %v, Secrets %v; want 5m (custom) and 1h (default)", inf.opts.ResyncPeriod, sec.opts.ResyncPeriod)
	}
}

// TestSharedInformerFactoryBadInput: a bad constructor argument is an
// error naming the constructor; an informer the factory cannot make (a
// type outside the scheme, a factory shut down) fails its methods and
// WaitForCacheSync with the cause, and never panics.
func TestSharedInformerFactoryBadInput(t *testing.T) {
	api := newFakeAPIServer(t, "uid-1")
	dir := t.TempDir()
	good := "bolt://" + filepath.Join(dir, "cache.db")
	for _, tc := range []struct {
		name   string
		url    string
		cfg    *rest.Config
		resync time.Duration
		opts   []SharedInformerOption
		want   string
	}{
		{"nil config", good, nil, 0, nil, "nil REST config"},
		{"unknown backend", "nosuch://x", api.config(), 0, nil, `unknown scheme "nosuch"`},
		{"negative resync", good, api.config(), -time.Second, nil, "negative"},
		{"negative custom resync", good, api.config(), 0,
			[]SharedInformerOption{WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: -1})}, "negative"},
		{"factory namespace", good, api.config(), 0,
			[]SharedInformerOption{WithFactoryOptions(FactoryOptions{Namespace: "x"})}, "WithNamespace"},
		{"bad informer options", good, api.config(), 0,
			[]SharedInformerOption{WithFactoryOptions(FactoryOptions{Informer: Options{MaxBatchSize: -1}})}, "MaxBatchSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewSharedInformerFactory(t.Context(), tc.url, tc.cfg, tc.resync, tc.opts...)
			if err == nil {
				_ = f.Close()
				t.Fatalf("NewSharedInformerFactory succeeded, want an error containing %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), "informer: new shared informer factory: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to name the constructor and contain %q", err, tc.want)
			}
		})
	}

	f, err := NewSharedInformerFactory(t.Context(), good, api.config(), 0, typedTestOptions())
	if err != nil {
		t.Fatalf("NewSharedInformerFactory: %v", err)
	}
	u := &unstructured.Unstructured{}
	bad := f.InformerFor(u, nil)
	if _, err := bad.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err == nil || !strings.Contains(err.Error(), "informer for *unstructured.Unstructured") {
		t.Errorf("AddEventHandler of an informer of a type outside the scheme: %v, want an error naming the type", err)
	}
	if f.InformerFor(u, nil) != bad {
		t.Errorf("a second InformerFor of the type made another informer")
	}
	cm := f.InformerFor(&corev1.ConfigMap{}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.StartWithContext(ctx)
	res := f.WaitForCacheSyncWithContext(ctx)
	if res.Synced[reflect.TypeOf(u)] || !res.Synced[configMapType] {
		t.Errorf("WaitForCacheSyncWithContext synced %v, want the ConfigMap informer only", res.Synced)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "*unstructured.Unstructured") {
		t.Errorf("WaitForCacheSyncWithContext error %v, want the failed informer's", res.Err)
	}
	if _, err := f.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "nosuch"}); err == nil || !strings.Contains(err.Error(), "does not serve") {
		t.Errorf("ForResource of a resource the server does not serve: %v", err)
	}

	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !cm.IsStopped() {
		t.Errorf("the ConfigMap informer still runs after Shutdown")
	}
	f.Shutdown() // again: nothing to do
	late := f.InformerFor(&corev1.Secret{}, nil)
	if _, err := late.AddEventHandler(cache.ResourceEventHandlerFuncs{}); !errors.Is(err, ErrStopped) {
		t.Errorf("AddEventHandler of an informer made after Shutdown: %v, want ErrStopped", err)
	}
}

// TestGeneratedFactory: a generated package's group constructor takes a
// GeneratedFactory (its NewInformerFunc given, its clientset inferred),
// and its informer is an informerdb informer of the generated type, named
// after it, with the generated informer's namespace index; a resource the
// API server does not serve leaves it synced on an empty store.
func TestGeneratedFactory(t *testing.T) {
	api := newFakeAPIServer(t, "uid-1")
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	f, err := NewGeneratedFactory[sampleinternal.NewInformerFunc](t.Context(), dbURL, api.config(), samplescheme.Scheme, 0, typedTestOptions(), WithNamespace("ns-a"))
	if err != nil {
		t.Fatalf("NewGeneratedFactory: %v", err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	sites := samplegroup.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Sites()
	sites.Informer() // made here, with the generated informer's indexers
	inf, ok := f.InformerFor(&samplev1alpha1.Site{}, nil).(*Informer)
	if !ok {
		t.Fatalf("the Site informer is not an informerdb informer")
	}
	if sites.Informer().GetIndexer() != inf.GetIndexer() {
		t.Errorf("the group constructor's Site informer is not InformerFor's")
	}
	if name := inf.Store().Info().Name; name != "sample.informerdb.io/v1alpha1/Site@ns=ns-a" {
		t.Errorf("store name %q, want sample.informerdb.io/v1alpha1/Site@ns=ns-a", name)
	}
	if _, ok := inf.GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Errorf("indexers %v lack the namespace index", inf.GetIndexer().GetIndexers())
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.Start(ctx.Done())
	if synced := f.WaitForCacheSync(ctx.Done()); !synced[reflect.TypeOf(&samplev1alpha1.Site{})] {
		t.Fatalf("WaitForCacheSync = %v, want the Site informer synced (on an empty store: not served)", synced)
	}
	if got, err := sites.Lister().Sites("ns-a").List(labels.Everything()); err != nil || len(got) != 0 {
		t.Errorf("lister: %d Sites, %v; want none", len(got), err)
	}
}

// TestSharedInformerFactoryEveryGroup: an informer of each group of
// client-go's interface is an informerdb informer in the store named after
// its group, version and kind: InformerFor maps every built-in type through
// the scheme, with no request to the API server until the informers run.
func TestSharedInformerFactoryEveryGroup(t *testing.T) {
	api := newFakeAPIServer(t, "uid-1")
	f, err := NewSharedInformerFactory(t.Context(), "bolt://"+filepath.Join(t.TempDir(), "cache.db"), api.config(), 0, typedTestOptions())
	if err != nil {
		t.Fatalf("NewSharedInformerFactory: %v", err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	for want, inf := range map[string]cache.SharedIndexInformer{
		"admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer(),
		"internal.apiserver.k8s.io/v1alpha1/StorageVersion":              f.Internal().V1alpha1().StorageVersions().Informer(),
		"apps/v1/Deployment":                                 f.Apps().V1().Deployments().Informer(),
		"autoscaling/v2/HorizontalPodAutoscaler":             f.Autoscaling().V2().HorizontalPodAutoscalers().Informer(),
		"batch/v1/Job":                                       f.Batch().V1().Jobs().Informer(),
		"certificates.k8s.io/v1/CertificateSigningRequest":   f.Certificates().V1().CertificateSigningRequests().Informer(),
		"coordination.k8s.io/v1/Lease":                       f.Coordination().V1().Leases().Informer(),
		"core/v1/Pod":                                        f.Core().V1().Pods().Informer(),
		"discovery.k8s.io/v1/EndpointSlice":                  f.Discovery().V1().EndpointSlices().Informer(),
		"events.k8s.io/v1/Event":                             f.Events().V1().Events().Informer(),
		"extensions/v1beta1/Ingress":                         f.Extensions().V1beta1().Ingresses().Informer(),
		"flowcontrol.apiserver.k8s.io/v1/FlowSchema":         f.Flowcontrol().V1().FlowSchemas().Informer(),
		"lifecycle.k8s.io/v1alpha1/EvictionRequest":          f.Lifecycle().V1alpha1().EvictionRequests().Informer(),
		"networking.k8s.io/v1/NetworkPolicy":                 f.Networking().V1().NetworkPolicies().Informer(),
		"node.k8s.io/v1/RuntimeClass":                        f.Node().V1().RuntimeClasses().Informer(),
		"policy/v1/PodDisruptionBudget":                      f.Policy().V1().PodDisruptionBudgets().Informer(),
		"rbac.authorization.k8s.io/v1/Role":                  f.Rbac().V1().Roles().Informer(),
		"resource.k8s.io/v1/ResourceClaim":                   f.Resource().V1().ResourceClaims().Informer(),
		"scheduling.k8s.io/v1/PriorityClass":                 f.Scheduling().V1().PriorityClasses().Informer(),
		"storage.k8s.io/v1/StorageClass":                     f.Storage().V1().StorageClasses().Informer(),
		"storagemigration.k8s.io/v1/StorageVersionMigration": f.Storagemigration().V1().StorageVersionMigrations().Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
			t.Errorf("%s: AddEventHandler: %v", want, err)
			continue
		}
		var name string
		for _, e := range f.set.entries {
			if e.made != nil && e.made.GetIndexer() == inf.GetIndexer() {
				name = e.made.Store().Info().Name
			}
		}
		if name != want {
			t.Errorf("informer of %s: store %q (empty: not an informerdb informer)", want, name)
		}
	}
	made := 0
	for _, e := range f.set.entries {
		if e.made != nil {
			made++
		}
	}
	if got := made; got != 21 {
		t.Errorf("%d informerdb informers made, want 21", got)
	}
	if n := api.listCount(); n != 0 {
		t.Errorf("making the informers listed %d times, want none before Start", n)
	}
}
