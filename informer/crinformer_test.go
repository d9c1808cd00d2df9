package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/informerdb/informerdb/store"
)

// apiServerStub answers every request with an empty ConfigMapList and counts
// what reached it: every request, and those shaped as the constructor's
// scope request (limit=1 at resourceVersion 0).
type apiServerStub struct {
	*httptest.Server
	requests, scopeShaped atomic.Int64
}

func newAPIServerStub(t *testing.T) *apiServerStub {
	s := &apiServerStub{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if q := r.URL.Query(); q.Get("limit") == "1" && q.Get("resourceVersion") == "0" {
			s.scopeShaped.Add(1)
		}
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
	opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions()}
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

	// First process.
	c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	// It plugs into controller-runtime's cache options, and is a Runnable
	// of its manager (checked at compile time).
	_ = crcache.Options{NewInformer: c.NewInformer}
	var _ manager.LeaderElectionRunnable = c
	var _ manager.Runnable = c
	cfg := c.Config()
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
	c2, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	defer c2.Close()
	cfg2 := c2.Config()
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
	opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions()}
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
		c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, opts)
		if err != nil {
			t.Fatalf("NewInformerConstructor: %v", err)
		}
		cfg := c.Config()
		for _, i := range order {
			sc := scopes[i]
			lw := lws[sc]
			// A resumable store's probe starts as its store opens; the
			// scope request is answered by the transport.
			sent := srv.scopeShaped.Load()
			inf, ok := c.NewInformer(listedThrough(t, cfg, sc.ns, sc.labels, lw), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
			if got := srv.scopeShaped.Load() - sent; got != 0 {
				t.Errorf("round %d: NewInformer(%s) sent %d scope requests to the API server, want 0", round, sc.store, got)
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
// NewInformer opens no store and returns an informer that fails with the
// error (controller-runtime's GetInformer sees it from SetTransform), and
// Start returns the first such error; with FallBackToMemory it returns
// client-go's in-memory informer instead.
func TestInformerConstructorUnknownScope(t *testing.T) {
	for _, fallBack := range []bool{false, true} {
		t.Run(fmt.Sprintf("FallBackToMemory=%v", fallBack), func(t *testing.T) {
			ctx := t.Context()
			srv := newAPIServerStub(t)
			dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
			plain := &rest.Config{Host: srv.URL}
			c, err := NewInformerConstructor(ctx, dbURL, plain, &ConstructorOptions{Cluster: "c1", Informer: testOptions(), FallBackToMemory: fallBack})
			if err != nil {
				t.Fatalf("NewInformerConstructor: %v", err)
			}
			defer c.Close()
			wrapped := c.Config()

			// check checks what NewInformer made of a ListerWatcher it
			// cannot persist: cause is in the error it fails with.
			check := func(what string, inf cache.SharedIndexInformer, cause string) {
				t.Helper()
				if isPersistent(inf) {
					t.Errorf("NewInformer %s = a persistent informer, want none", what)
					return
				}
				_, isMemory := inf.(*memoryInformer)
				if fallBack {
					if !isMemory {
						t.Errorf("NewInformer %s with FallBackToMemory = %T, want client-go's in-memory informer", what, inf)
					}
					if err := inf.SetTransform(nil); err != nil {
						t.Errorf("SetTransform of the in-memory informer %s: %v", what, err)
					}
					return
				}
				if isMemory {
					t.Errorf("NewInformer %s without FallBackToMemory = client-go's in-memory informer, want one that fails", what)
				}
				if err := inf.SetTransform(nil); err == nil || !strings.Contains(err.Error(), cause) {
					t.Errorf("SetTransform of the informer %s = %v, want an error saying %q", what, err, cause)
				}
				if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err == nil || !strings.Contains(err.Error(), cause) {
					t.Errorf("AddEventHandler of the informer %s = %v, want an error saying %q", what, err, cause)
				}
			}

			// This ListerWatcher lists through a config that is not the
			// constructor's: its list reaches the server, and the scope is
			// unknown.
			const unknown = "its scope cannot be told"
			check("listing through another config", c.NewInformer(listedThrough(t, plain, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}), unknown)
			if got := srv.requests.Load(); got != 1 {
				t.Errorf("the server got %d requests, want the 1 list that went around the constructor", got)
			}
			// A ListerWatcher that sends nothing over HTTP.
			check("of a ListerWatcher without requests", c.NewInformer(crListWatch(newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}), unknown)

			// The same scope twice in one process: the second informer
			// does not share the first one's store.
			first := c.NewInformer(listedThrough(t, wrapped, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})
			if !isPersistent(first) {
				t.Fatalf("NewInformer = %T, want a persistent informer", first)
			}
			check("of a scope in use", c.NewInformer(listedThrough(t, wrapped, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}), store.ErrInUse.Error())

			// Start returns the first failure at once, and only without
			// FallBackToMemory.
			startCtx, cancel := context.WithCancel(ctx)
			if fallBack {
				cancel()
			}
			err = c.Start(startCtx)
			cancel()
			switch {
			case fallBack && err != nil:
				t.Errorf("Start with FallBackToMemory = %v, want nil once its context ended", err)
			case !fallBack && (err == nil || !strings.Contains(err.Error(), unknown)):
				t.Errorf("Start = %v, want the first failure, saying %q", err, unknown)
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
		})
	}
}

// TestInformerConstructorStartWithoutFailure: Start returns nil when its
// context ends and no informer failed.
func TestInformerConstructorStartWithoutFailure(t *testing.T) {
	srv := newAPIServerStub(t)
	c, err := NewInformerConstructor(t.Context(), "bolt://"+filepath.Join(t.TempDir(), "cache.db"), &rest.Config{Host: srv.URL}, &ConstructorOptions{Cluster: "c1", Informer: testOptions()})
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	defer c.Close()
	if !isPersistent(c.NewInformer(listedThrough(t, c.Config(), "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})) {
		t.Fatalf("NewInformer made no persistent informer")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Start(ctx); err != nil {
		t.Errorf("Start = %v, want nil", err)
	}
	if c.NeedLeaderElection() {
		t.Errorf("NeedLeaderElection = true, want false: the informers run on every replica")
	}
	// The database is the constructor's until Close.
	if _, err := NewInformerConstructor(t.Context(), c.url, &rest.Config{Host: srv.URL}, &ConstructorOptions{Cluster: "c1"}); !errors.Is(err, store.ErrInUse) {
		t.Errorf("a second NewInformerConstructor of the database = %v, want an error wrapping store.ErrInUse", err)
	}
}

func isPersistent(inf cache.SharedIndexInformer) bool {
	_, ok := inf.(*Informer)
	return ok
}

func TestParseListRequest(t *testing.T) {
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, tc := range []struct {
		url  string
		want listRequest
		// what its state lister lists (ConstructorOptions.StateCatchUp)
		gvr                schema.GroupVersionResource
		labelSel, fieldSel string
	}{
		{url: "https://h:6443/api/v1/configmaps?limit=1&resourceVersion=0",
			want: listRequest{server: "https://h:6443", request: "/api/v1/configmaps", path: "/api/v1/configmaps"}, gvr: cm},
		{url: "https://h/api/v1/namespaces/team-a/configmaps?limit=1",
			want: listRequest{server: "https://h", request: "/api/v1/namespaces/team-a/configmaps", namespace: "team-a", path: "/api/v1/namespaces/team-a/configmaps"}, gvr: cm},
		{url: "https://h/apis/apps/v1/namespaces/x/deployments?labelSelector=app%3Dweb&limit=1&fieldSelector=status.phase%3DRunning",
			want: listRequest{server: "https://h", request: "/apis/apps/v1/namespaces/x/deployments?fieldSelector=status.phase%3DRunning&labelSelector=app%3Dweb",
				namespace: "x", selectors: "fieldSelector=status.phase%3DRunning&labelSelector=app%3Dweb", path: "/apis/apps/v1/namespaces/x/deployments"},
			gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, labelSel: "app=web", fieldSel: "status.phase=Running"},
		// The namespaces resource itself is cluster-scoped.
		{url: "https://h/api/v1/namespaces?limit=1", want: listRequest{server: "https://h", request: "/api/v1/namespaces", path: "/api/v1/namespaces"},
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}},
		// A server URL with a path prefix.
		{url: "https://h/prefix/api/v1/namespaces/n/pods", want: listRequest{server: "https://h", request: "/prefix/api/v1/namespaces/n/pods", namespace: "n", path: "/prefix/api/v1/namespaces/n/pods"},
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		got := parseListRequest(u)
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(listRequest{})); diff != "" {
			t.Errorf("parseListRequest(%s) (-want +got):\n%s", tc.url, diff)
		}
		sl, err := got.stateLister(nil)
		if err != nil {
			t.Errorf("state lister of %s: %v", tc.url, err)
			continue
		}
		ms := sl.(*metadataState)
		var o metav1.ListOptions
		ms.tweak(&o)
		if ms.gvr != tc.gvr || ms.namespace != tc.want.namespace || o.LabelSelector != tc.labelSel || o.FieldSelector != tc.fieldSel {
			t.Errorf("state lister of %s lists %v in %q with selectors %q %q, want %v in %q with %q %q",
				tc.url, ms.gvr, ms.namespace, o.LabelSelector, o.FieldSelector, tc.gvr, tc.want.namespace, tc.labelSel, tc.fieldSel)
		}
	}
	if _, err := (listRequest{path: "/healthz"}).stateLister(nil); err == nil {
		t.Errorf("state lister of /healthz: no error")
	}
}

func TestInformerConstructorBadInput(t *testing.T) {
	ctx := t.Context()
	cfg := &rest.Config{Host: newAPIServerStub(t).URL}
	opts := &ConstructorOptions{Cluster: "c1"}
	if _, err := NewInformerConstructor(ctx, "nosuch://x", cfg, opts); err == nil {
		t.Errorf("NewInformerConstructor with an unknown scheme succeeded")
	}
	if _, err := NewInformerConstructor(ctx, "bolt://"+filepath.Join(t.TempDir(), "cache.db"), nil, opts); err == nil {
		t.Errorf("NewInformerConstructor with a nil REST config succeeded")
	}
	// A database that cannot be created: an error, unless the caller opts
	// in to informers without persistence.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unusable := "bolt://" + filepath.Join(file, "sub", "cache.db")
	if _, err := NewInformerConstructor(ctx, unusable, cfg, opts); err == nil {
		t.Errorf("NewInformerConstructor on an unusable database succeeded")
	}
	c, err := NewInformerConstructor(ctx, unusable, cfg, &ConstructorOptions{Cluster: "c1", FallBackToMemory: true})
	if err != nil {
		t.Fatalf("NewInformerConstructor with FallBackToMemory on an unusable database: %v", err)
	}
	defer c.Close()
	sii := c.NewInformer(listedThrough(t, c.Config(), "", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if _, ok := sii.(*memoryInformer); !ok {
		t.Errorf("NewInformer with FallBackToMemory on an unusable database = %T, want client-go's informer", sii)
	}
	var nilLW *cache.ListWatch
	if sii := c.NewInformer(nilLW, &corev1.ConfigMap{}, 0, cache.Indexers{}); isPersistent(sii) || sii == nil {
		t.Errorf("NewInformer of a nil *ListWatch = %T, want an informer that is not persistent", sii)
	}
}

// crListWatch wraps lw the way controller-runtime hands a ListerWatcher to
// cache.Options.NewInformer, without going through HTTP.
func crListWatch(lw *fakeLW) *cache.ListWatch {
	return &cache.ListWatch{ListWithContextFunc: lw.ListWithContext, WatchFuncWithContext: lw.WatchWithContext}
}

// plainLW is a ListerWatcher without context methods that opts out of the
// streaming watch-list.
type plainLW struct{}

func (plainLW) List(metav1.ListOptions) (runtime.Object, error)   { return nil, nil }
func (plainLW) Watch(metav1.ListOptions) (watch.Interface, error) { return nil, nil }
func (plainLW) IsWatchListSemanticsUnSupported() bool             { return true }

// TestWithContextKeepsWatchListOptOut: the constructor hands the reflector
// what a ListerWatcher says of the streaming watch-list, also when it has
// to wrap it for contexts.
func TestWithContextKeepsWatchListOptOut(t *testing.T) {
	if !watchlist.DoesClientNotSupportWatchListSemantics(withContext(plainLW{})) {
		t.Error("a ListerWatcher that opts out of the streaming watch-list lost its opt-out when wrapped")
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(withContext(&cache.ListWatch{})) {
		t.Error("a ListerWatcher that does not opt out was made to")
	}
}
