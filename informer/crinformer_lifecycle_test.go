package informer

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestConstructorRecreatedInformerKeepsStore: controller-runtime's
// RemoveInformer stops an informer and forgets it; the next Get of that
// type calls NewInformer again. The stopped informer's store is let go of,
// so the new informer is persistent too, not client-go's in-memory one.
func TestConstructorRecreatedInformerKeepsStore(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, &ConstructorOptions{Cluster: "c1", Informer: testOptions(),
		Store: store.Options{Durability: store.DurabilityNoSync}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := c.Config()
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	first, ok := c.NewInformer(listedThrough(t, cfg, "ns", "", lw), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
	if !ok {
		t.Fatalf("first NewInformer fell back to client-go's informer")
	}
	r := start(t, first)
	waitDone(t, "informer sync", first.HasSyncedChecker())
	r.stop() // controller-runtime's RemoveInformer
	if !first.IsStopped() {
		t.Fatalf("first informer not stopped")
	}
	second := c.NewInformer(listedThrough(t, cfg, "ns", "", lw), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if !isPersistent(second) {
		t.Errorf("NewInformer after the previous informer of the scope stopped = %T (client-go's in-memory informer): the stopped informer still holds the store", second)
	}
}

// TestConstructorAfterClose: controller-runtime may still make an informer
// after its cache stopped; once Close ran, nothing would close its store,
// so the constructor opens none and returns an informer that fails with
// an error saying so.
func TestConstructorAfterClose(t *testing.T) {
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	c, err := NewInformerConstructor(t.Context(), dbURL, &rest.Config{Host: srv.URL}, &ConstructorOptions{Cluster: "c1", Informer: testOptions(),
		Store: store.Options{Durability: store.DurabilityNoSync}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	inf := c.NewInformer(listedThrough(t, cfg, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{})
	if isPersistent(inf) {
		t.Errorf("NewInformer after Close made a persistent informer, whose store nothing closes")
	}
	if err := inf.SetTransform(nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("SetTransform of the informer made after Close = %v, want the error that the constructor is closed", err)
	}
	// The store the constructor would have opened is free.
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(t.Context(), dbURL, &store.Options{Name: "core/v1/ConfigMap@ns=ns", Codec: codec})
	if err != nil {
		t.Fatalf("opening the database after the constructor closed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
