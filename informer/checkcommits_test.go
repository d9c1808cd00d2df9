package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// failCommits makes inf report a commit that has been failing for ago with
// err, as its apply loop does while it retries one.
func failCommits(inf *Informer, ago time.Duration, err error) {
	inf.stats.failing.Store(&commitFailure{since: inf.opts.Clock.Now().Add(-ago), err: err})
}

// wantCheck checks that err, a CheckCommits result over several informers,
// names exactly the informers of want and wraps their errors.
func wantCheck(t *testing.T, what string, err error, want map[string]error) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s = %v, want nil", what, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("%s = nil, want the errors of %d informers", what, len(want))
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Errorf("%s = %v, want the errors of %d informers joined", what, err, len(want))
	}
	for name, cause := range want {
		if !strings.Contains(err.Error(), "informer "+name+":") || !errors.Is(err, cause) {
			t.Errorf("%s = %v, want it to name informer %s and wrap %v", what, err, name, cause)
		}
	}
	names := slices.Sorted(maps.Keys(want))
	for i := 1; i < len(names); i++ {
		if strings.Index(err.Error(), "informer "+names[i-1]+":") > strings.Index(err.Error(), "informer "+names[i]+":") {
			t.Errorf("%s = %v, want the informers in the order of their names %q", what, err, names)
		}
	}
}

func TestFactoryCheckCommits(t *testing.T) {
	ctx := t.Context()
	client, _ := fakeClientset()
	f, err := NewFactory(ctx, "bolt://"+filepath.Join(t.TempDir(), "cache.db"), client, &FactoryOptions{Informer: testOptions()})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	t.Cleanup(func() { _ = f.Shutdown() })
	cms, err := f.InformerFor(ctx, configMapsGVR)
	if err != nil {
		t.Fatalf("InformerFor(configmaps): %v", err)
	}
	secrets, err := f.InformerFor(ctx, schema.GroupVersionResource{Version: "v1", Resource: "secrets"})
	if err != nil {
		t.Fatalf("InformerFor(secrets): %v", err)
	}
	wantCheck(t, "CheckCommits(0) before any failure", f.CheckCommits(0), nil)

	full := fmt.Errorf("commit: %w", syscall.ENOSPC)
	failCommits(cms, time.Minute, full)
	wantCheck(t, "CheckCommits(2m) with a commit failing for 1m", f.CheckCommits(2*time.Minute), nil)
	wantCheck(t, "CheckCommits(30s) with a commit failing for 1m", f.CheckCommits(30*time.Second), map[string]error{cms.name: syscall.ENOSPC})

	stopped := fmt.Errorf("commit: %w: fsync: %w", store.ErrWritesStopped, syscall.EIO)
	failCommits(secrets, 0, stopped)
	wantCheck(t, "CheckCommits(30s) with two failing", f.CheckCommits(30*time.Second),
		map[string]error{cms.name: syscall.ENOSPC, secrets.name: store.ErrWritesStopped})
	wantCheck(t, "CheckCommits(2m) with writes stopped", f.CheckCommits(2*time.Minute), map[string]error{secrets.name: store.ErrWritesStopped})
}

func TestInformerConstructorCheckCommits(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	c, err := NewInformerConstructor(ctx, "bolt://"+filepath.Join(t.TempDir(), "cache.db"), &rest.Config{Host: srv.URL}, &ConstructorOptions{Cluster: "c1", Informer: testOptions()})
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	cfg := c.Config()
	made := map[string]*Informer{}
	for _, ns := range []string{"a", "b"} {
		inf, ok := c.NewInformer(listedThrough(t, cfg, ns, "", newFakeLW()), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
		if !ok {
			t.Fatalf("NewInformer(namespace %s) fell back to client-go's informer", ns)
		}
		made[ns] = inf
	}
	wantCheck(t, "CheckCommits(0) before any failure", c.CheckCommits(0), nil)
	stopped := fmt.Errorf("commit: %w: fsync: %w", store.ErrWritesStopped, syscall.EIO)
	failCommits(made["b"], 0, stopped)
	wantCheck(t, "CheckCommits(1h) with writes stopped", c.CheckCommits(time.Hour), map[string]error{made["b"].name: store.ErrWritesStopped})
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantCheck(t, "CheckCommits(1h) after Close", c.CheckCommits(time.Hour), nil)
}

// stoppedStore fails every commit as a persistent store does after a
// failed fsync.
type stoppedStore struct {
	store.Store
	failed chan struct{} // receives one value per failed commit
}

func (s *stoppedStore) Commit(context.Context, store.Batch) error {
	select {
	case s.failed <- struct{}{}:
	default:
	}
	return fmt.Errorf("commit: %w: fsync: %w", store.ErrWritesStopped, syscall.EIO)
}

// timerClock is a fake clock that records the durations of the timers
// made with NewTimer.
type timerClock struct {
	*testingclock.FakeClock
	mu     sync.Mutex
	timers []time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.timers = append(c.timers, d)
	c.mu.Unlock()
	return c.FakeClock.NewTimer(d)
}

func (c *timerClock) made() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.timers)
}

// TestCheckCommitsWritesStopped checks that the liveness check fails at
// once when the store refuses writes until it is reopened, whatever its
// limit, that the informer then retries at its longest interval only, and
// that the check passes again once the informer stopped retrying.
func TestCheckCommitsWritesStopped(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	ss := &stoppedStore{Store: openStore(t, "memory://"), failed: make(chan struct{}, 1)}
	fc := &timerClock{FakeClock: testingclock.NewFakeClock(time.Unix(1000, 0))}
	opts := testOptions()
	opts.Clock = fc
	opts.Reflector.Clock = clock.RealClock{}
	inf := newInformer(t, lw, ss, opts)
	r := start(t, inf)
	select {
	case <-ss.failed:
	case <-time.After(waitLimit):
		t.Fatalf("no commit attempted")
	}
	for !fc.HasWaiters() { // the apply loop waits to retry
		runtime.Gosched()
	}
	err := inf.CheckCommits(time.Hour)
	if !errors.Is(err, store.ErrWritesStopped) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "restarts") {
		t.Errorf("CheckCommits(1h) while the store refuses writes = %v, want at once an error wrapping store.ErrWritesStopped and EIO that says to restart", err)
	}
	if got := fc.made(); !slices.Equal(got, []time.Duration{commitRetryMax}) {
		t.Errorf("timers made after the store refused a write: %v, want one retry in %v", got, commitRetryMax)
	}
	r.stop()
	if err := inf.CheckCommits(0); err != nil {
		t.Errorf("CheckCommits(0) after the informer stopped = %v, want nil: nothing is retried", err)
	}
}

// gatedStagingStore stages its batches (as the memory, bolt and badger
// stores do) and fails the first failPersist Persists of the batch that
// starts with failKey; while a gate is set, the first commit that starts,
// staged or not, waits for it to open.
type gatedStagingStore struct {
	store.Store
	failKey     string
	failPersist atomic.Int32
	failed      chan struct{} // a value per failed Persist
	prepared    chan string   // the first key of each batch prepared

	mu      sync.Mutex
	gate    chan struct{} // the next commit waits for it to close
	entered chan struct{} // a value when a commit waits at the gate
}

// hold makes the next commit wait until the returned function is called,
// and registers that call as a cleanup of t (run before the informer's
// own: a failed test must not leave its informer waiting at the gate).
func (s *gatedStagingStore) hold(t *testing.T) (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

// wait holds a commit at the gate, if one is set.
func (s *gatedStagingStore) wait() {
	s.mu.Lock()
	gate := s.gate
	s.gate = nil
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		<-gate
	}
}

func (s *gatedStagingStore) Commit(ctx context.Context, b store.Batch) error {
	s.wait()
	return s.Store.Commit(ctx, b)
}

func (s *gatedStagingStore) PrepareBatch(b store.Batch) (store.PreparedBatch, error) {
	pb, err := s.Store.(store.BatchPreparer).PrepareBatch(b)
	if err != nil {
		return nil, err
	}
	sb, ok := pb.(store.StagedBatch)
	if !ok {
		return nil, fmt.Errorf("a batch of %T is not staged", s.Store)
	}
	s.prepared <- b.Ops[0].Key
	return gatedStaged{StagedBatch: sb, s: s, key: b.Ops[0].Key}, nil
}

type gatedStaged struct {
	store.StagedBatch
	s   *gatedStagingStore
	key string // of the batch's first operation
}

func (p gatedStaged) Persist(ctx context.Context) (func(), error) {
	if p.key == p.s.failKey && p.s.failPersist.Add(-1) >= 0 {
		p.s.failed <- struct{}{}
		return nil, errors.New("disk on fire")
	}
	p.s.wait()
	return p.StagedBatch.Persist(ctx)
}

// failingSeen records, for every object added, whether the informer
// reported a failing commit when the handler heard of it.
type failingSeen struct {
	inf  *Informer
	mu   sync.Mutex
	seen map[string]bool
	got  chan string
}

func (h *failingSeen) OnAdd(obj interface{}, _ bool) {
	failing := !h.inf.Stats().CommitFailingSince.IsZero() || h.inf.CheckCommits(0) != nil
	h.mu.Lock()
	h.seen[keyOf(obj)] = failing
	h.mu.Unlock()
	h.got <- keyOf(obj)
}
func (h *failingSeen) OnUpdate(_, _ interface{}) {}
func (h *failingSeen) OnDelete(interface{})      {}

// TestFailedStagedCommitIsRetried checks a staged commit (persisted, then
// applied and notified on another goroutine) that fails: it is retried, and
// the handlers hear of it only once the informer stopped reporting it as
// failing, so a liveness check never fails on a commit that got through.
func TestFailedStagedCommitIsRetried(t *testing.T) {
	lw := newFakeLW()
	// Nothing but z and a may reach the queue: a bookmark queued behind z
	// would be the group waiting for the committer, and a would wait in
	// the queue unprepared.
	lw.noBookmarks = true
	ss := &gatedStagingStore{Store: openStore(t, "memory://"), failKey: "ns/a", failed: make(chan struct{}, 4), prepared: make(chan string, 64), entered: make(chan struct{}, 1)}
	fc := testingclock.NewFakeClock(time.Unix(1000, 0))
	opts := testOptions()
	opts.Clock = fc
	opts.Reflector.Clock = clock.RealClock{}
	opts.MaxBatchSize = 1 // a group is complete with one object: prepared while the committer is busy
	inf := newInformer(t, lw, ss, opts)
	h := &failingSeen{inf: inf, seen: map[string]bool{}, got: make(chan string, 64)}
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	waitWatching(t, lw)

	// Hold the committer in z's commit, so that a's group is prepared,
	// staged, while it waits; a's Persist then fails once.
	ss.failPersist.Store(1)
	release := ss.hold(t)
	lw.create("ns", "z", "1")
	receive(t, "a commit held at the gate", ss.entered)
	lw.create("ns", "a", "1")
	for receive(t, "a's batch prepared ahead", ss.prepared) != "ns/a" {
	}
	release()
	receive(t, "a failed Persist", ss.failed)
	for !fc.HasWaiters() { // the committer waits to retry
		runtime.Gosched()
	}
	if err := inf.CheckCommits(0); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("CheckCommits(0) while a staged commit is retried = %v, want its error", err)
	}
	h.mu.Lock()
	_, heard := h.seen["ns/a"]
	h.mu.Unlock()
	if heard {
		t.Errorf("handler heard of ns/a, whose commit failed")
	}

	// Hold the applying goroutine after it notified a's retried commit
	// until the handler has heard of it, so that whatever the informer
	// does after notifying comes too late for the handler. z's commit,
	// which succeeded, is notified first.
	for receive(t, "z's notification", h.got) != "ns/z" {
	}
	hold := func() {
		deadline := time.Now().Add(waitLimit)
		for time.Now().Before(deadline) {
			h.mu.Lock()
			_, heard := h.seen["ns/a"]
			h.mu.Unlock()
			if heard {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	inf.afterNotify.Store(&hold)
	fc.Step(commitRetryInitial)
	for receive(t, "the retried commit's notification", h.got) != "ns/a" {
	}
	h.mu.Lock()
	failing := h.seen["ns/a"]
	h.mu.Unlock()
	if failing {
		t.Errorf("the handler heard of ns/a while the informer still reported its commit as failing")
	}
	if err := inf.CheckCommits(0); err != nil {
		t.Errorf("CheckCommits(0) after the retry = %v, want nil", err)
	}
}

// receive returns the next value of ch, failing the test after waitLimit.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for %s", waitLimit, what)
		panic("unreachable")
	}
}

// readFailingStore is a store whose reads without an error result can fail,
// as a bounded-mode bolt or badger store's do on a damaged record.
type readFailingStore struct {
	store.Store
	driver.ReadFailures
}

// TestCheckCommitsFailsAfterAFailedRead: a read the store could not return
// an error from (listers then miss objects) fails the liveness check for
// good, with the store's error, and is counted in Stats and the metrics.
func TestCheckCommitsFailsAfterAFailedRead(t *testing.T) {
	lw := newFakeLW()
	s := &readFailingStore{Store: openStore(t, "memory://")}
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	inf := newInformer(t, lw, s, metricOptions(m, testingclock.NewFakeClock(time.Now())))
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if err := inf.CheckCommits(time.Minute); err != nil {
		t.Fatalf("CheckCommits before any failed read: %v", err)
	}
	damage := fmt.Errorf("bolt: store v1/configmaps: record ns/a: checksum mismatch: %w", store.ErrCorrupt)
	s.Failed(damage)
	s.Failed(damage)
	err = inf.CheckCommits(time.Minute)
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "ns/a") {
		t.Errorf("CheckCommits after a failed read = %v, want the store's error (ErrCorrupt, naming the record)", err)
	}
	if st := inf.Stats(); st.ReadErrors != 2 || !errors.Is(st.ReadError, store.ErrCorrupt) {
		t.Errorf("Stats: ReadErrors %d, ReadError %v; want 2 and the store's error", st.ReadErrors, st.ReadError)
	}
	checkMetrics(t, reg, "cms", map[string]float64{MetricStoreReadErrors: 2})
}
