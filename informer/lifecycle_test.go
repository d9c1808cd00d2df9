package informer

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
	"github.com/informerdb/informerdb/store"
)

// shutdownChan returns the channel client-go's cache.ShutDownEventHandler
// waits on.
func shutdownChan(t *testing.T, reg cache.ResourceEventHandlerRegistration) <-chan struct{} {
	t.Helper()
	s, ok := reg.(interface{ ShutdownChan() <-chan struct{} })
	if !ok {
		t.Fatalf("registration %T has no ShutdownChan", reg)
	}
	return s.ShutdownChan()
}

// storeClosed reports whether s refuses a commit because it is closed.
func storeClosed(t *testing.T, s store.Store) bool {
	t.Helper()
	err := s.Commit(t.Context(), store.Batch{})
	if err != nil && !errors.Is(err, store.ErrClosed) {
		t.Fatalf("empty commit: %v, want nil or ErrClosed", err)
	}
	return err != nil
}

// runAsync runs inf.RunWithContext(ctx) in the background and returns a
// channel closed when it returns.
func runAsync(ctx context.Context, inf *Informer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	return done
}

// waitClosed fails the test unless ch is closed within waitLimit.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("%s: not done after %v", what, waitLimit)
	}
}

// TestInformerConstructorFailedConstructionReleasesStore checks that a
// construction that fails after opening its store (the store refuses an
// index without a function) closes it: the next informer of that scope
// gets the store.
func TestInformerConstructorFailedConstructionReleasesStore(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync}}
	c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: newAPIServerStub(t).URL}, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	cfg := c.Config()
	bad := c.NewInformer(listedThrough(t, cfg, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{"broken": nil})
	if _, ok := bad.(*Informer); ok {
		t.Fatalf("NewInformer with a nil index function made an informerdb informer")
	}
	const want = "core/v1/ConfigMap@ns=ns"
	inf, ok := c.NewInformer(listedThrough(t, cfg, "ns", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
	if !ok {
		t.Fatalf("NewInformer after a failed construction fell back to client-go's informer")
	}
	if got := inf.Store().Info().Name; got != want {
		t.Errorf("store name = %q, want %q", got, want)
	}
	if got := inf.Name(); got != want {
		t.Errorf("informer name = %q, want %q", got, want)
	}
}

// TestFailedStartStops checks that an informer whose start fails (the
// reflector rejects its options) ends as a stopped one does: stopped, its
// registrations shut down (cache.ShutDownEventHandler returns), and a
// Factory's WaitForCacheSync does not wait for it.
func TestFailedStartStops(t *testing.T) {
	badReflector := func() Options {
		o := testOptions()
		o.Reflector.MinWatchTimeout = time.Millisecond // below the reflector's minimum
		return o
	}
	t.Run("informer", func(t *testing.T) {
		inf := newInformer(t, newFakeLW(), openStore(t, "memory://"), badReflector())
		reg := addHandler(t, inf, newRecorder())
		waitClosed(t, "Run with invalid reflector options", runAsync(t.Context(), inf))
		if !inf.IsStopped() {
			t.Errorf("IsStopped = false after a failed start")
		}
		select {
		case <-shutdownChan(t, reg):
		default:
			t.Errorf("registration's ShutdownChan still open after a failed start")
		}
		if reg.HasSynced() || inf.HasSynced() {
			t.Errorf("HasSynced true after a failed start")
		}
		if _, err := inf.AddEventHandler(newRecorder()); !errors.Is(err, ErrStopped) {
			t.Errorf("AddEventHandler after a failed start: %v, want ErrStopped", err)
		}
		if err := cache.ShutDownEventHandler(inf, reg); err != nil {
			t.Errorf("ShutDownEventHandler after a failed start: %v", err)
		}
	})
	t.Run("factory", func(t *testing.T) {
		client, _ := fakeClientset()
		f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "test", Informer: badReflector()})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.Shutdown(); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()
		inf, err := f.InformerFor(t.Context(), configMapsGVR)
		if err != nil {
			t.Fatal(err)
		}
		reg := addHandler(t, inf, newRecorder())
		f.Start(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		got := f.WaitForCacheSync(ctx)
		if ctx.Err() != nil {
			t.Fatalf("WaitForCacheSync waited %v for an informer that failed to start", waitLimit)
		}
		if diff := cmp.Diff(map[schema.GroupVersionResource]bool{configMapsGVR: false}, got); diff != "" {
			t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
		}
		waitClosed(t, "registration's ShutdownChan", shutdownChan(t, reg))
	})
}

// TestFactoryShutdownAndCallerRunInformers checks what Factory.Shutdown does
// to informers the factory did not start: one the caller runs keeps running
// on an open store, which is closed when the caller's Run returns; one that
// never ran has its store closed at once, and cannot run any more.
func TestFactoryShutdownAndCallerRunInformers(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	client, watching := fakeClientset()
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	iopts := testOptions()
	iopts.Metrics = m
	f, err := NewFactory(ctx, dbURL, client, &FactoryOptions{
		Cluster: "test", Informer: iopts, Store: store.Options{Durability: store.DurabilityNoSync},
	})
	if err != nil {
		t.Fatal(err)
	}
	running, err := f.InformerFor(ctx, configMapsGVR)
	if err != nil {
		t.Fatal(err)
	}
	secretsGVR := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	idle, err := f.InformerFor(ctx, secretsGVR)
	if err != nil {
		t.Fatal(err)
	}
	idleReg := addHandler(t, idle, newRecorder())
	h := newRecorder()
	addHandler(t, running, h)
	r := start(t, running) // run by the caller, not by f.Start
	waitDone(t, "informer sync", running.HasSyncedChecker())
	h.wait(t, 2)

	if err := f.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	// The caller's informer still runs, on an open store.
	if storeClosed(t, running.Store()) {
		t.Errorf("Shutdown closed the store of an informer the caller runs")
	}
	<-watching
	if _, err := client.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z", ResourceVersion: "11", UID: "uid-z"}, Data: map[string]string{"v": "z1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(waitLimit)
	for len(h.all()) < 3 {
		select {
		case <-h.changed:
		case <-r.done:
			t.Fatalf("the caller's informer stopped after Factory.Shutdown; events: %v", h.all())
		case <-deadline:
			t.Fatalf("no event after Factory.Shutdown within %v", waitLimit)
		}
	}
	if diff := cmp.Diff(ev{Op: "add", Key: "a/z", Value: "z1", UID: "uid-z"}, h.all()[2]); diff != "" {
		t.Errorf("event after Shutdown (-want +got):\n%s", diff)
	}
	if _, ok := metricValue(t, reg, MetricSynced, "core/v1/configmaps"); !ok {
		t.Errorf("the caller's running informer left its Metrics at Shutdown")
	}
	// Once the caller's Run returns, the store is closed, and the
	// informer is out of its Metrics.
	r.stop()
	if !storeClosed(t, running.Store()) {
		t.Errorf("store of the caller's informer still open after its Run returned")
	}
	if _, ok := metricValue(t, reg, MetricSynced, "core/v1/configmaps"); ok {
		t.Errorf("the stopped informer is still in its Metrics")
	}

	// The informer that never ran: store closed, registrations shut down,
	// metrics gone, and it cannot run on its closed store.
	if !storeClosed(t, idle.Store()) {
		t.Errorf("store of an informer that never ran still open after Shutdown")
	}
	if _, ok := metricValue(t, reg, MetricSynced, "core/v1/secrets"); ok {
		t.Errorf("an informer that never ran is still in its Metrics after Shutdown")
	}
	waitClosed(t, "ShutdownChan of an informer that never ran", shutdownChan(t, idleReg))
	if !idle.IsStopped() {
		t.Errorf("IsStopped = false for an informer shut down before it ran")
	}
	waitClosed(t, "Run after Shutdown", runAsync(ctx, idle))
	if err := f.Shutdown(); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestFactoryShutdownBeforeCallerRunReturns checks that Shutdown does not
// wait for an informer the caller runs (client-go's factory does not
// either): a caller that stops it after Shutdown returns, as deferred
// calls do, must not deadlock.
func TestFactoryShutdownBeforeCallerRunReturns(t *testing.T) {
	client, _ := fakeClientset()
	f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "test", Informer: testOptions()})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := f.InformerFor(t.Context(), configMapsGVR)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	shut := make(chan error, 1)
	go func() { shut <- f.Shutdown() }()
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(waitLimit):
		r.stop()
		err := <-shut
		t.Fatalf("Shutdown waited %v for an informer the caller runs (it returned %v once the informer stopped)", waitLimit, err)
	}
	r.stop()
	if !storeClosed(t, inf.Store()) {
		t.Errorf("store still open after the caller's Run returned")
	}
}

// TestInformerConstructorCloseRemovesMetrics checks that Close takes the
// informers that never ran out of their Metrics, so that a constructor made
// again on the same Metrics (a restarted manager) gets persistent
// informers, not the fallback a duplicate name would cause.
func TestInformerConstructorCloseRemovesMetrics(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync}}
	opts.Informer.Metrics = m
	for round := 1; round <= 2; round++ {
		c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: newAPIServerStub(t).URL}, opts)
		if err != nil {
			t.Fatalf("round %d: NewInformerConstructor: %v", round, err)
		}
		cfg := c.Config()
		inf, ok := c.NewInformer(listedThrough(t, cfg, "", "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
		if !ok {
			_ = c.Close()
			t.Fatalf("round %d: NewInformer fell back to client-go's informer", round)
		}
		if _, ok := metricValue(t, reg, MetricSynced, inf.Name()); !ok {
			t.Errorf("round %d: informer %q not in its Metrics after construction", round, inf.Name())
		}
		if err := c.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if _, ok := metricValue(t, reg, MetricSynced, inf.Name()); ok {
			t.Errorf("round %d: informer %q that never ran still in its Metrics after Close", round, inf.Name())
		}
		if !storeClosed(t, inf.Store()) {
			t.Errorf("round %d: store still open after Close", round)
		}
	}
}

// TestTombstoneWithoutObject checks that a delete whose tombstone carries
// no object never reaches handlers with a nil Obj (DESIGN invariant 4): for
// a key the informer has, it carries the stored object; for a key it does
// not have, handlers hear nothing (client-go's queues only make tombstones
// for objects the informer knows).
func TestTombstoneWithoutObject(t *testing.T) {
	lw := newFakeLW()
	s := openStore(t, "memory://")
	inf := newInformer(t, lw, s, testOptions())
	lw.create("ns", "a", "a1")
	r := start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	r.stop()

	// The queue the informer reads from, fed by hand: the pipeline's own
	// queue only makes tombstones with objects.
	inf2 := newInformer(t, lw, s, testOptions())
	h := newRecorder()
	addHandler(t, inf2, h)
	q := deltafifo.New(&deltafifo.Options{KnownObjects: inf2.view, EmitDeltaTypeReplaced: true})
	for _, key := range []string{"ns/never-seen", "ns/a"} {
		if err := q.Delete(cache.DeletedFinalStateUnknown{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	q.Close()
	inf2.proc.start()
	defer inf2.proc.stop()
	inf2.popLoop(t.Context(), q)

	want := ev{Op: "delete", Key: "ns/a", Value: "a1", UID: "uid-1", Tomb: true}
	if diff := cmp.Diff(want, h.wait(t, 1)[0]); diff != "" {
		t.Errorf("first delete (-want +got):\n%s", diff)
	}
	if _, exists, err := s.GetByKey("ns/a"); err != nil || exists {
		t.Errorf("ns/a after its delete: exists %v, %v", exists, err)
	}
}
