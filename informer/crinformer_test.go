package informer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// apiServerStub answers every request with an empty ConfigMapList and counts
// what reached it.
type apiServerStub struct {
	*httptest.Server
	requests atomic.Int64
}

func newAPIServerStub(t *testing.T) *apiServerStub {
	s := &apiServerStub{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// listedThrough returns a ListerWatcher with lw's objects whose lists first
// go through a clientset built from cfg, for namespace ns and the label
// selector labels, as controller-runtime's ListerWatchers send their lists
// through the manager's config. The response is dropped: lw serves the
// objects.
func listedThrough(t *testing.T, cfg *rest.Config, ns, labels string, lw *fakeLW) *cache.ListWatch {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			sent := opts
			sent.LabelSelector = labels
			if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, sent); err != nil {
				return nil, err
			}
			return lw.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: lw.WatchWithContext,
	}
}

func TestInformerConstructor(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	opts := &FactoryOptions{Cluster: "c1", Informer: testOptions()}
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

	// First process.
	c, err := NewInformerConstructor(ctx, dbURL, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	// It plugs into controller-runtime's cache options (checked at compile
	// time).
	_ = crcache.Options{NewInformer: c.NewInformer}
	cfg := c.WrapConfig(&rest.Config{Host: srv.URL})
	inf, ok := c.NewInformer(listedThrough(t, cfg, "", "", lw), &corev1.ConfigMap{}, 0, indexers).(*Informer)
	if !ok {
		t.Fatalf("NewInformer fell back to client-go's informer")
	}
	if got := srv.requests.Load(); got != 0 {
		t.Errorf("NewInformer sent %d requests to the API server, want 0 (the scope request is answered by the transport)", got)
	}
	if got := inf.Store().Info().Name; got != "core/v1/ConfigMap" {
		t.Errorf("store name = %q, want core/v1/ConfigMap", got)
	}
	r := start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	r.stop()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	fullLists := lw.fullLists()
	lw.create("ns", "b", "b1")

	// Second process: resumes from the database.
	c2, err := NewInformerConstructor(ctx, dbURL, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	defer c2.Close()
	cfg2 := c2.WrapConfig(&rest.Config{Host: srv.URL})
	inf2, ok := c2.NewInformer(listedThrough(t, cfg2, "", "", lw), &corev1.ConfigMap{}, 0, indexers).(*Informer)
	if !ok {
		t.Fatalf("NewInformer fell back to client-go's informer")
	}
	h := newRecorder()
	addHandler(t, inf2, h)
	start(t, inf2)
	want := []ev{
		{Op: "add", Key: "ns/a", Value: "a1", UID: "uid-1", Initial: true},
		{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2"},
	}
	if diff := cmp.Diff(want, h.wait(t, 2)); diff != "" {
		t.Errorf("events after restart (-want +got):\n%s", diff)
	}
	waitDone(t, "informer sync", inf2.HasSyncedChecker())
	if got := lw.fullLists() - fullLists; got != 0 {
		t.Errorf("restart made %d full LISTs, want 0", got)
	}
	if objs, err := inf2.GetIndexer().ByIndex(cache.NamespaceIndex, "ns"); err != nil || len(objs) != 2 {
		t.Errorf("ByIndex(namespace, ns) = %d objects, %v; want 2", len(objs), err)
	}
}

// TestInformerConstructorScopes: informers of one type that list different
// namespaces or selectors (a multi-namespace cache, per-object selectors)
// each keep their own store, whatever order they are created in; unstructured
// and metadata-only informers of the type have stores of their own.
func TestInformerConstructorScopes(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	opts := &FactoryOptions{Cluster: "c1", Informer: testOptions()}
	type scope struct{ ns, labels, store string }
	scopes := []scope{
		{"team-a", "", "core/v1/ConfigMap@ns=team-a"},
		{"team-b", "", "core/v1/ConfigMap@ns=team-b"},
		// The digest is part of the name on disk: it must not change
		// between builds, or restarts would open new, empty stores.
		{"team-a", "app=web", "core/v1/ConfigMap@ns=team-a@sel=d39cf863e634"},
	}
	lws := map[scope]*fakeLW{}
	for _, sc := range scopes {
		lw := newFakeLW()
		lw.create(sc.ns, "only-"+sc.store, sc.store)
		lws[sc] = lw
	}

	// Each process creates the informers in another order, as
	// controller-runtime's multi-namespace cache may (map order).
	for round, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}} {
		c, err := NewInformerConstructor(ctx, dbURL, opts)
		if err != nil {
			t.Fatalf("NewInformerConstructor: %v", err)
		}
		cfg := c.WrapConfig(&rest.Config{Host: srv.URL})
		for _, i := range order {
			sc := scopes[i]
			lw := lws[sc]
			sent := srv.requests.Load()
			inf, ok := c.NewInformer(listedThrough(t, cfg, sc.ns, sc.labels, lw), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
			if got := srv.requests.Load() - sent; got != 0 {
				t.Errorf("round %d: NewInformer(%s) sent %d requests to the API server, want 0", round, sc.store, got)
			}
			if !ok {
				t.Fatalf("round %d: NewInformer(%s) fell back to client-go's informer", round, sc.store)
			}
			if got := inf.Store().Info().Name; got != sc.store {
				t.Errorf("round %d: store name = %q, want %q", round, got, sc.store)
			}
			fullLists := lw.fullLists()
			h := newRecorder()
			addHandler(t, inf, h)
			r := start(t, inf)
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			// Only this scope's object, persisted after the first round.
			want := []ev{{Op: "add", Key: sc.ns + "/only-" + sc.store, Value: sc.store, UID: "uid-1", Initial: true}}
			if diff := cmp.Diff(want, h.wait(t, 1)); diff != "" {
				t.Errorf("round %d, %s: events (-want +got):\n%s", round, sc.store, diff)
			}
			if diff := cmp.Diff(lw.values(), storeValues(inf.GetStore())); diff != "" {
				t.Errorf("round %d, %s: store (-server +store):\n%s", round, sc.store, diff)
			}
			if got := lw.fullLists() - fullLists; round > 0 && got != 0 {
				t.Errorf("round %d, %s: restart made %d full LISTs, want 0", round, sc.store, got)
			}
			r.stop()
		}

		// The unstructured and metadata-only informers of the type.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		for _, tc := range []struct {
			obj  runtime.Object
			want string
		}{{u, "core/v1/ConfigMap/unstructured"}, {m, "core/v1/ConfigMap/metadata"}} {
			inf, ok := c.NewInformer(listedThrough(t, cfg, "", "", newFakeLW()), tc.obj, 0, cache.Indexers{}).(*Informer)
			if !ok {
				t.Fatalf("NewInformer(%T) fell back to client-go's informer", tc.obj)
			}
			if got := inf.Store().Info().Name; got != tc.want {
				t.Errorf("store name of %T = %q, want %q", tc.obj, got, tc.want)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

// TestInformerConstructorUnknownScope: when the constructor cannot tell what
// an informer lists, or a second informer asks for a store already in use,
// NewInformer returns client-go's in-memory informer and opens no store.
func TestInformerConstructorUnknownScope(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	c, err := NewInformerConstructor(ctx, dbURL, &FactoryOptions{Informer: testOptions()})
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	defer c.Close()
	plain := &rest.Config{Host: srv.URL}

	// No transport wrapped yet: the constructor does not even ask.
	if inf := c.NewInformer(listedThrough(t, plain, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}); isPersistent(inf) {
		t.Errorf("NewInformer without WrapConfig = %T, want client-go's informer", inf)
	}
	if got := srv.requests.Load(); got != 0 {
		t.Errorf("NewInformer without WrapConfig sent %d requests, want 0", got)
	}

	// A transport is wrapped, but this ListerWatcher lists through
	// another one: its list reaches the server, and the scope is unknown.
	wrapped := c.WrapConfig(plain)
	if inf := c.NewInformer(listedThrough(t, plain, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}); isPersistent(inf) {
		t.Errorf("NewInformer listing through an unwrapped config = %T, want client-go's informer", inf)
	}
	if got := srv.requests.Load(); got != 1 {
		t.Errorf("the server got %d requests, want the 1 list that went around the constructor", got)
	}
	// A ListerWatcher that sends nothing over HTTP.
	if inf := c.NewInformer(crListWatch(newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}); isPersistent(inf) {
		t.Errorf("NewInformer of a ListerWatcher without requests = %T, want client-go's informer", inf)
	}

	// The same scope twice in one process: the second informer does not
	// share the first one's store.
	first := c.NewInformer(listedThrough(t, wrapped, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if !isPersistent(first) {
		t.Fatalf("NewInformer = %T, want a persistent informer", first)
	}
	if inf := c.NewInformer(listedThrough(t, wrapped, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}); isPersistent(inf) {
		t.Errorf("second NewInformer of one scope = %T, want client-go's informer", inf)
	}
	// Requests of the program's own (no scope probe) pass through.
	cs, err := kubernetes.NewForConfig(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	before := srv.requests.Load()
	if _, err := cs.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list through the wrapped config: %v", err)
	}
	if got := srv.requests.Load() - before; got != 1 {
		t.Errorf("a list through the wrapped config reached the server %d times, want 1", got)
	}
}

func isPersistent(inf cache.SharedIndexInformer) bool {
	_, ok := inf.(*Informer)
	return ok
}

func TestParseListRequest(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want listRequest
	}{
		{"https://h:6443/api/v1/configmaps?limit=1&resourceVersion=0",
			listRequest{server: "https://h:6443", request: "/api/v1/configmaps"}},
		{"https://h/api/v1/namespaces/team-a/configmaps?limit=1",
			listRequest{server: "https://h", request: "/api/v1/namespaces/team-a/configmaps", namespace: "team-a"}},
		{"https://h/apis/apps/v1/namespaces/x/deployments?labelSelector=app%3Dweb&limit=1&fieldSelector=status.phase%3DRunning",
			listRequest{server: "https://h", request: "/apis/apps/v1/namespaces/x/deployments?fieldSelector=status.phase%3DRunning&labelSelector=app%3Dweb",
				namespace: "x", selectors: "fieldSelector=status.phase%3DRunning&labelSelector=app%3Dweb"}},
		// The namespaces resource itself is cluster-scoped.
		{"https://h/api/v1/namespaces?limit=1", listRequest{server: "https://h", request: "/api/v1/namespaces"}},
		// A server URL with a path prefix.
		{"https://h/prefix/api/v1/namespaces/n/pods", listRequest{server: "https://h", request: "/prefix/api/v1/namespaces/n/pods", namespace: "n"}},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, parseListRequest(u), cmp.AllowUnexported(listRequest{})); diff != "" {
			t.Errorf("parseListRequest(%s) (-want +got):\n%s", tc.url, diff)
		}
	}
}

func TestInformerConstructorBadInput(t *testing.T) {
	ctx := t.Context()
	if _, err := NewInformerConstructor(ctx, "nosuch://x", nil); err == nil {
		t.Errorf("NewInformerConstructor with an unknown scheme succeeded")
	}
	// A database that cannot be created: the constructor falls back to
	// client-go's informer instead of failing the caller.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewInformerConstructor(ctx, "bolt://"+filepath.Join(file, "sub", "cache.db"), nil)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	defer c.Close()
	cfg := c.WrapConfig(&rest.Config{Host: newAPIServerStub(t).URL})
	sii := c.NewInformer(listedThrough(t, cfg, "", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if _, ok := sii.(*Informer); ok || sii == nil {
		t.Errorf("NewInformer on an unusable database = %T, want client-go's informer", sii)
	}
	var nilLW *cache.ListWatch
	if sii := c.NewInformer(nilLW, &corev1.ConfigMap{}, 0, cache.Indexers{}); isPersistent(sii) {
		t.Errorf("NewInformer of a nil *ListWatch = %T, want client-go's informer", sii)
	}
}

// crListWatch wraps lw the way controller-runtime hands a ListerWatcher to
// cache.Options.NewInformer, without going through HTTP.
func crListWatch(lw *fakeLW) *cache.ListWatch {
	return &cache.ListWatch{ListWithContextFunc: lw.ListWithContext, WatchFuncWithContext: lw.WatchWithContext}
}
