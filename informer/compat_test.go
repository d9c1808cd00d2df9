package informer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

// TestRelistNotifiesUnchangedObjects pins client-go's behaviour on a relist
// (here after a 410): every handler is in the processor's "syncing" set
// until the first resync check, and stays there when the informer does not
// resync, so an object the relist finds unchanged reaches it as
// OnUpdate(old, new) with equal resourceVersions. Controllers rely on that
// relist-as-resync.
func TestRelistNotifiesUnchangedObjects(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	h.wait(t, 1)

	// b is created while the watch is stalled, and the history is compacted:
	// the watch ends with 410 and the reflector relists (a, then b).
	lw.muteWatches()
	lw.create("ns", "b", "b1")
	lw.compact()
	lw.expireWatches()

	want := []ev{
		{Op: "add", Key: "ns/a", Value: "a1", UID: "uid-1", Initial: true},
		{Op: "update", Key: "ns/a", Value: "a1", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"},
		{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2"},
	}
	// The relist's notifications are queued together, a's before b's: once
	// b's add is there, a's update would be before it.
	if diff := cmp.Diff(want, h.wait(t, 3)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestSecondRunKeepsMetrics checks that a second Run, which must return at
// once, does not take the running informer's metrics away.
func TestSecondRunKeepsMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	inf := newInformer(t, lw, openStore(t, "memory://"), metricOptions(m, testingclock.NewFakeClock(time.Unix(1000, 0))))
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	waitMetric(t, reg, 1, MetricSynced, "cms")

	inf.RunWithContext(t.Context()) // already running: returns at once
	if inf.IsStopped() {
		t.Errorf("IsStopped = true after a second Run, want the first still running")
	}
	if v, ok := metricValue(t, reg, MetricSynced, "cms"); !ok || v != 1 {
		t.Errorf("%s = %v (present %v) after a second Run, want 1: the running informer lost its metrics", MetricSynced, v, ok)
	}
	if _, ok := metricValue(t, reg, MetricCommitDuration, "cms"); !ok {
		t.Errorf("%s gone after a second Run", MetricCommitDuration)
	}
}

// TestWatchErrorHandlerCanChainToDefault checks that a watch error handler
// written for client-go, which hands its *cache.Reflector on to
// cache.DefaultWatchErrorHandler or asks it for its type, works: client-go
// never passes a nil reflector, and DefaultWatchErrorHandler dereferences it.
func TestWatchErrorHandlerCanChainToDefault(t *testing.T) {
	lw := newFakeLW()
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	type call struct {
		name, typ string
		err       error
	}
	calls := make(chan call, 16)
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if r == nil {
			calls <- call{err: errors.New("nil *cache.Reflector")}
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
		calls <- call{name: r.Name(), typ: r.TypeDescription(), err: err}
	}); err != nil {
		t.Fatalf("SetWatchErrorHandlerWithContext: %v", err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	waitWatching(t, lw) // expireWatches only reaches open watches
	lw.expireWatches()
	select {
	case c := <-calls:
		if !apierrors.IsResourceExpired(c.err) && !apierrors.IsGone(c.err) {
			t.Fatalf("watch error handler got %v, want 410 Expired with a reflector", c.err)
		}
		if c.name != inf.Name() || c.typ != "*v1.ConfigMap" {
			t.Errorf("reflector Name, TypeDescription = %q, %q; want %q, %q", c.name, c.typ, inf.Name(), "*v1.ConfigMap")
		}
	case <-time.After(waitLimit):
		t.Fatalf("watch error handler not called")
	}
}

// TestFactoryShutdownReleasesMetricsOfUnstartedInformers checks that
// Shutdown takes the informers it never started out of their Metrics, as
// Run does for the others: their stores are closed, and a new factory
// reporting to the same Metrics (a retry after a failed start) must be able
// to make informers under the same names.
func TestFactoryShutdownReleasesMetricsOfUnstartedInformers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := fakeClientset()
	iopts := testOptions()
	iopts.Metrics = m
	newFactory := func() *Factory {
		f, err := NewFactory(t.Context(), "memory://", client, &FactoryOptions{Cluster: "test", Informer: iopts})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		return f
	}
	f := newFactory()
	if _, err := f.InformerFor(t.Context(), configMapsGVR); err != nil {
		t.Fatalf("InformerFor: %v", err)
	}
	if err := f.Shutdown(); err != nil { // never started
		t.Fatalf("Shutdown: %v", err)
	}
	if v, ok := metricValue(t, reg, MetricSynced, "core/v1/configmaps"); ok {
		t.Errorf("%s = %v after Shutdown, want no series for the closed informer", MetricSynced, v)
	}
	f2 := newFactory()
	defer func() { _ = f2.Shutdown() }()
	if _, err := f2.InformerFor(t.Context(), configMapsGVR); err != nil {
		t.Errorf("InformerFor after the first factory shut down: %v", err)
	}
}
