package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// TestFactoryShutdownWhileStoreOpenWaits: bolt's open waits up to
// lock_timeout for a database another process holds (the old pod of a
// rolling update). NewFactory waits for it and keeps the database open, so
// InformerFor waits only where the factory does not hold it: a second
// factory of the database in one process, whose first closed it. The
// factory opens stores outside its lock, so Shutdown (and Start,
// WaitForCacheSync, other InformerFor calls) does not wait behind it, and
// ends the wait.
func TestFactoryShutdownWhileStoreOpenWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	client, _ := fakeClientset()
	newFactory := func() *Factory {
		t.Helper()
		f, err := NewFactory(t.Context(), "bolt://"+path+"?lock_timeout=20s", client, &FactoryOptions{
			Cluster: "test", Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync},
		})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		return f
	}
	first := newFactory()
	f := newFactory() // the database is open: it holds none of its own
	if f.held != nil {
		t.Errorf("second factory of the database holds store %s too", FactoryStoreName)
	}
	if err := first.Shutdown(); err != nil {
		t.Fatalf("Shutdown of the first factory: %v", err)
	}

	// Another "process" takes the database: flock locks of two open file
	// descriptions conflict, even within one process.
	lockFile, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lockFile.Close()
	if err := syscall.Flock(int(lockFile.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			_ = syscall.Flock(int(lockFile.Fd()), syscall.LOCK_UN)
		}
	}
	defer unlock()

	informerFor := make(chan error, 1)
	go func() {
		_, err := f.InformerFor(t.Context(), configMapsGVR)
		informerFor <- err
	}()
	time.Sleep(500 * time.Millisecond) // InformerFor now waits for the lock, under f.mu
	shutdown := make(chan error, 1)
	begin := time.Now()
	go func() { shutdown <- f.Shutdown() }()
	select {
	case err := <-shutdown:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("Shutdown blocked for 10s behind an InformerFor waiting for the database lock")
		unlock()
		err := <-shutdown
		t.Logf("Shutdown returned %v after the lock was released, %v after it was called", err, time.Since(begin))
	}
	unlock()
	if err := <-informerFor; !errors.Is(err, ErrStopped) {
		t.Errorf("InformerFor ended by Shutdown = %v, want ErrStopped", err)
	}
}

// TestFactoryConcurrentShutdown: every Shutdown returns once the stores
// are closed, as client-go's makes every caller wait: a program with two
// shutdown paths (a signal handler and a deferred call) that reopens the
// database after its Shutdown returned must not find the stores open.
func TestFactoryConcurrentShutdown(t *testing.T) {
	client, _ := fakeClientset()
	f, err := NewFactory(t.Context(), "bolt://"+filepath.Join(t.TempDir(), "cache.db"), client, &FactoryOptions{
		Cluster: "test", Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync},
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := f.InformerFor(t.Context(), configMapsGVR)
	if err != nil {
		t.Fatal(err)
	}
	called, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
		once.Do(func() { close(called) })
		<-release // a handler finishing its work
	}}); err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context())
	<-called
	first := make(chan error, 1)
	go func() { first <- f.Shutdown() }()
	time.Sleep(200 * time.Millisecond) // the first Shutdown waits for the handler
	second := make(chan error, 1)
	go func() { second <- f.Shutdown() }()
	select {
	case err := <-second:
		if !storeClosed(t, inf.Store()) {
			t.Errorf("second Shutdown returned %v while the first still runs: the informer's store is still open", err)
		}
	case <-time.After(time.Second):
		// Waiting, as client-go's does: fine.
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first Shutdown: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if !storeClosed(t, inf.Store()) {
		t.Errorf("store open after both Shutdowns returned")
	}
}

// forbiddingAPIServer is an API server for ConfigMaps that refuses to show
// the kube-system namespace (a namespaced controller's RBAC), lists one
// ConfigMap at resourceVersion 10, and holds watches open without events.
func forbiddingAPIServer(t *testing.T, cmNamespace, cmName string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/namespaces/kube-system":
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Forbidden","code":403,"message":"namespaces \"kube-system\" is forbidden"}`)
		case r.URL.Path == "/api/v1/configmaps" && r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			<-r.Context().Done()
		case r.URL.Path == "/api/v1/configmaps":
			_, _ = fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[`+
				`{"metadata":{"namespace":%q,"name":%q,"uid":"uid-%s","resourceVersion":"5"},"data":{"v":%q}}]}`, cmNamespace, cmName, cmName, cmName)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFactoryScopeWithoutClusterUID: where the kube-system namespace
// cannot be read (Forbidden), the cluster is told by the API server's
// address: a database written against cluster A and opened against B is
// relisted, not served (DESIGN invariant 5).
func TestFactoryScopeWithoutClusterUID(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	srvA := forbiddingAPIServer(t, "a", "only-in-cluster-a")
	srvB := forbiddingAPIServer(t, "b", "only-in-cluster-b")
	run := func(host string) (scope, reset string, values map[string]string) {
		f, err := NewFactoryForConfig(ctx, dbURL, &rest.Config{Host: host}, &FactoryOptions{
			Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync},
		})
		if err != nil {
			t.Fatalf("NewFactoryForConfig(%s): %v", host, err)
		}
		defer func() { _ = f.Shutdown() }()
		inf, err := f.InformerFor(ctx, configMapsGVR)
		if err != nil {
			t.Fatalf("InformerFor: %v", err)
		}
		info := inf.Store().Info()
		f.Start(ctx)
		wctx, cancel := context.WithTimeout(ctx, waitLimit)
		defer cancel()
		if !f.WaitForCacheSync(wctx)[configMapsGVR] {
			t.Fatalf("not synced against %s", host)
		}
		return info.Scope, info.Reset, storeValues(inf.GetStore())
	}
	scopeA, _, _ := run(srvA.URL)
	scopeB, resetB, valuesB := run(srvB.URL)
	if scopeA == scopeB {
		t.Errorf("two API servers (%s, %s) give one store scope %q", srvA.URL, srvB.URL, scopeA)
	}
	if resetB == "" {
		t.Errorf("the store written against %s was opened against %s without a reset", srvA.URL, srvB.URL)
	}
	if _, ok := valuesB["a/only-in-cluster-a"]; ok {
		t.Errorf("the synced informer of cluster B serves cluster A's object: store = %v", valuesB)
	}
}

// TestFactoryTypedGroupMustMatch: the typed client is found by the
// group's first label, so "apps.example.com" must be refused, not served
// apps/v1 Deployments.
func TestFactoryTypedGroupMustMatch(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "ks-uid"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", ResourceVersion: "5"}},
	)
	f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "test", Informer: testOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Shutdown() }()
	gvr := schema.GroupVersionResource{Group: "apps.example.com", Version: "v1", Resource: "deployments"}
	inf, err := f.InformerFor(t.Context(), gvr)
	if err == nil {
		t.Errorf("InformerFor(%v) = informer of %T in store %q, want an error (the clientset has no client for group apps.example.com)",
			gvr, inf.example, inf.Store().Info().Name)
	}
}
