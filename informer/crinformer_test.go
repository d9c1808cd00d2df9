package informer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// crListWatch wraps lw the way controller-runtime hands a ListerWatcher to
// cache.Options.NewInformer.
func crListWatch(lw *fakeLW) *cache.ListWatch {
	return &cache.ListWatch{ListWithContextFunc: lw.ListWithContext, WatchFuncWithContext: lw.WatchWithContext}
}

func TestInformerConstructor(t *testing.T) {
	ctx := t.Context()
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
	inf, ok := c.NewInformer(crListWatch(lw), &corev1.ConfigMap{}, 0, indexers).(*Informer)
	if !ok {
		t.Fatalf("NewInformer fell back to client-go's informer")
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
	inf2, ok := c2.NewInformer(crListWatch(lw), &corev1.ConfigMap{}, 0, indexers).(*Informer)
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

	// A second informer of the same type (a multi-namespace cache) gets its
	// own store.
	inf3, ok := c2.NewInformer(crListWatch(newFakeLW()), &corev1.ConfigMap{}, 0, indexers).(*Informer)
	if !ok {
		t.Fatalf("second NewInformer of a type fell back to client-go's informer")
	}
	if got := inf3.Store().Info().Name; got != "core/v1/ConfigMap#2" {
		t.Errorf("second store name = %q, want core/v1/ConfigMap#2", got)
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
	sii := c.NewInformer(crListWatch(newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if _, ok := sii.(*Informer); ok || sii == nil {
		t.Errorf("NewInformer on an unusable database = %T, want client-go's informer", sii)
	}
}
