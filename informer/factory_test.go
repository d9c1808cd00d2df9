package informer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// fakeClientset holds ConfigMaps a/x and b/y and the kube-system namespace,
// and the discovery of core/v1's configmaps, secrets and namespaces.
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
	// Discovery, which a namespaced factory asks whether a resource is
	// namespaced.
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap"},
		{Name: "secrets", Namespaced: true, Kind: "Secret"},
		{Name: "namespaces", Namespaced: false, Kind: "Namespace"},
	}}}
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

// TestBuiltinKind checks the Factory's map from a resource to its Go type
// against every resource client of client-go's clientset: the resource
// each typed client's List asks for (read from the fake clientset's
// actions) must map to the kind of the type its Get returns. The test finds
// the clients by reflection, as the Factory must not (see
// typedListerWatcher).
func TestBuiltinKind(t *testing.T) {
	client := fake.NewClientset()
	ctx := reflect.ValueOf(t.Context())
	opts := reflect.ValueOf(metav1.ListOptions{})
	resources := 0
	for i := range reflect.TypeFor[kubernetes.Interface]().NumMethod() {
		name := reflect.TypeFor[kubernetes.Interface]().Method(i).Name
		group := reflect.ValueOf(client).MethodByName(name)
		if name == "Discovery" || group.Type().NumIn() != 0 || group.Type().NumOut() != 1 || group.Type().Out(0).Kind() != reflect.Interface {
			continue
		}
		gc := group.Call(nil)[0]
		for j := range gc.NumMethod() {
			m := gc.Method(j)
			var rc reflect.Value
			switch t := m.Type(); {
			case t.NumIn() == 0 && t.NumOut() == 1:
				rc = m.Call(nil)[0]
			case t.NumIn() == 1 && t.In(0).Kind() == reflect.String && t.NumOut() == 1:
				rc = m.Call([]reflect.Value{reflect.ValueOf("ns")})[0]
			default:
				continue
			}
			list, get := rc.MethodByName("List"), rc.MethodByName("Get")
			if !list.IsValid() || !get.IsValid() {
				continue // RESTClient, or a client without List (TokenReviews)
			}
			client.ClearActions()
			list.Call([]reflect.Value{ctx, opts})
			actions := client.Actions()
			if len(actions) != 1 {
				t.Fatalf("%s: %d actions, want 1", gc.Type().Method(j).Name, len(actions))
			}
			gvr := actions[0].GetResource()
			resources++
			gvk, err := builtinKind(gvr)
			if err != nil {
				t.Errorf("builtinKind(%v): %v", gvr, err)
				continue
			}
			obj, err := scheme.Scheme.New(gvk)
			if err != nil {
				t.Errorf("builtinKind(%v) = %v: %v", gvr, gvk, err)
				continue
			}
			if got, want := reflect.TypeOf(obj), get.Type().Out(0); got != want {
				t.Errorf("builtinKind(%v) = %v, of type %v; the clientset's client returns %v", gvr, gvk, got, want)
			}
		}
	}
	if resources < 100 {
		t.Errorf("%d resources checked; want every resource of the clientset (more than 100)", resources)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "nosuchthings"},
		{Group: "apps.example.com", Version: "v1", Resource: "deployments"},
		{Group: "policy", Version: "v1", Resource: "evictions"}, // a subresource's kind
		{Version: "v1", Resource: "listoptions"},
		{Version: "v1"},
	} {
		if gvk, err := builtinKind(gvr); err == nil {
			t.Errorf("builtinKind(%v) = %v, want an error", gvr, gvk)
		}
	}
}

// wrappedClientset is a clientset wrapper passed by value, as
// instrumentation wrappers often are.
type wrappedClientset struct{ kubernetes.Interface }

// TestFactoryREST runs a Factory on a clientset of a (fake) API server: its
// typed informers list and watch through the clientset's REST client, in
// the format the clientset would use, under the path of the API server's
// URL (a proxy's), in the factory's namespace, and sync the server's
// objects.
func TestFactoryREST(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, namespace string
		want                    []string
	}{
		{"all namespaces", "", "", []string{"a/x", "b/y"}},
		{"namespace behind a proxy", "/proxy/c1", "a", []string{"a/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPIServer(t, "uid-1")
			api.setCluster("uid-1", fakeConfigMap("a", "x", "5"), fakeConfigMap("b", "y", "6"))
			srv := httptest.NewServer(http.StripPrefix(tc.prefix, http.HandlerFunc(api.serve)))
			t.Cleanup(srv.Close)
			client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL + tc.prefix})
			if err != nil {
				t.Fatal(err)
			}
			// By value, as instrumentation wrappers often are.
			f, err := NewFactory(t.Context(), "memory://", wrappedClientset{client}, &FactoryOptions{Namespace: tc.namespace, Informer: testOptions()})
			if err != nil {
				t.Fatalf("NewFactory: %v", err)
			}
			defer func() {
				if err := f.Shutdown(); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			}()
			if f.cluster != "kube-system/uid-1" {
				t.Errorf("cluster = %q, want kube-system/uid-1", f.cluster)
			}
			inf, err := f.InformerFor(t.Context(), configMapsGVR)
			if err != nil {
				t.Fatalf("InformerFor: %v", err)
			}
			f.Start(t.Context())
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			if got := f.WaitForCacheSync(ctx); !got[configMapsGVR] {
				t.Fatalf("WaitForCacheSync = %v", got)
			}
			if diff := cmp.Diff(tc.want, slices.Sorted(slices.Values(inf.GetStore().ListKeys()))); diff != "" {
				t.Errorf("stored keys (-want +got):\n%s", diff)
			}
			obj, ok, err := inf.GetStore().GetByKey("a/x")
			if cm, isCM := obj.(*corev1.ConfigMap); !ok || err != nil || !isCM || cm.Data["v"] != "5" {
				t.Errorf("a/x = %#v, %v, %v; want the server's *v1.ConfigMap", obj, ok, err)
			}
			if n := api.listCount(); n == 0 {
				t.Errorf("the API server answered no LIST of ConfigMaps")
			}
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
		"unknown scheme":   {"nosuch://x", client, `unknown scheme "nosuch"`},
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

// lockedByOther tells whether the file at path is locked (flock), as
// another process would find it: flock locks of two open file descriptions
// conflict, even within one process.
func lockedByOther(t *testing.T, path string) bool {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	return false
}

// TestNewFactoryChecksDatabase: NewFactory opens the database before it
// asks the API server anything, and fails with the store's error when it
// cannot be used, holding nothing open; a factory it returns holds the
// database until Shutdown.
func TestNewFactoryChecksDatabase(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil { // writable by all, no sticky bit
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked.db")
	lockFile, err := os.OpenFile(locked, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lockFile.Close()
	if err := syscall.Flock(int(lockFile.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	for _, tc := range []struct {
		name, url string
		want      error
		wantIn    string
	}{
		{"unknown scheme", "nosuch:///var/lib/cache.db", store.ErrInvalid, `unknown scheme "nosuch"`},
		{"empty URL", "", store.ErrInvalid, "scheme"},
		{"relative path", "bolt://cache.db", store.ErrInvalid, "cache.db"},
		{"unknown parameter", "bolt://" + filepath.Join(dir, "cache.db") + "?nosuch=1", store.ErrInvalid, "nosuch"},
		{"parent writable by others", "bolt://" + filepath.Join(shared, "cache.db"), store.ErrUnsafe, shared},
		{"locked by another process", "bolt://" + locked + "?lock_timeout=100ms", store.ErrLocked, locked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := fakeClientset()
			react, calls := failFirst()
			client.PrependReactor("get", "namespaces", react)
			f, err := NewFactory(t.Context(), tc.url, client, nil)
			if err == nil {
				_ = f.Shutdown()
				t.Fatalf("NewFactory(%q) succeeded", tc.url)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantIn) || !strings.HasPrefix(err.Error(), "informer: new factory: ") {
				t.Errorf("NewFactory(%q) = %v; want an error of the new factory wrapping %v that names %q", tc.url, err, tc.want, tc.wantIn)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("NewFactory asked the API server %d times before failing on the database", n)
			}
		})
	}
	if f, err := NewFactoryForConfig(t.Context(), "bolt://cache.db", &rest.Config{Host: "http://127.0.0.1:1"}, nil); !errors.Is(err, store.ErrInvalid) {
		if err == nil {
			_ = f.Shutdown()
		}
		t.Errorf("NewFactoryForConfig with a relative path = %v, want store.ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(shared, "cache.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database created in a directory others can write: %v", err)
	}

	t.Run("held until Shutdown", func(t *testing.T) {
		path := filepath.Join(dir, "held.db")
		client, _ := fakeClientset()
		f, err := NewFactory(t.Context(), "bolt://"+path, client, nil)
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		if !lockedByOther(t, path) {
			t.Errorf("the database is not held after NewFactory")
		}
		if err := f.Shutdown(); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if lockedByOther(t, path) {
			t.Errorf("the database is still held after Shutdown")
		}
	})

	t.Run("released when the cluster identity fails", func(t *testing.T) {
		path := filepath.Join(dir, "identity.db")
		client, _ := fakeClientset()
		client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errRefused
		})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		if f, err := NewFactory(ctx, "bolt://"+path, client, nil); !errors.Is(err, errRefused) {
			if err == nil {
				_ = f.Shutdown()
			}
			t.Fatalf("NewFactory without the API server = %v, want its last error", err)
		}
		if lockedByOther(t, path) {
			t.Errorf("the database is still held after NewFactory failed")
		}
		// Nor is the factory's store open in this process.
		f, err := NewFactory(t.Context(), "bolt://"+path, client, &FactoryOptions{Cluster: "test"})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()
		if f.held == nil {
			t.Errorf("store %s still open from the failed NewFactory", FactoryStoreName)
		}
	})
}

// TestFactoryReadsAfterShutdown pins what a lister reads once the factory
// shut down: its store is closed, so List finds nothing and Get fails with
// store.ErrClosed, and the first such read of each informer is logged, once.
func TestFactoryReadsAfterShutdown(t *testing.T) {
	client, _ := fakeClientset()
	var logs logLines
	iopts := testOptions()
	logger := logs.logger()
	iopts.Logger = &logger
	f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "test", Informer: iopts})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	configMaps, err := f.InformerFor(t.Context(), configMapsGVR)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := f.InformerFor(t.Context(), schema.GroupVersionResource{Version: "v1", Resource: "secrets"})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if got := f.WaitForCacheSync(ctx); !got[configMapsGVR] {
		t.Fatalf("WaitForCacheSync = %v", got)
	}
	lister := corelisters.NewConfigMapLister(configMaps.GetIndexer())
	secretLister := corelisters.NewSecretLister(secrets.GetIndexer())
	afterShutdown := func() []string {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		var out []string
		for _, l := range logs.lines {
			if strings.Contains(l, "after its factory shut down") {
				out = append(out, l)
			}
		}
		return out
	}
	if cms, err := lister.List(labels.Everything()); err != nil || len(cms) != 2 {
		t.Fatalf("List before Shutdown = %d ConfigMaps, %v; want 2", len(cms), err)
	}
	if secrets, err := secretLister.List(labels.Everything()); err != nil || len(secrets) != 0 {
		t.Fatalf("List of Secrets = %d, %v; want none", len(secrets), err)
	}
	if got := afterShutdown(); len(got) != 0 {
		t.Errorf("reads before Shutdown logged %q", got)
	}

	if err := f.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for range 3 {
		if cms, err := lister.List(labels.Everything()); err != nil || len(cms) != 0 {
			t.Errorf("List after Shutdown = %d ConfigMaps, %v; want none: the store is closed", len(cms), err)
		}
		if cms, err := lister.ConfigMaps("a").List(labels.Everything()); err != nil || len(cms) != 0 {
			t.Errorf("namespace List after Shutdown = %d ConfigMaps, %v; want none", len(cms), err)
		}
		if cm, err := lister.ConfigMaps("a").Get("x"); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Get after Shutdown = %v, %v; want store.ErrClosed", cm, err)
		}
	}
	got := afterShutdown()
	if len(got) != 1 || !strings.Contains(got[0], `"informer"="core/v1/configmaps"`) {
		t.Errorf("log lines of reads after Shutdown: %q; want one, of core/v1/configmaps", got)
	}
	if _, err := secretLister.List(labels.Everything()); err != nil {
		t.Errorf("List of Secrets after Shutdown: %v", err)
	}
	if got := afterShutdown(); len(got) != 2 || !strings.Contains(got[1], `"informer"="core/v1/secrets"`) {
		t.Errorf("log lines of reads after Shutdown: %q; want a second one, of core/v1/secrets", got)
	}
}

// TestFactoryFakeClientsetSelector: on a fake clientset, which lists
// through its tracker, the factory's label selector is applied as the
// fake's typed clients apply it (the tracker ignores it).
func TestFactoryFakeClientsetSelector(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "ks-uid"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", Labels: map[string]string{"app": "x"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y", Labels: map[string]string{"app": "y"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "z"}},
	)
	f := &Factory{client: client, fake: client, opts: FactoryOptions{LabelSelector: "app=x"}}
	lw, _, _, err := f.listerWatcher(t.Context(), factoryKey{configMapsGVR, typedObjects})
	if err != nil {
		t.Fatalf("listerWatcher: %v", err)
	}
	list, err := lw.ListWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	cms, ok := list.(*corev1.ConfigMapList)
	if !ok {
		t.Fatalf("List returned %T, want *v1.ConfigMapList", list)
	}
	var names []string
	for _, cm := range cms.Items {
		names = append(names, cm.Namespace+"/"+cm.Name)
	}
	if diff := cmp.Diff([]string{"a/x"}, names); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
}
