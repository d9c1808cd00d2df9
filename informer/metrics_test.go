package informer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// metricValue returns the value of the series name{informer=inf,
// extra...} in reg: a counter's or gauge's value, a histogram's sample
// count (sum, when name ends in "_sum"). ok is false when there is no such
// series.
func metricValue(t *testing.T, reg prometheus.Gatherer, name, inf string, extra ...string) (float64, bool) {
	t.Helper()
	family := strings.TrimSuffix(name, "_sum")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	want := map[string]string{"informer": inf}
	for i := 0; i+1 < len(extra); i += 2 {
		want[extra[i]] = extra[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if want[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.GetHistogram() != nil && family != name:
				return m.GetHistogram().GetSampleSum(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// waitMetric waits until the series reaches want (see waitLimit: not a
// timing assertion).
func waitMetric(t *testing.T, reg prometheus.Gatherer, want float64, name, inf string, extra ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got, ok := metricValue(t, reg, name, inf, extra...)
		if ok && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{informer=%q %v} = %v (present %v), want %v", name, inf, extra, got, ok, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkMetrics compares several series at once.
func checkMetrics(t *testing.T, reg prometheus.Gatherer, inf string, want map[string]float64) {
	t.Helper()
	got := map[string]float64{}
	for key := range want {
		parts := strings.Split(key, ",")
		v, ok := metricValue(t, reg, parts[0], inf, parts[1:]...)
		if !ok {
			v = -1
		}
		got[key] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics of %s (-want +got; -1: absent):\n%s", inf, diff)
	}
}

func relistsWant(reason string, n float64) map[string]float64 {
	m := map[string]float64{}
	for _, r := range reflector.Reasons {
		v := 0.0
		if r == reason {
			v = n
		}
		m[MetricRelists+",reason,"+r] = v
	}
	return m
}

func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// metricOptions are test options with metrics and a fake informer clock;
// the reflector keeps the real clock, so that its backoff and watch
// timeouts need no stepping.
func metricOptions(m *Metrics, fc clock.WithTicker) Options {
	o := testOptions()
	o.Name = "cms"
	o.Metrics = m
	o.Clock = fc
	o.Reflector.Clock = clock.RealClock{}
	return o
}

// TestMetricsMove drives an informer through a cold start, watch events, a
// stop, a resume and an expired watch, and checks that each metric moves
// with its event.
func TestMetricsMove(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	fc := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	lw := newFakeLW()
	for _, n := range []string{"a", "b", "c"} {
		lw.create("ns", n, n)
	}
	s := openStore(t, "memory://")

	inf := newInformer(t, lw, s, metricOptions(m, fc))
	// Registered from New: zeros, not synced, no resume point yet.
	checkMetrics(t, reg, "cms", merge(relistsWant("", 0), map[string]float64{
		MetricResumes: 0, MetricSynced: 0, MetricStoreObjects: 0, MetricHandlerQueue: 0, MetricResumePointAge: -1,
		MetricCommitDuration: 0,
	}))
	r := start(t, inf)
	waitDone(t, "cold start", inf.HasSyncedChecker())
	// The watch after the list starts with a bookmark, applied as a delta
	// (at the list's resourceVersion: no commit).
	waitMetric(t, reg, 4, MetricDeltasApplied, "cms")
	checkMetrics(t, reg, "cms", merge(relistsWant(reflector.ReasonCold, 1), map[string]float64{
		MetricResumes: 0, MetricSynced: 1, MetricStoreObjects: 3, MetricBookmarks: 1,
		MetricListRequests: 1, MetricWatchRequests: 1, MetricWatchEvents: 0,
		MetricCommitObjects + "_sum": 3, MetricCommitDuration: 1, MetricResumePointAge: 0,
	}))

	// The resume point ages with the clock until an event moves it.
	fc.Step(7 * time.Second)
	checkMetrics(t, reg, "cms", map[string]float64{MetricResumePointAge: 7})
	lw.create("ns", "d", "d")
	lw.update("ns", "a", "a2")
	waitMetric(t, reg, 6, MetricDeltasApplied, "cms")
	checkMetrics(t, reg, "cms", map[string]float64{
		MetricWatchEvents: 2, MetricStoreObjects: 4, MetricCommitObjects + "_sum": 5, MetricResumePointAge: 0,
	})
	if n, _ := metricValue(t, reg, MetricCommitDuration, "cms"); n < 2 {
		t.Errorf("%s count %v after the events, want at least 2 commits", MetricCommitDuration, n)
	}

	// A stopped informer leaves the registry.
	r.stop()
	if v, ok := metricValue(t, reg, MetricSynced, "cms"); ok {
		t.Errorf("%s = %v after Run returned, want no series", MetricSynced, v)
	}
	if v, ok := metricValue(t, reg, MetricCommitDuration, "cms"); ok {
		t.Errorf("%s count = %v after Run returned, want no series", MetricCommitDuration, v)
	}

	// A restart under the same name resumes.
	lw.create("ns", "e", "e")
	inf2 := newInformer(t, lw, s, metricOptions(m, fc))
	start(t, inf2)
	waitDone(t, "resume", inf2.HasSyncedChecker())
	checkMetrics(t, reg, "cms", merge(relistsWant("", 0), map[string]float64{
		MetricResumes: 1, MetricSynced: 1, MetricStoreObjects: 5,
	}))

	// An expired watch relists.
	waitWatching(t, lw)
	lw.compact()
	lw.expireWatches()
	waitMetric(t, reg, 1, MetricRelists, "cms", "reason", reflector.ReasonExpired)
	checkMetrics(t, reg, "cms", merge(relistsWant(reflector.ReasonExpired, 1), map[string]float64{MetricResumes: 1}))

	checkFamilies(t, reg)
}

// checkFamilies checks the name, type and labels of every family reg
// exposes (prometheus/testutil is not usable here: its diff dependency is
// not in go.sum).
func checkFamilies(t *testing.T, reg prometheus.Gatherer) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]dto.MetricType{
		MetricResumes: dto.MetricType_COUNTER, MetricRelists: dto.MetricType_COUNTER,
		MetricListRequests: dto.MetricType_COUNTER, MetricWatchRequests: dto.MetricType_COUNTER,
		MetricWatchEvents: dto.MetricType_COUNTER, MetricBookmarks: dto.MetricType_COUNTER,
		MetricDroppedEvents: dto.MetricType_COUNTER, MetricRejectedChanges: dto.MetricType_COUNTER,
		MetricDeltasApplied: dto.MetricType_COUNTER, MetricDeltasPending: dto.MetricType_GAUGE,
		MetricQueueLength:    dto.MetricType_GAUGE,
		MetricCommitFailures: dto.MetricType_COUNTER, MetricCommitFailing: dto.MetricType_GAUGE,
		MetricCommitDuration: dto.MetricType_HISTOGRAM,
		MetricCommitObjects:  dto.MetricType_HISTOGRAM, MetricStoreObjects: dto.MetricType_GAUGE,
		MetricHandlerQueue: dto.MetricType_GAUGE, MetricHandlerLag: dto.MetricType_GAUGE,
		MetricResumePointAge: dto.MetricType_GAUGE, MetricSynced: dto.MetricType_GAUGE,
		MetricStoreReadErrors: dto.MetricType_COUNTER,
	}
	got := map[string]dto.MetricType{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetType()
		if mf.GetHelp() == "" {
			t.Errorf("%s has no help", mf.GetName())
		}
		for _, m := range mf.GetMetric() {
			var names []string
			for _, lp := range m.GetLabel() {
				names = append(names, lp.GetName())
			}
			wantLabels := []string{"informer"}
			if mf.GetName() == MetricRelists {
				wantLabels = []string{"informer", "reason"}
			}
			if diff := cmp.Diff(wantLabels, names); diff != "" {
				t.Errorf("%s labels (-want +got):\n%s", mf.GetName(), diff)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metric families (-want +got):\n%s", diff)
	}
}

// waitWatching waits until lw has an open watch, so that expireWatches
// reaches the informer (a resumed informer may sync before it watches).
func waitWatching(t *testing.T, lw *fakeLW) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		lw.mu.Lock()
		n := len(lw.watchers)
		lw.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no watch opened")
		}
		time.Sleep(time.Millisecond)
	}
}

// blockingHandler blocks every call until its gate is opened.
type blockingHandler struct {
	gate chan struct{}
	once sync.Once
}

func (h *blockingHandler) open()                   { h.once.Do(func() { close(h.gate) }) }
func (h *blockingHandler) OnAdd(interface{}, bool) { <-h.gate }
func (h *blockingHandler) OnUpdate(_, _ interface{}) {
	<-h.gate
}
func (h *blockingHandler) OnDelete(interface{}) { <-h.gate }

// TestMetricsHandlerQueue checks the queue depth and lag of a handler that
// does not keep up.
func TestMetricsHandlerQueue(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	fc := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	lw := newFakeLW()
	for _, n := range []string{"a", "b", "c"} {
		lw.create("ns", n, n)
	}
	inf := newInformer(t, lw, openStore(t, "memory://"), metricOptions(m, fc))
	h := &blockingHandler{gate: make(chan struct{})}
	addHandler(t, inf, h)
	start(t, inf)
	t.Cleanup(h.open) // runs before the informer's stop
	// The handler runs the first add and does not return; the other two
	// wait: three unfinished.
	waitMetric(t, reg, 3, MetricHandlerQueue, "cms")
	checkMetrics(t, reg, "cms", map[string]float64{MetricHandlerLag: 0})
	fc.Step(5 * time.Second)
	checkMetrics(t, reg, "cms", map[string]float64{MetricHandlerLag: 5, MetricHandlerQueue: 3})
	lw.create("ns", "d", "d")
	waitMetric(t, reg, 4, MetricHandlerQueue, "cms")
	fc.Step(2 * time.Second)
	// The oldest unfinished notification sets the lag.
	checkMetrics(t, reg, "cms", map[string]float64{MetricHandlerLag: 7})
	h.open()
	waitMetric(t, reg, 0, MetricHandlerQueue, "cms")
	checkMetrics(t, reg, "cms", map[string]float64{MetricHandlerLag: 0})
}

// TestMetricsScopeChange reopens a bolt store for another scope: the
// relist is counted and logged as a scope change, not a cold start.
func TestMetricsScopeChange(t *testing.T) {
	u := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	open := func(scope string) store.Store {
		codec, err := indexer.NewCodec(&corev1.ConfigMap{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(t.Context(), u, &store.Options{Name: "v1/configmaps", Codec: codec, Scope: scope, Durability: store.DurabilityNoSync})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	lw := newFakeLW()
	lw.create("ns", "a", "a")
	s := open("namespace=ns")
	inf := newInformer(t, lw, s, testOptions())
	r := start(t, inf)
	waitDone(t, "first run", inf.HasSyncedChecker())
	r.stop()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open("namespace=")
	defer s.Close()
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	inf = newInformer(t, lw, s, metricOptions(m, testingclock.NewFakeClock(time.Unix(1, 0))))
	r = startLogged(t, inf, logs)
	waitDone(t, "after the scope change", inf.HasSyncedChecker())
	checkMetrics(t, reg, "cms", merge(relistsWant(reflector.ReasonScopeChange, 1), map[string]float64{MetricResumes: 0}))
	r.stop()
	if diff := cmp.Diff([]string{`"msg"="Listing" "reflector"="cms" "reason"="scope-change"`}, logs.trimmed()); diff != "" {
		t.Errorf("default-verbosity log (-want +got):\n%s", diff)
	}
}

func TestNewMetricsErrors(t *testing.T) {
	if _, err := NewMetrics(nil); err == nil || !strings.Contains(err.Error(), "nil prometheus.Registerer") {
		t.Errorf("NewMetrics(nil): %v, want an error", err)
	}
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if _, err := NewMetrics(reg); !errors.As(err, &are) {
		t.Errorf("NewMetrics on the same registry twice: %v, want AlreadyRegisteredError", err)
	}
	lw := newFakeLW()
	o := testOptions()
	o.Metrics, o.Name = m, "same"
	if _, err := New(lw, &corev1.ConfigMap{}, openStore(t, "memory://"), &o); err != nil {
		t.Fatal(err)
	}
	if _, err := New(lw, &corev1.ConfigMap{}, openStore(t, "memory://"), &o); !errors.Is(err, errDuplicateName) || !strings.Contains(err.Error(), "same") {
		t.Errorf("second informer named %q on one Metrics: %v, want errDuplicateName", o.Name, err)
	}
	// Without Options.Name, the store's name labels the informer.
	o.Name = ""
	inf, err := New(lw, &corev1.ConfigMap{}, openStore(t, "memory://"), &o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inf.Name(), "v1/configmaps"; got != want {
		t.Errorf("Name() = %q, want the store's name %q", got, want)
	}
	if _, ok := metricValue(t, reg, MetricSynced, "v1/configmaps"); !ok {
		t.Errorf("no %s series for the informer named after its store", MetricSynced)
	}
}

// logLines records the lines of a default-verbosity logger.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 0})
}

// trimmed returns the lines from the message on, without the key/value
// pairs that vary from run to run (resourceVersions, targets).
func (l *logLines) trimmed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if i := strings.Index(line, `"msg"=`); i >= 0 {
			line = line[i:]
		}
		var keep []string
		for _, kv := range strings.Split(line, " ") {
			k, _, _ := strings.Cut(kv, "=")
			switch k {
			case `"msg"`, `"reflector"`, `"reason"`:
				keep = append(keep, kv)
			default:
				if len(keep) > 0 && !strings.HasPrefix(kv, `"`) {
					// A space inside the message.
					keep[len(keep)-1] += " " + kv
				}
			}
		}
		out = append(out, strings.Join(keep, " "))
	}
	return out
}

// startLogged runs inf with a logger recording default-verbosity lines.
func startLogged(t *testing.T, inf *Informer, l *logLines) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), l.logger()))
	r := &running{inf: inf, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(r.stop)
	return r
}

// TestLogOneLinePerResumeOrRelist checks that at default verbosity the
// informer says exactly one line per resume or relist, with the reason, and
// nothing else while it applies events.
func TestLogOneLinePerResumeOrRelist(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "a")
	s := openStore(t, "memory://")
	opts := testOptions()
	opts.Name = "cms"

	logs := &logLines{}
	inf := newInformer(t, lw, s, opts)
	r := startLogged(t, inf, logs)
	waitDone(t, "cold start", inf.HasSyncedChecker())
	h := newRecorder()
	addHandler(t, inf, h)
	lw.create("ns", "b", "b")
	lw.update("ns", "a", "a2")
	lw.remove("ns", "b")
	h.wait(t, 4) // the initial add of a, then the three events
	r.stop()
	if diff := cmp.Diff([]string{`"msg"="Listing" "reflector"="cms" "reason"="cold"`}, logs.trimmed()); diff != "" {
		t.Errorf("cold start, default-verbosity log (-want +got):\n%s", diff)
	}

	logs = &logLines{}
	inf = newInformer(t, lw, s, opts)
	r = startLogged(t, inf, logs)
	waitDone(t, "resume", inf.HasSyncedChecker())
	waitWatching(t, lw)
	lw.compact()
	lw.expireWatches()
	deadline := time.Now().Add(waitLimit)
	for inf.Stats().Reflector.Relists.Expired == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no relist after the watch expired")
		}
		time.Sleep(time.Millisecond)
	}
	r.stop()
	want := []string{
		`"msg"="Resuming watch" "reflector"="cms"`,
		`"msg"="Listing" "reflector"="cms" "reason"="expired"`,
	}
	if diff := cmp.Diff(want, logs.trimmed()); diff != "" {
		t.Errorf("resume then expiry, default-verbosity log (-want +got):\n%s", diff)
	}
}

var _ cache.ResourceEventHandler = (*blockingHandler)(nil)

// sizedStore hides its store's Len (so the informer counts keys) and
// reports a disk size.
type sizedStore struct {
	store.Store
	size int64
}

func (s sizedStore) DiskSize() (int64, error) { return s.size, nil }

func TestMetricsStoreSize(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	lw := newFakeLW()
	s := openStore(t, "memory://")
	if _, ok := s.(store.Lener); !ok {
		t.Fatalf("%T does not implement store.Lener", s)
	}
	for _, n := range []string{"a", "b"} {
		if err := s.Add(lw.create("ns", n, n)); err != nil {
			t.Fatal(err)
		}
	}
	o := testOptions()
	o.Metrics, o.Name = m, "plain"
	if _, err := New(lw, &corev1.ConfigMap{}, s, &o); err != nil {
		t.Fatal(err)
	}
	o.Name = "sized"
	if _, err := New(lw, &corev1.ConfigMap{}, sizedStore{Store: s, size: 12345}, &o); err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, reg, "plain", map[string]float64{MetricStoreObjects: 2, MetricStoreBytes: -1})
	checkMetrics(t, reg, "sized", map[string]float64{MetricStoreObjects: 2, MetricStoreBytes: 12345})
}

// TestMetricsRelistReasons restarts an informer on a stored resume point in
// situations that each force a relist for one reason, and checks that the
// relist is counted under that reason alone.
func TestMetricsRelistReasons(t *testing.T) {
	tests := []struct {
		reason string
		// restart prepares the source and options of the second run,
		// given the first run's source.
		restart func(t *testing.T, lw *fakeLW, o *Options) *fakeLW
		// wipe starts the second run on an empty store, as an
		// application that deleted a damaged database does.
		wipe bool
		// resumes is how many resumes the second run counts.
		resumes float64
	}{
		{reason: reflector.ReasonTimeTravel, restart: func(t *testing.T, lw *fakeLW, o *Options) *fakeLW {
			// The server was restored from a backup older than the
			// resume point.
			older := newFakeLW()
			older.create("ns", "a", "a")
			return older
		}},
		{reason: reflector.ReasonCatchUp, restart: func(t *testing.T, lw *fakeLW, o *Options) *fakeLW {
			// A change the informer must catch up with, on a server
			// whose watches hold back every event.
			lw.create("ns", "late", "x")
			gate := make(chan struct{})
			lw.setGate(gate)
			t.Cleanup(func() { close(gate) })
			o.Reflector.CatchUpDeadline = time.Millisecond
			return lw
		}, resumes: 1},
		{reason: reflector.ReasonCorrupt, wipe: true, restart: func(t *testing.T, lw *fakeLW, o *Options) *fakeLW {
			o.Reflector.ColdReason = reflector.ReasonCorrupt
			return lw
		}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			lw := newFakeLW()
			for _, n := range []string{"a", "b", "c"} {
				lw.create("ns", n, n)
			}
			s := openStore(t, "memory://")
			inf := newInformer(t, lw, s, testOptions())
			r := start(t, inf)
			waitDone(t, "first run", inf.HasSyncedChecker())
			r.stop()
			if tc.wipe {
				s = openStore(t, "memory://")
			}

			reg := prometheus.NewPedanticRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			o := metricOptions(m, testingclock.NewFakeClock(time.Unix(1, 0)))
			lw2 := tc.restart(t, lw, &o)
			inf = newInformer(t, lw2, s, o)
			start(t, inf)
			waitMetric(t, reg, 1, MetricRelists, "cms", "reason", tc.reason)
			checkMetrics(t, reg, "cms", merge(relistsWant(tc.reason, 1), map[string]float64{MetricResumes: tc.resumes}))
		})
	}
}

// TestREADMEListsEveryMetric keeps the README's metric table in step with
// what NewMetrics registers.
func TestREADMEListsEveryMetric(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `informerdb_"); ok {
			name, _, _ := strings.Cut(rest, "`")
			listed["informerdb_"+name] = true
		}
	}
	ch := make(chan *prometheus.Desc, 64)
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []prometheus.Collector{m.commitDuration, m.commitObjects, collector{m}} {
		c.Describe(ch)
	}
	close(ch)
	registered := map[string]bool{}
	for d := range ch {
		// Desc has no name accessor; its String form starts with it.
		s := d.String()
		i := strings.Index(s, `fqName: "`)
		if i < 0 {
			t.Fatalf("cannot read the name of %s", s)
		}
		name, _, _ := strings.Cut(s[i+len(`fqName: "`):], `"`)
		registered[name] = true
	}
	if diff := cmp.Diff(registered, listed); diff != "" {
		t.Errorf("README metric table (-registered +listed):\n%s", diff)
	}
}

// TestMetricsDroppedEvents checks that a watch event the queue refuses
// (here: the transform fails on it) is counted as dropped, and that the
// events after it are applied.
func TestMetricsDroppedEvents(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	lw := newFakeLW()
	inf := newInformer(t, lw, openStore(t, "memory://"), metricOptions(m, testingclock.NewFakeClock(time.Unix(1, 0))))
	if err := inf.SetTransform(func(obj interface{}) (interface{}, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == "bad" {
			return nil, errors.New("the transform refuses bad")
		}
		return obj, nil
	}); err != nil {
		t.Fatalf("SetTransform: %v", err)
	}
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "cold start", inf.HasSyncedChecker())
	checkMetrics(t, reg, "cms", map[string]float64{MetricDroppedEvents: 0})

	lw.create("ns", "bad", "x")
	lw.create("ns", "good", "y")
	if got := h.wait(t, 1); got[0].Key != "ns/good" {
		t.Errorf("first event after the refused one = %+v, want the add of ns/good", got[0])
	}
	waitMetric(t, reg, 1, MetricDroppedEvents, "cms")
	if _, ok, _ := inf.GetStore().GetByKey("ns/bad"); ok {
		t.Errorf("the refused object is in the store")
	}
}

// TestMetricsRejectedChanges: changes the store refuses (here an index
// function refuses v=bad) in a relist and in the watch, a create and an
// update, are left out and counted, and the informer goes on.
func TestMetricsRejectedChanges(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := openRefusingStore(t)
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	lw.create("ns", "r", "bad")
	inf := newInformer(t, lw, s, metricOptions(m, testingclock.NewFakeClock(time.Unix(1, 0))))
	start(t, inf)
	waitDone(t, "cold start", inf.HasSyncedChecker())
	checkMetrics(t, reg, "cms", map[string]float64{MetricRejectedChanges: 1})

	lw.create("ns", "w", "bad")
	lw.update("ns", "a", "bad")
	lw.create("ns", "z", "2")
	waitMetric(t, reg, 3, MetricRejectedChanges, "cms")
	if got := inf.Stats().Rejected; got != 3 {
		t.Errorf("Stats().Rejected = %d, want 3", got)
	}
	pollUntil(t, "ns/z, created after the refused changes, committed", func() string {
		if _, ok, _ := s.GetByKey("ns/z"); !ok {
			return "ns/z not in the store"
		}
		return ""
	})
	if obj, _, _ := s.GetByKey("ns/a"); obj.(*corev1.ConfigMap).Data["v"] != "1" {
		t.Errorf("ns/a = %v after its refused update, want v=1", obj)
	}
}

// TestMetricsQueueLength holds the store's commits: the group being
// committed and the next one (MaxBatchSize operations) leave the rest of
// the events in the queue, which informerdb_queue_length counts, and
// which drains once the commits go through.
func TestMetricsQueueLength(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedStore{Store: openStore(t, "memory://"), entered: make(chan int, 100), release: make(chan struct{})}
	opts := metricOptions(m, clock.RealClock{})
	opts.MaxBatchSize = 2
	lw, inf, _ := runGrouped(t, g, opts)
	if st := inf.Stats(); st.Queued != 0 {
		t.Errorf("%d entries queued after the sync; want 0", st.Queued)
	}
	g.closed.Store(true)
	const events = 20
	for i := range events {
		lw.create("ns", fmt.Sprintf("q%02d", i), "v")
	}
	<-g.entered // a commit of the first group is held
	// Out of the queue: the held group, the next one gathered meanwhile,
	// and a pop carried over to the group after it, each of at most 2
	// deltas (a pop hands out no more than a group takes). The other
	// events wait in the queue, one entry each.
	const least = events - 3*2
	waitQueued(t, inf, least)
	if v, _ := metricValue(t, reg, MetricQueueLength, "cms"); v < least {
		t.Errorf("%s = %v while commits are held; want at least %d", MetricQueueLength, v, least)
	}
	g.closed.Store(false)
	close(g.release)
	waitMetric(t, reg, 0, MetricQueueLength, "cms")
	waitMetric(t, reg, 0, MetricDeltasPending, "cms")
}
