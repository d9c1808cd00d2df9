package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/test/apiserver"
)

// Sizes of TestBackpressureHeldCommits.
const (
	// bpMaxQueued and bpMaxBatch are small so that the queue's bound is
	// hit within the first few dozen events.
	bpMaxQueued = 20
	bpMaxBatch  = 5
	// bpPreexisting ConfigMaps exist before the cold start; bpCreated are
	// created while commits are held.
	bpPreexisting = 20
	bpCreated     = 1000
	// bpPayload is the size of each ConfigMap's incompressible data. The
	// watch events made while commits are held (about 10 MB) must exceed
	// what the HTTP/2 stream buffers on the client (a 4 MiB window) and
	// the server's watcher channels, so that the API server's watcher
	// blocks and is closed for unresponsiveness.
	bpPayload = 8 << 10
	// bpCloseWait bounds how long commits stay held after the last change
	// while the test waits for the server to close the watch: the cacher
	// closes a blocked watcher as soon as its dispatch budget (a fraction
	// of a second) runs out, so this is only slack for its dispatch.
	bpCloseWait = 5 * time.Second
)

// TestBackpressureHeldCommits checks informer.Options.MaxQueued on a real
// API server: while the store's commits are held, the informer's queue
// holds at most MaxQueued events and the reflector stops reading the
// watch; the API server meanwhile closes the watcher it cannot write to.
// Once commits go through again, the reflector drains what was buffered,
// watches again from the last event it queued, and the handler gets every
// change exactly once, in per-key order, without a relist.
func TestBackpressureHeldCommits(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	sel := selection{namespace: "backpressure"}
	createNamespace(t, c, sel.namespace)

	want := newScript()
	pre := make([]*corev1.ConfigMap, bpPreexisting)
	for i := range pre {
		cm, err := c.CoreV1().ConfigMaps(sel.namespace).Create(t.Context(), bigConfigMap(sel.namespace, fmt.Sprintf("pre-%02d", i), i), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pre-existing configmap: %v", err)
		}
		pre[i] = cm
		want.add(cm.Name, ev{Op: "add", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion, Initial: true})
	}

	hs := &holdStore{Store: openStore(t, srv, "memory://", sel)}
	r, watchErrs := startBackpressureInformer(t, srv, hs, sel)
	// Registered after startBackpressureInformer's cleanup, so it runs
	// first: a test that fails while commits are held still stops.
	t.Cleanup(hs.release)
	r.waitSynced(t)
	synced := r.inf.Stats()
	if synced.Reflector.Relists != (reflector.RelistStats{Cold: 1}) {
		t.Fatalf("relists at cold start: %+v, want one cold", synced.Reflector.Relists)
	}
	terminatedBefore := terminatedWatchers(t, c)

	heldAt := time.Now()
	hs.hold()
	// The queue's bound is sampled throughout the hold, not only at the
	// few points the test looks.
	sampler := startQueueSampler(r.inf)
	defer sampler.stop()

	// The changes, from a few goroutines; each key's changes are made in
	// order by one goroutine, so that the order of its events is known.
	runWorkers(t, 8, bpCreated, func(i int) error { return changeCreated(t.Context(), c, sel.namespace, i, want) })
	checkQueued(t, r.inf, "after the creates")
	for i, cm := range pre {
		if err := changePreexisting(t.Context(), c, cm, i, want); err != nil {
			t.Fatal(err)
		}
	}
	checkQueued(t, r.inf, "after the changes to pre-existing ConfigMaps")

	// The reflector must be blocked on a full queue, behind a held commit:
	// otherwise nothing here tests back-pressure.
	waitUntil(t, "the queue to fill", func() (bool, error) {
		return r.inf.Stats().Queued == bpMaxQueued && hs.waiting.Load() > 0, nil
	})
	// Hold on until the server has closed the watch, or a while past the
	// last change: a server that keeps it open is a valid outcome too.
	closedDeadline := time.Now().Add(bpCloseWait)
	serverClosed := false
	for !serverClosed && time.Now().Before(closedDeadline) {
		serverClosed = terminatedWatchers(t, c) > terminatedBefore
		checkQueued(t, r.inf, "while waiting for the server to close the watch")
		if !serverClosed {
			time.Sleep(100 * time.Millisecond)
		}
	}
	held := r.inf.Stats()
	maxSeen, samples := sampler.stop()
	hs.release()
	holdTime := time.Since(heldAt)
	if maxSeen > bpMaxQueued {
		t.Errorf("Stats().Queued reached %d while held, want at most MaxQueued %d", maxSeen, bpMaxQueued)
	}

	server := waitConverged(t, c, r.store, sel)
	total := want.len()
	r.rec.waitFor(t, "every change to reach the handler", func(evs []ev) bool { return len(evs) >= total })
	final := r.inf.Stats()
	terminated := terminatedWatchers(t, c) - terminatedBefore
	r.stop(t)
	// Read after stop, so that a duplicate delivered late is counted too.
	got := r.rec.events()

	if diff := cmp.Diff(want.byKey(), byKey(blankDeleteRVs(got))); diff != "" {
		t.Errorf("handler notifications per key (-made +delivered):\n%s", diff)
	}
	if diff := cmp.Diff(server, viewOf(got)); diff != "" {
		t.Errorf("server state vs. what the handler was told (-server +handler):\n%s", diff)
	}
	for _, e := range got {
		if e.Tomb {
			t.Errorf("tombstone (a relist's delete): %+v", e)
		}
	}
	if final.Reflector.Relists != synced.Reflector.Relists {
		t.Errorf("relists: %+v after the cold start, %+v at the end, want no more", synced.Reflector.Relists, final.Reflector.Relists)
	}
	if final.Reflector.Dropped != 0 || final.CommitFailures != 0 {
		t.Errorf("dropped events %d, commit failures %d, want none", final.Reflector.Dropped, final.CommitFailures)
	}
	t.Logf("held commits for %v; %d changes (%d notifications); Stats().Queued while held: max %d over %d samples, %d at release (PendingDeltas %d)",
		holdTime.Round(time.Millisecond), total-bpPreexisting, total, maxSeen, samples, held.Queued, held.PendingDeltas)
	t.Logf("server closed %d watcher(s) for unresponsiveness; reflector: %d watch-lists and %d lists at sync, %d watches at release, %d at the end (%d opened after release); events %d at release, %d at the end; bookmarks %d at release, %d at the end; relists %+v; commits %d",
		terminated, synced.Reflector.WatchLists, synced.Reflector.Lists, held.Reflector.Watches, final.Reflector.Watches,
		final.Reflector.Watches-held.Reflector.Watches, held.Reflector.Events, final.Reflector.Events,
		held.Reflector.Bookmarks, final.Reflector.Bookmarks, final.Reflector.Relists, final.Commits)
	for _, e := range watchErrs.events() {
		t.Logf("watch error handler: %s", e)
	}
}

// holdStore is a store whose commits can be held, as a store whose disk
// is full makes the informer wait, without the retries' noise.
type holdStore struct {
	store.Store
	mu sync.Mutex
	// gate, when non-nil, is what held commits wait on; release closes it.
	gate chan struct{}
	// waiting counts the commits waiting at the gate.
	waiting atomic.Int64
}

func (s *holdStore) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

// release lets held commits through and stops holding new ones. It is
// idempotent.
func (s *holdStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

func (s *holdStore) Commit(ctx context.Context, b store.Batch) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		s.waiting.Add(1)
		select {
		case <-gate:
			s.waiting.Add(-1)
		case <-ctx.Done():
			s.waiting.Add(-1)
			return ctx.Err()
		}
	}
	return s.Store.Commit(ctx, b)
}

// startBackpressureInformer runs an informer of sel on s with a small queue
// bound and a recording handler, like startInformerOn. The watch errors
// it reports are recorded too: a closed watch shows there.
func startBackpressureInformer(t *testing.T, srv *apiserver.Server, s store.Store, sel selection) (*running, *eventLog[string]) {
	t.Helper()
	errs := newEventLog[string]()
	inf, err := informer.New(sel.listWatch(srv.Client()), &corev1.ConfigMap{}, s, &informer.Options{
		MaxBatchSize: bpMaxBatch,
		MaxQueued:    bpMaxQueued,

		WatchErrorHandler: func(_ context.Context, _ *cache.Reflector, err error) {
			errs.record(fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
		},
		Reflector: reflector.Options{
			Name:    "e2e-backpressure",
			Backoff: reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		},
	})

	if err != nil {
		t.Fatalf("informer.New: %v", err)
	}
	return runRecorded(t, inf, s), &errs
}

// queueSampler records the largest Stats().Queued of an informer, sampled
// every few milliseconds until stop.
type queueSampler struct {
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	max     atomic.Int64
	samples atomic.Int64
}

func startQueueSampler(inf *informer.Informer) *queueSampler {
	s := &queueSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			q := inf.Stats().Queued
			s.samples.Add(1)
			if q > s.max.Load() {
				s.max.Store(q)
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	})
	return s
}

// stop ends the sampling and returns the largest value seen and the number
// of samples. It is idempotent.
func (s *queueSampler) stop() (maxQueued, samples int64) {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
	return s.max.Load(), s.samples.Load()
}

func checkQueued(t *testing.T, inf *informer.Informer, when string) {
	t.Helper()
	if q := inf.Stats().Queued; q > bpMaxQueued {
		t.Errorf("%s: Stats().Queued %d, want at most MaxQueued %d", when, q, bpMaxQueued)
	}
}

// script is the notifications the changes made must lead to, per key in
// the order they were made. It is safe for concurrent use.
type script struct {
	mu   sync.Mutex
	keys map[string][]ev
}

func newScript() *script { return &script{keys: map[string][]ev{}} }

func (s *script) add(name string, e ev) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[name] = append(s.keys[name], e)
}

func (s *script) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, evs := range s.keys {
		n += len(evs)
	}
	return n
}

func (s *script) byKey() map[string][]ev {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]ev, len(s.keys))
	for k, evs := range s.keys {
		out[k] = append([]ev(nil), evs...)
	}
	return out
}

func byKey(evs []ev) map[string][]ev {
	out := map[string][]ev{}
	for _, e := range evs {
		out[e.Name] = append(out[e.Name], e)
	}
	return out
}

// bigConfigMap is a ConfigMap with bpPayload bytes of data that does not
// compress, seeded by seed.
func bigConfigMap(ns, name string, seed int) *corev1.ConfigMap {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6270))
	raw := make([]byte, bpPayload*3/4)
	for i := 0; i+8 <= len(raw); i += 8 {
		binary.LittleEndian.PutUint64(raw[i:], rng.Uint64())
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "bp"}},
		Data:       map[string]string{"payload": base64.StdEncoding.EncodeToString(raw), "data": "v1"},
	}
}

// changeCreated creates the ConfigMap bp-<i> and, for some i, updates it,
// deletes it, or deletes and re-creates it, recording in want what the
// handler must be told.
func changeCreated(ctx context.Context, c kubernetes.Interface, ns string, i int, want *script) error {
	cms := c.CoreV1().ConfigMaps(ns)
	name := fmt.Sprintf("bp-%05d", i)
	cm, err := cms.Create(ctx, bigConfigMap(ns, name, bpPreexisting+i), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	want.add(name, ev{Op: "add", Name: name, UID: string(cm.UID), RV: cm.ResourceVersion})
	switch {
	case i%10 == 3:
		_, err = updateRecorded(ctx, c, cm, "v2", want)
	case i%20 == 7:
		err = deleteRecorded(ctx, c, cm, want)
	case i%50 == 11:
		if err = deleteRecorded(ctx, c, cm, want); err != nil {
			return err
		}
		if cm, err = cms.Create(ctx, bigConfigMap(ns, name, -i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("re-create %s: %w", name, err)
		}
		want.add(name, ev{Op: "add", Name: name, UID: string(cm.UID), RV: cm.ResourceVersion})
		_, err = updateRecorded(ctx, c, cm, "v2", want)
	}
	return err
}

// changePreexisting updates or deletes some of the ConfigMaps the informer
// had at its cold start.
func changePreexisting(ctx context.Context, c kubernetes.Interface, cm *corev1.ConfigMap, i int, want *script) error {
	switch i % 4 {
	case 0:
		cur, err := updateRecorded(ctx, c, cm, "v2", want)
		if err != nil {
			return err
		}
		_, err = updateRecorded(ctx, c, cur, "v3", want)
		return err
	case 1:
		return deleteRecorded(ctx, c, cm, want)
	case 2:
		_, err := updateRecorded(ctx, c, cm, "v2", want)
		if err != nil {
			return err
		}
		return deleteRecorded(ctx, c, cm, want)
	}
	return nil
}

func updateRecorded(ctx context.Context, c kubernetes.Interface, old *corev1.ConfigMap, data string, want *script) (*corev1.ConfigMap, error) {
	upd := old.DeepCopy()
	upd.Data["data"] = data
	cur, err := c.CoreV1().ConfigMaps(old.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", old.Name, err)
	}
	want.add(cur.Name, ev{Op: "update", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion, OldUID: string(old.UID), OldRV: old.ResourceVersion})
	return cur, nil
}

// deleteRecorded deletes cm; the notification's resourceVersion (the
// deletion's, which the client never learns) is left blank.
func deleteRecorded(ctx context.Context, c kubernetes.Interface, cm *corev1.ConfigMap, want *script) error {
	err := c.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	if err != nil {
		return fmt.Errorf("delete %s: %w", cm.Name, err)
	}
	want.add(cm.Name, ev{Op: "delete", Name: cm.Name, UID: string(cm.UID)})
	return nil
}

// runWorkers runs do(i) for i in [0, n) on workers goroutines, each taking
// every workers-th i, and fails the test with the first error.
func runWorkers(t *testing.T, workers, n int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// terminatedWatchers is the API server's count of ConfigMap watchers it
// closed because they did not keep up (apiserver_terminated_watchers_total:
// the watch cache could not hand them an event within its budget).
func terminatedWatchers(t *testing.T, c kubernetes.Interface) int64 {
	t.Helper()
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_terminated_watchers_total{") || !strings.Contains(line, `resource="configmaps"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int64(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return n
}
