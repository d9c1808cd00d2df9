package informer

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/informerdb/informerdb/store"
)

func TestDeliveryInOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		a := lw.create("ns", "a", "a1")
		lw.create("ns", "b", "b1")
		s := b.open(t)
		inf := newInformer(t, lw, s, testOptions())
		h := newRecorder()
		reg := addHandler(t, inf, h)
		start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		waitDone(t, "handler sync", reg.HasSyncedChecker())

		lw.update("ns", "a", "a2")
		lw.remove("ns", "b")
		lw.create("ns", "c", "c1")
		lw.update("ns", "a", "a3")

		want := []ev{
			{Op: "add", Key: "ns/a", Value: "a1", UID: string(a.UID), Initial: true},
			{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2", Initial: true},
			{Op: "update", Key: "ns/a", Value: "a2", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"},
			{Op: "delete", Key: "ns/b", Value: "b1", UID: "uid-2"},
			{Op: "add", Key: "ns/c", Value: "c1", UID: "uid-3"},
			{Op: "update", Key: "ns/a", Value: "a3", OldVal: "a2", UID: "uid-1", OldUID: "uid-1"},
		}
		if diff := cmp.Diff(want, h.wait(t, len(want))); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(lw.values(), storeValues(inf.GetStore())); diff != "" {
			t.Errorf("store after events (-source +store):\n%s", diff)
		}
		if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
			t.Errorf("store resume point = %q, want %q", got, want)
		}
		if got, want := inf.LastSyncResourceVersion(), lw.currentRV(); got != want {
			t.Errorf("LastSyncResourceVersion = %q, want %q", got, want)
		}
	})
}

// TestNotifiedAfterStoreUpdate checks that a handler reading the store when
// notified finds the object there.
func TestNotifiedAfterStoreUpdate(t *testing.T) {
	lw := newFakeLW()
	s := openStore(t, "memory://")
	inf := newInformer(t, lw, s, testOptions())
	found := make(chan bool, 16)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			_, exists, err := inf.GetStore().GetByKey(keyOf(obj))
			found <- exists && err == nil
		},
		DeleteFunc: func(obj interface{}) {
			_, exists, err := inf.GetStore().GetByKey(keyOf(obj))
			found <- !exists && err == nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	for i, step := range []struct {
		what string
		do   func()
	}{
		{"add", func() { lw.create("ns", "x", "1") }},
		{"delete", func() { lw.remove("ns", "x") }},
	} {
		step.do()
		select {
		case ok := <-found:
			if !ok {
				t.Errorf("notification %d (%s): store not yet updated when handler ran", i, step.what)
			}
		case <-time.After(waitLimit):
			t.Fatalf("no %s notification", step.what)
		}
	}
}

func TestLateHandlerGetsExistingObjects(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	lw.create("ns", "b", "b1")
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	early := newRecorder()
	addHandler(t, inf, early)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	lw.update("ns", "a", "a2")
	early.wait(t, 3) // two initial adds and the update: the store holds a2

	late := newRecorder()
	reg := addHandler(t, inf, late)
	waitDone(t, "late handler sync", reg.HasSyncedChecker())
	lw.create("ns", "c", "c1")

	want := []ev{
		{Op: "add", Key: "ns/a", Value: "a2", UID: "uid-1", Initial: true},
		{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2", Initial: true},
		{Op: "add", Key: "ns/c", Value: "c1", UID: "uid-3"},
	}
	got := late.wait(t, len(want))
	// The initial objects come in store order, which is not specified.
	if got[0].Key > got[1].Key {
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("late handler events (-want +got):\n%s", diff)
	}
}

func TestResyncPerHandlerPeriod(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	fc := testingclock.NewFakeClock(time.Unix(1000, 0))
	opts := testOptions()
	opts.Clock = fc
	opts.ResyncPeriod = time.Minute
	opts.Reflector.Clock = clock.RealClock{}
	inf := newInformer(t, lw, openStore(t, "memory://"), opts)
	resyncing := newRecorder()
	addHandler(t, inf, resyncing) // default period: a minute
	quiet := newRecorder()
	if _, err := inf.AddEventHandlerWithResyncPeriod(quiet, 0); err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	resyncing.wait(t, 1)
	quiet.wait(t, 1)

	fc.Step(time.Minute)
	want := []ev{
		{Op: "add", Key: "ns/a", Value: "a1", UID: "uid-1", Initial: true},
		{Op: "update", Key: "ns/a", Value: "a1", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"},
	}
	if diff := cmp.Diff(want, resyncing.wait(t, 2)); diff != "" {
		t.Errorf("resyncing handler (-want +got):\n%s", diff)
	}
	// The quiet handler's next event is the next change, not a resync.
	lw.create("ns", "b", "b1")
	want = []ev{
		{Op: "add", Key: "ns/a", Value: "a1", UID: "uid-1", Initial: true},
		{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2"},
	}
	if diff := cmp.Diff(want, quiet.wait(t, 2)); diff != "" {
		t.Errorf("handler without resync (-want +got):\n%s", diff)
	}
}

func TestRemoveEventHandler(t *testing.T) {
	lw := newFakeLW()
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	kept, removed := newRecorder(), newRecorder()
	addHandler(t, inf, kept)
	reg := addHandler(t, inf, removed)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	lw.create("ns", "a", "1")
	kept.wait(t, 1)
	removed.wait(t, 1)

	if err := cache.ShutDownEventHandler(inf, reg); err != nil {
		t.Fatalf("ShutDownEventHandler: %v", err)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("second RemoveEventHandler: %v, want nil (idempotent)", err)
	}
	lw.create("ns", "b", "1")
	kept.wait(t, 2)
	if got := len(removed.all()); got != 1 {
		t.Errorf("removed handler got %d events, want 1 (none after removal)", got)
	}
}

func TestHandlerHasSyncedWaitsForItsNotifications(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	slow := newRecorder()
	slow.gate = make(chan struct{})
	reg := addHandler(t, inf, slow)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if reg.HasSynced() {
		t.Errorf("registration HasSynced = true before the handler got its initial add")
	}
	close(slow.gate)
	waitDone(t, "handler sync", reg.HasSyncedChecker())
	if got := len(slow.all()); got != 1 {
		t.Errorf("handler synced after %d events, want 1", got)
	}
}

func TestSlowHandlerDoesNotBlockOthers(t *testing.T) {
	lw := newFakeLW()
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	slow, fast := newRecorder(), newRecorder()
	slow.gate = make(chan struct{})
	addHandler(t, inf, slow)
	addHandler(t, inf, fast)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	const n = 3000 // more than the listener's initial buffer
	for i := 0; i < n; i++ {
		lw.create("ns", "o"+strconv.Itoa(i), "1")
	}
	fast.wait(t, n)
	if got := len(slow.all()); got != 0 {
		t.Errorf("blocked handler recorded %d events", got)
	}
	close(slow.gate)
	got := slow.wait(t, n)
	for i, e := range got {
		if want := "ns/o" + strconv.Itoa(i); e.Key != want {
			t.Fatalf("slow handler event %d is %s, want %s (order lost)", i, e.Key, want)
		}
	}
}

func TestTransform(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	s := openStore(t, "memory://")
	inf := newInformer(t, lw, s, testOptions())
	err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		cm := obj.(*corev1.ConfigMap).DeepCopy()
		cm.Labels = nil
		cm.ResourceVersion = "" // a transform may strip what resumption needs
		cm.Data["v"] = "t-" + cm.Data["v"]
		return cm, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	lw.create("ns", "b", "2")
	// Both versions of a lack a resourceVersion now; the update is still
	// an update, not a resync.
	lw.update("ns", "a", "3")
	want := []ev{
		{Op: "add", Key: "ns/a", Value: "t-1", UID: "uid-1", Initial: true},
		{Op: "add", Key: "ns/b", Value: "t-2", UID: "uid-2"},
		{Op: "update", Key: "ns/a", Value: "t-3", OldVal: "t-1", UID: "uid-1", OldUID: "uid-1"},
	}
	if diff := cmp.Diff(want, h.wait(t, 3)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, obj := range s.List() {
		if cm := obj.(*corev1.ConfigMap); cm.Labels != nil {
			t.Errorf("stored %s kept labels %v; transform not applied", cm.Name, cm.Labels)
		}
	}
	if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point = %q, want %q (read before the transform)", got, want)
	}
	if err := inf.SetTransform(nil); !errors.Is(err, ErrStarted) {
		t.Errorf("SetTransform after start: %v, want ErrStarted", err)
	}
}

func TestIndexersBeforeAndAfterStart(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns1", "a", "x")
	lw.create("ns2", "b", "y")
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	byValue := func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.ConfigMap).Data["v"]}, nil }
	if err := inf.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}); err != nil {
		t.Fatalf("AddIndexers before start: %v", err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if err := inf.AddIndexers(cache.Indexers{"value": byValue}); err != nil {
		t.Fatalf("AddIndexers after start: %v", err)
	}
	lw.create("ns1", "c", "y")
	h := newRecorder()
	addHandler(t, inf, h)
	h.wait(t, 3) // the late handler sees c: the store has it

	keys := func(index, value string) []string {
		t.Helper()
		objs, err := inf.GetIndexer().ByIndex(index, value)
		if err != nil {
			t.Fatalf("ByIndex(%s, %s): %v", index, value, err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, keyOf(o))
		}
		return sortedStrings(out)
	}
	if diff := cmp.Diff([]string{"ns1/a", "ns1/c"}, keys(cache.NamespaceIndex, "ns1")); diff != "" {
		t.Errorf("namespace index (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns1/c", "ns2/b"}, keys("value", "y")); diff != "" {
		t.Errorf("index added after start (-want +got):\n%s", diff)
	}
}

func TestGeneratedListerOnIndexer(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	lw.create("other", "b", "2")
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	if err := inf.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}); err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())

	lister := listersv1.NewConfigMapLister(inf.GetIndexer())
	cm, err := lister.ConfigMaps("ns").Get("a")
	if err != nil {
		t.Fatalf("lister Get: %v", err)
	}
	if cm.Data["v"] != "1" {
		t.Errorf("lister Get returned data %v", cm.Data)
	}
	all, err := lister.List(labels.Everything())
	if err != nil || len(all) != 2 {
		t.Errorf("lister List = %d objects, %v; want 2", len(all), err)
	}
	inNS, err := lister.ConfigMaps("other").List(labels.SelectorFromSet(labels.Set{"app": "test"}))
	if err != nil || len(inNS) != 1 || inNS[0].Name != "b" {
		t.Errorf("namespaced List = %v, %v; want [b]", inNS, err)
	}
}

func TestBadInput(t *testing.T) {
	s := openStore(t, "memory://")
	t.Run("nil ListerWatcher", func(t *testing.T) {
		if _, err := New(nil, &corev1.ConfigMap{}, s, nil); err == nil {
			t.Errorf("New(nil lw) succeeded")
		}
	})
	t.Run("nil store", func(t *testing.T) {
		if _, err := New(newFakeLW(), &corev1.ConfigMap{}, nil, nil); err == nil {
			t.Errorf("New(nil store) succeeded")
		}
	})
	t.Run("negative options", func(t *testing.T) {
		for _, o := range []Options{{ResyncPeriod: -1}, {MaxBatchSize: -1}} {
			if _, err := New(newFakeLW(), &corev1.ConfigMap{}, s, &o); err == nil {
				t.Errorf("New(%+v) succeeded", o)
			}
		}
	})
	t.Run("bad reflector options", func(t *testing.T) {
		o := testOptions()
		o.Reflector.MinWatchTimeout = time.Millisecond
		inf := newInformer(t, newFakeLW(), s, o)
		inf.RunWithContext(t.Context()) // returns at once, logging the error
		if !inf.IsStopped() {
			t.Errorf("informer with invalid reflector options not stopped")
		}
	})
	inf := newInformer(t, newFakeLW(), s, testOptions())
	t.Run("nil handler", func(t *testing.T) {
		if _, err := inf.AddEventHandler(nil); err == nil {
			t.Errorf("AddEventHandler(nil) succeeded")
		}
	})
	t.Run("foreign registration", func(t *testing.T) {
		if err := inf.RemoveEventHandler(nil); err == nil {
			t.Errorf("RemoveEventHandler(nil) succeeded")
		}
	})
	t.Run("setters after start and handlers after stop", func(t *testing.T) {
		r := start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		if err := inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}); !errors.Is(err, ErrStarted) {
			t.Errorf("SetWatchErrorHandler after start: %v, want ErrStarted", err)
		}
		r.stop()
		if !inf.IsStopped() {
			t.Errorf("IsStopped = false after Run returned")
		}
		if _, err := inf.AddEventHandler(newRecorder()); !errors.Is(err, ErrStopped) {
			t.Errorf("AddEventHandler after stop: %v, want ErrStopped", err)
		}
		if err := inf.AddIndexers(cache.Indexers{"x": cache.MetaNamespaceIndexFunc}); !errors.Is(err, ErrStopped) {
			t.Errorf("AddIndexers after stop: %v, want ErrStopped", err)
		}
		inf.RunWithContext(t.Context()) // a second run returns at once
	})
}

// failingStore fails the next failNext commits.
type failingStore struct {
	store.Store
	failNext atomic.Int32
	failed   chan struct{} // receives one value per failed commit
}

func (f *failingStore) Commit(ctx context.Context, b store.Batch) error {
	if f.failNext.Add(-1) >= 0 {
		f.failed <- struct{}{}
		return errors.New("disk on fire")
	}
	return f.Store.Commit(ctx, b)
}

// TestFailedCommitIsRetried checks that a failed commit notifies nothing
// and keeps the resume point, is retried after the backoff, and shows in
// the informer's stats and metrics while it fails.
func TestFailedCommitIsRetried(t *testing.T) {
	lw := newFakeLW()
	inner := openStore(t, "memory://")
	fs := &failingStore{Store: inner, failed: make(chan struct{}, 4)}
	fc := testingclock.NewFakeClock(time.Unix(1000, 0))
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	inf := newInformer(t, lw, fs, metricOptions(m, fc))
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	before := inner.ResourceVersion()

	fs.failNext.Store(1)
	lw.create("ns", "a", "1")
	select {
	case <-fs.failed:
	case <-time.After(waitLimit):
		t.Fatalf("no commit attempted")
	}
	// The apply loop now waits for its retry timer on the fake clock.
	for !fc.HasWaiters() {
		runtime.Gosched()
	}
	if got := h.all(); len(got) != 0 {
		t.Errorf("handler notified of a failed commit: %v", got)
	}
	if got := inner.ResourceVersion(); got != before {
		t.Errorf("resume point moved to %q by a failed commit, want %q", got, before)
	}
	// The event, and whatever else the watch delivered meanwhile (its
	// first bookmark may come after the sync): the gathering goes on
	// while the commit fails.
	st := inf.Stats()
	if st.CommitFailures != 1 || st.PendingDeltas < 1 {
		t.Errorf("stats while the commit is retried: %d failures, %d deltas pending; want 1 and at least 1", st.CommitFailures, st.PendingDeltas)
	}
	if !st.CommitFailingSince.Equal(fc.Now()) || st.LastCommitError == nil || !strings.Contains(st.LastCommitError.Error(), "disk on fire") {
		t.Errorf("stats while the commit is retried: failing since %v with %v; want since %v with the store's error", st.CommitFailingSince, st.LastCommitError, fc.Now())
	}
	checkMetrics(t, reg, "cms", map[string]float64{MetricCommitFailures: 1, MetricCommitFailing: 0})
	if v, _ := metricValue(t, reg, MetricDeltasPending, "cms"); v < 1 {
		t.Errorf("%s = %v while the commit is retried; want at least 1", MetricDeltasPending, v)
	}
	// A full disk may be freed: the liveness check fails only once the
	// commit has been failing for its limit (here shorter than the retry's
	// backoff, which the step must not reach).
	const limit = commitRetryInitial / 2
	if err := inf.CheckCommits(limit); err != nil {
		t.Errorf("CheckCommits(%v) right after the failure = %v, want nil", limit, err)
	}
	if err := inf.CheckCommits(0); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("CheckCommits(0) while a commit is retried = %v, want its error", err)
	}
	fc.Step(limit)
	if err := inf.CheckCommits(limit); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("CheckCommits(%v) after failing for %v = %v, want the commit's error", limit, limit, err)
	}
	checkMetrics(t, reg, "cms", map[string]float64{MetricCommitFailing: limit.Seconds()})
	fc.Step(commitRetryInitial - limit)
	want := []ev{{Op: "add", Key: "ns/a", Value: "1", UID: "uid-1"}}
	if diff := cmp.Diff(want, h.wait(t, 1)); diff != "" {
		t.Errorf("events after retry (-want +got):\n%s", diff)
	}
	if got, want := inner.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point after retry = %q, want %q", got, want)
	}
	waitMetric(t, reg, 0, MetricDeltasPending, "cms")
	if st := inf.Stats(); st.CommitFailures != 1 || !st.CommitFailingSince.IsZero() || st.LastCommitError != nil {
		t.Errorf("stats after the retry: %d commit failures, failing since %v with %v; want 1, zero and nil", st.CommitFailures, st.CommitFailingSince, st.LastCommitError)
	}
	if err := inf.CheckCommits(0); err != nil {
		t.Errorf("CheckCommits(0) after the retry succeeded = %v, want nil", err)
	}
	checkMetrics(t, reg, "cms", map[string]float64{MetricCommitFailing: 0})
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestWatchErrorHandler(t *testing.T) {
	lw := newFakeLW()
	inf := newInformer(t, lw, openStore(t, "memory://"), testOptions())
	errs := make(chan error, 16)
	if err := inf.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
		if r == nil {
			t.Errorf("watch error handler got a nil *cache.Reflector; client-go never passes nil")
		}
		errs <- err
	}); err != nil {
		t.Fatalf("SetWatchErrorHandler: %v", err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	waitWatching(t, lw) // expireWatches only reaches open watches
	lw.expireWatches()
	select {
	case err := <-errs:
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("watch error handler got %v, want 410 Expired", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("watch error handler not called")
	}
}
