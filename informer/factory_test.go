package informer

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// fakeClientset holds ConfigMaps a/x and b/y and the kube-system namespace.
// The fake tracker gives lists no resourceVersion, which the reflector
// needs: a reactor sets one. The fake's watches do not replay what happened
// before they started: watching is closed by the first watch of configmaps,
// and tests create objects only after that.
func fakeClientset() (client *fake.Clientset, watching <-chan struct{}) {
	client = fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "ks-uid"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", ResourceVersion: "5", UID: "uid-x"}, Data: map[string]string{"v": "x1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "y", ResourceVersion: "6", UID: "uid-y"}, Data: map[string]string{"v": "y1"}},
	)
	client.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := client.Tracker().List(configMapsGVR, corev1.SchemeGroupVersion.WithKind("ConfigMap"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return true, nil, err
		}
		lm.SetResourceVersion("10")
		return true, obj, nil
	})
	ch := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(configMapsGVR, a.GetNamespace())
		once.Do(func() { close(ch) }) // the tracker now sends new events to w
		return true, w, err
	})
	return client, ch
}

func TestFactory(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	client, watching := fakeClientset()
	newFactory := func(t *testing.T, namespace string) *Factory {
		t.Helper()
		f, err := NewFactory(ctx, dbURL, client, &FactoryOptions{
			Namespace: namespace,
			Informer:  testOptions(),
			Store:     store.Options{Durability: store.DurabilityNoSync},
		})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		t.Cleanup(func() { _ = f.Shutdown() })
		return f
	}

	f := newFactory(t, "a")
	inf, err := f.InformerFor(ctx, configMapsGVR)
	if err != nil {
		t.Fatalf("InformerFor: %v", err)
	}
	if again, err := f.InformerFor(ctx, configMapsGVR); err != nil || again != inf {
		t.Errorf("second InformerFor = %p, %v; want the same informer %p", again, err, inf)
	}
	h := newRecorder()
	addHandler(t, inf, h)
	f.Start(ctx)
	if diff := cmp.Diff(map[schema.GroupVersionResource]bool{configMapsGVR: true}, f.WaitForCacheSync(ctx)); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	want := []ev{{Op: "add", Key: "a/x", Value: "x1", UID: "uid-x", Initial: true}}
	if diff := cmp.Diff(want, h.wait(t, 1)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	<-watching
	if _, err := client.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z", ResourceVersion: "11", UID: "uid-z"}, Data: map[string]string{"v": "z1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ev{Op: "add", Key: "a/z", Value: "z1", UID: "uid-z"}, h.wait(t, 2)[1]); diff != "" {
		t.Errorf("watched event (-want +got):\n%s", diff)
	}
	info := inf.Store().Info()
	if info.Name != "core/v1/configmaps" {
		t.Errorf("store name = %q, want core/v1/configmaps", info.Name)
	}
	for _, part := range []string{"cluster=kube-system/ks-uid", "resource=core/v1/configmaps", "namespace=a"} {
		if !strings.Contains(info.Scope, part) {
			t.Errorf("store scope %q lacks %q", info.Scope, part)
		}
	}
	if err := f.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := f.InformerFor(ctx, configMapsGVR); err == nil {
		t.Errorf("InformerFor after Shutdown succeeded")
	}

	// The same database watched in another namespace: the store's scope
	// changed, so it starts empty instead of serving namespace a's objects.
	f2 := newFactory(t, "b")
	inf2, err := f2.InformerFor(ctx, configMapsGVR)
	if err != nil {
		t.Fatalf("InformerFor: %v", err)
	}
	if reset := inf2.Store().Info().Reset; reset == "" {
		t.Errorf("store reopened with another scope was not reset")
	}
	h2 := newRecorder()
	addHandler(t, inf2, h2)
	f2.Start(ctx)
	f2.WaitForCacheSync(ctx)
	want = []ev{{Op: "add", Key: "b/y", Value: "y1", UID: "uid-y", Initial: true}}
	if diff := cmp.Diff(want, h2.wait(t, 1)); diff != "" {
		t.Errorf("events in namespace b (-want +got):\n%s", diff)
	}
}

func TestTypedListerWatcher(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		gvr        schema.GroupVersionResource
		example    runtime.Object
		namespaced bool
	}{
		{configMapsGVR, &corev1.ConfigMap{}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, &corev1.Node{}, false},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, &appsv1.Deployment{}, true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, &rbacv1.ClusterRole{}, false},
	} {
		t.Run(StoreName(tc.gvr), func(t *testing.T) {
			lw, example, namespaced, err := typedListerWatcher(client, tc.gvr, "ns", func(*metav1.ListOptions) {})
			if err != nil {
				t.Fatalf("typedListerWatcher: %v", err)
			}
			if reflect.TypeOf(example) != reflect.TypeOf(tc.example) || namespaced != tc.namespaced {
				t.Errorf("got %T namespaced=%v, want %T namespaced=%v", example, namespaced, tc.example, tc.namespaced)
			}
			if _, err := lw.ListWithContext(t.Context(), metav1.ListOptions{}); err != nil {
				t.Errorf("List: %v", err)
			}
			w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			w.Stop()
		})
	}
}

func TestFactoryBadInput(t *testing.T) {
	ctx := t.Context()
	client, _ := fakeClientset()
	var typedNil *fake.Clientset
	for name, tc := range map[string]struct {
		url    string
		client kubernetes.Interface
		want   string
	}{
		"unknown scheme":   {"nosuch://x", client, "forgotten import"},
		"nil client":       {"memory://", nil, "nil clientset"},
		"typed nil client": {"memory://", typedNil, "nil clientset"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewFactory(ctx, tc.url, tc.client, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewFactory = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	f, err := NewFactory(ctx, "memory://", client, &FactoryOptions{Cluster: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "nosuchthings"},
		{Group: "example.com", Version: "v1", Resource: "widgets"},
		{Resource: "configmaps"},
	} {
		if _, err := f.InformerFor(ctx, gvr); err == nil || !strings.Contains(err.Error(), StoreName(gvr)) {
			t.Errorf("InformerFor(%v) = %v, want an error naming the resource", gvr, err)
		}
	}
}

// TestFactoryEncryption makes a factory encrypt its stores and report
// metrics: each informer is labelled with its store's name, the store is
// written with the encrypted codec, and it cannot be opened without it.
func TestFactoryEncryption(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	client, _ := fakeClientset()
	key, err := indexer.NewEncryptionKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := indexer.NewKeyRing(key)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	iopts := testOptions()
	iopts.Metrics = m
	iopts.Name = "prod" // a prefix
	f, err := NewFactory(ctx, dbURL, client, &FactoryOptions{
		Informer: iopts, Encryption: ring,
		Store: store.Options{Durability: store.DurabilityNoSync},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	for _, gvr := range []schema.GroupVersionResource{configMapsGVR, {Version: "v1", Resource: "secrets"}} {
		if _, err := f.InformerFor(ctx, gvr); err != nil {
			t.Fatalf("InformerFor %v: %v", gvr, err)
		}
	}
	inf, err := f.InformerFor(ctx, configMapsGVR)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inf.Store().Info().Codec, "protobuf+aes256gcm"; got != want {
		t.Errorf("store codec %q, want %q", got, want)
	}
	f.Start(ctx)
	f.WaitForCacheSync(ctx)
	for _, name := range []string{"prod/core/v1/configmaps", "prod/core/v1/secrets"} {
		if v, ok := metricValue(t, reg, MetricSynced, name); !ok || v != 1 {
			t.Errorf("%s{informer=%q} = %v (present %v), want 1", MetricSynced, name, v, ok)
		}
	}
	if n := len(inf.GetStore().ListKeys()); n != 2 {
		t.Errorf("%d ConfigMaps stored, want 2", n)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	plain, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(ctx, dbURL, &store.Options{Name: "core/v1/configmaps", Codec: plain}); !errors.Is(err, store.ErrIncompatible) {
		if err == nil {
			s.Close()
		}
		t.Errorf("open the encrypted store without encryption: %v, want ErrIncompatible", err)
	}
}

// TestFactoryCallerScope checks FactoryOptions.Store.Scope, the caller's
// part of every store's scope: the same part reopens the store as it was,
// another one empties it (Info().Reset), and without one the scope is what
// it was before the caller's part existed.
func TestFactoryCallerScope(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	client, _ := fakeClientset()
	openInfo := func(callerScope string) store.Info {
		t.Helper()
		f, err := NewFactory(ctx, dbURL, client, &FactoryOptions{
			Namespace: "a",
			Informer:  testOptions(),
			Store:     store.Options{Durability: store.DurabilityNoSync, Scope: callerScope},
		})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()
		inf, err := f.InformerFor(ctx, configMapsGVR)
		if err != nil {
			t.Fatalf("InformerFor: %v", err)
		}
		// A resume point, so that a reset shows.
		inf.Store().Bookmark("5")
		return inf.Store().Info()
	}
	plain := openInfo("")
	if strings.Contains(plain.Scope, "scope=") {
		t.Errorf("scope without the caller's part = %q; want no scope= component", plain.Scope)
	}
	for _, tc := range []struct {
		scope     string
		wantReset bool
	}{
		{"transform-v1", true}, // another scope than the plain one
		{"transform-v1", false},
		{"transform-v2", true},
	} {
		info := openInfo(tc.scope)
		if !strings.HasSuffix(info.Scope, ";scope="+tc.scope) {
			t.Errorf("scope %q does not end in the caller's part %q", info.Scope, tc.scope)
		}
		if got := info.Reset != ""; got != tc.wantReset {
			t.Errorf("reopened with caller scope %q: reset %q; want a reset %v", tc.scope, info.Reset, tc.wantReset)
		}
	}
}
