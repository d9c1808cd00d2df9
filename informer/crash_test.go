package informer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// The end-to-end statement of DESIGN invariants 1 and 2: whenever the
// process dies, the store holds exactly the server's state at the
// persisted resume point R (every event at or before R applied, none after
// it), and an informer restarted on that store ends up with exactly the
// server's state, without a handler seeing an object go back to an older
// resourceVersion. The tests below crash the informer before each commit
// in turn: the store refuses the commit and every later one (a process
// killed at that instant), the informer is stopped, and the store is
// checked, reopened and resumed from. The commits counted start with the
// one a scenario holds, if any: the crash may come before it too.
//
// Objects whose data "v" is "bad" are refused by the store (an index
// function fails on them). Like events the queue refuses (see the
// reflector's Caveats), such changes are skipped: the key keeps its last
// state the store accepted, and the resume point moves past them.
//
// The scenarios are in crashScenarios. Elsewhere: TestRefusedRelist (a
// relist the queue refuses commits nothing), TestRejectedObjectOneByOne
// (the last resort for rejected batches), and, for the queues alone,
// deltafifo's TestRestartConverges and TestResumePoint (reordering by
// DeltaFIFO, bookmarks and resyncs).

// badValue is the data "v" the store's "strict" index refuses.
const badValue = "bad"

// addStrict adds to s an index whose function fails on bad objects. A
// store reused in-process keeps it across restarts.
func addStrict(t *testing.T, s store.Store) {
	t.Helper()
	err := s.AddIndexers(cache.Indexers{"strict": func(obj interface{}) ([]string, error) {
		if cm := obj.(*corev1.ConfigMap); cm.Data["v"] == badValue {
			return nil, fmt.Errorf("no index value for %s", cm.Name)
		}
		return []string{"ok"}, nil
	}})
	if err != nil && !errors.Is(err, store.ErrIndexExists) {
		t.Fatalf("AddIndexers: %v", err)
	}
}

// crashStore wraps a store: once armed with a budget of n, it lets n
// commits through and refuses the next and every later one, waiting until
// the informer gives up on it (its context ends), as a process killed
// before that commit would. Independently, holdNext makes the next commit
// report on held and wait for release, so that a test can line up what the
// informer pops meanwhile.
type crashStore struct {
	store.Store
	held    chan struct{}
	release chan struct{}
	crashed chan struct{} // closed at the first refused commit

	mu      sync.Mutex // guards the fields below
	hold    bool
	armed   bool
	budget  int
	crashes bool
}

// newCrashStore wraps s. The store it returns prepares batches ahead
// (store.BatchPreparer) exactly when s does, and gates prepared commits
// too.
func newCrashStore(s store.Store) (*crashStore, store.Store) {
	c := &crashStore{Store: s, held: make(chan struct{}), release: make(chan struct{}), crashed: make(chan struct{})}
	if _, ok := s.(store.BatchPreparer); ok {
		return c, crashPreparer{c}
	}
	return c, c
}

func (c *crashStore) holdNext() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = true
}

func (c *crashStore) arm(budget int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.budget = true, budget
}

// gate decides the fate of one commit: nil lets it through. A held
// commit, once released, counts against the budget like any other.
func (c *crashStore) gate(ctx context.Context) error {
	c.mu.Lock()
	hold := c.hold
	c.hold = false
	c.mu.Unlock()
	if hold {
		c.held <- struct{}{}
		select {
		case <-c.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	crash := false
	if c.armed {
		if c.budget == 0 {
			crash = true
			if !c.crashes {
				c.crashes = true
				close(c.crashed)
			}
		} else {
			c.budget--
		}
	}
	c.mu.Unlock()
	if crash {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (c *crashStore) Commit(ctx context.Context, b store.Batch) error {
	if err := c.gate(ctx); err != nil {
		return err
	}
	return c.Store.Commit(ctx, b)
}

type crashPreparer struct{ *crashStore }

func (p crashPreparer) PrepareBatch(b store.Batch) (store.PreparedBatch, error) {
	pb, err := p.Store.(store.BatchPreparer).PrepareBatch(b)
	if err != nil {
		return nil, err
	}
	return crashPrepared{c: p.crashStore, pb: pb}, nil
}

type crashPrepared struct {
	c  *crashStore
	pb store.PreparedBatch
}

func (cp crashPrepared) Commit(ctx context.Context) error {
	if err := cp.c.gate(ctx); err != nil {
		return err
	}
	return cp.pb.Commit(ctx)
}

// stateAt returns key -> data "v" of the objects after every event at or
// before rv, skipping the puts of bad objects (the store refuses them and
// the key keeps its previous state): what a store whose resume point is rv
// must hold.
func (f *fakeLW) stateAt(rv string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	upTo, err := parseRV(rv)
	if err != nil {
		panic("fakeLW: stateAt " + rv)
	}
	out := map[string]string{}
	for _, e := range f.history {
		if rvOf(e.Object) > upTo {
			break
		}
		cm := e.Object.(*corev1.ConfigMap)
		k := cmKey(cm.Namespace, cm.Name)
		switch {
		case e.Type == watch.Deleted:
			delete(out, k)
		case cm.Data["v"] != badValue:
			out[k] = cm.Data["v"]
		}
	}
	return out
}

// sendBookmark sends the open watches a bookmark at the current
// resourceVersion.
func (f *fakeLW) sendBookmark() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watchers {
		w.send(watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: f.fmtRV(f.rv)},
		}})
	}
}

// rvWatcher is a handler that records every update that takes an object
// back to an older resourceVersion than the one the handler last had, and
// closes last when it is handed the add of ns/after: handlers are called in
// order, so it has been handed everything before that by then.
type rvWatcher struct {
	last      chan struct{}
	mu        sync.Mutex
	backwards []string
}

func rvNumber(obj interface{}) int64 {
	n, _ := parseRV(cmOf(obj).ResourceVersion)
	return n
}

func (w *rvWatcher) OnAdd(obj interface{}, _ bool) {
	if keyOf(obj) == "ns/after" {
		close(w.last)
	}
}
func (w *rvWatcher) OnDelete(interface{}) {}
func (w *rvWatcher) OnUpdate(oldObj, newObj interface{}) {
	if o, n := rvNumber(oldObj), rvNumber(newObj); n < o {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.backwards = append(w.backwards, fmt.Sprintf("%s: %d (v=%s) -> %d (v=%s)",
			keyOf(newObj), o, cmOf(oldObj).Data["v"], n, cmOf(newObj).Data["v"]))
	}
}

func (w *rvWatcher) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.backwards...)
}

// crashScenario changes the server while an informer runs. It calls arm
// once the commits among which the crash is to happen are next.
type crashScenario struct {
	name string
	opts func(o *Options)
	run  func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func())
}

// crashScenarios are the interleavings tried. Each starts from a synced
// informer whose store holds ns/a, ns/b and ns/c at v=1.
var crashScenarios = []crashScenario{
	{
		// A relist whose batch the store rejects (one listed object is
		// bad) falls back to applying what it accepts: that must still
		// be one commit with the list resourceVersion (invariant 2).
		name: "relist with a rejected object",
		run: func(t *testing.T, lw *fakeLW, _ *Informer, _ *crashStore, arm func()) {
			lw.muteWatches()
			lw.update("ns", "a", "2")
			lw.update("ns", "a", "3")
			lw.remove("ns", "b")
			lw.create("ns", "bad", badValue)
			lw.create("ns", "d", "1")
			arm()
			lw.expireWatches()
		},
	},
	{
		// A group the store rejects (one object is bad) falls back the
		// same way: the rest of the group and its resume point must be
		// one commit, or a crash leaves objects ahead of the resume point
		// and a restart replays older states over them.
		name: "group with a rejected object",
		opts: func(o *Options) { o.MaxBatchDelay, o.MaxBatchSize = time.Millisecond, 100 },
		run: func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func()) {
			holdCommitOf(t, lw, c, "first")
			lw.update("ns", "a", "2")
			lw.update("ns", "a", "3")
			lw.create("ns", "bad", badValue)
			lw.create("ns", "d", "1")
			lw.remove("ns", "b")
			waitPending(t, inf, 5) // first (held), a, bad, d, b
			arm()
			c.release <- struct{}{}
		},
	},
	{
		// A relist popped while the previous group is being committed:
		// committed after that group, alone; both hold rejected objects.
		name: "relist while a group commits",
		opts: func(o *Options) { o.MaxBatchDelay, o.MaxBatchSize = time.Millisecond, 100 },
		run: func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func()) {
			holdCommitOf(t, lw, c, "first")
			lw.update("ns", "a", "2")
			lw.create("ns", "e", "1")
			lw.create("ns", "x", badValue)
			waitPending(t, inf, 4) // first (held), a, e, x
			lw.muteWatches()
			lw.update("ns", "a", "3")
			lw.remove("ns", "b")
			lw.remove("ns", "e")
			lw.create("ns", "bad", badValue)
			lw.create("ns", "d", "1")
			lw.expireWatches()
			waitPending(t, inf, 7) // and b, bad and d from the relist
			arm()
			c.release <- struct{}{}
		},
	},
	{
		// A key changed, then changed into an object the store rejects,
		// in one group: the first change stands, as it would had each
		// change been committed on its own.
		name: "group in which a key turns bad",
		opts: func(o *Options) { o.MaxBatchDelay, o.MaxBatchSize = time.Millisecond, 100 },
		run: func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func()) {
			holdCommitOf(t, lw, c, "first")
			lw.update("ns", "a", "2")
			lw.update("ns", "a", badValue)
			lw.create("ns", "d", "1")
			lw.update("ns", "d", badValue)
			lw.update("ns", "c", "2")
			lw.create("ns", "e", badValue)
			waitPending(t, inf, 5) // first (held), a, c, d, e
			arm()
			c.release <- struct{}{}
		},
	},
	{
		// A bookmark popped behind events that are not committed yet
		// moves the resume point only with them.
		name: "bookmark behind uncommitted events",
		opts: func(o *Options) { o.MaxBatchDelay, o.MaxBatchSize = time.Millisecond, 100 },
		run: func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func()) {
			holdCommitOf(t, lw, c, "first")
			lw.update("ns", "a", "2")
			lw.remove("ns", "b")
			lw.sendBookmark()
			lw.create("ns", "d", "1")
			waitPending(t, inf, 4) // first (held), a, b, d
			arm()
			c.release <- struct{}{}
		},
	},
}

// holdCommitOf creates name and waits until its commit is held.
func holdCommitOf(t *testing.T, lw *fakeLW, c *crashStore, name string) {
	t.Helper()
	c.holdNext()
	lw.create("ns", name, "1")
	select {
	case <-c.held:
	case <-time.After(waitLimit):
		t.Fatalf("the commit of %s was not held", name)
	}
}

// TestCrashAtEveryCommit runs each crash scenario once per commit it
// takes, crashing before that commit, on every backend; see the comment at
// the top of this file for what it checks.
func TestCrashAtEveryCommit(t *testing.T) {
	for _, sc := range crashScenarios {
		t.Run(sc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend) {
				for k := 0; ; k++ {
					crashed := false
					t.Run("crash="+strconv.Itoa(k), func(t *testing.T) {
						crashed = crashAt(t, b, sc, k)
					})
					if !crashed || t.Failed() {
						return
					}
					if k == 20 {
						t.Fatalf("scenario still crashes after %d commits", k)
					}
				}
			})
		})
	}
}

// crashAt runs sc on a fresh store of b, refusing every commit after the
// first k once sc arms the store, then restarts. It reports whether a
// commit was refused.
func crashAt(t *testing.T, b backend, sc crashScenario, k int) bool {
	opts := testOptions()
	if sc.opts != nil {
		sc.opts(&opts)
	}
	lw, inner, crashed := crashFirstRun(t, b, sc, opts, func(s store.Store) { addStrict(t, s) }, k)

	rv := inner.ResourceVersion()
	if diff := cmp.Diff(lw.stateAt(rv), storeValues(inner)); diff != "" {
		t.Errorf("crash before commit %d: the store is not the server's state at its resume point %s (-server at %[2]s +store):\n%s", k, rv, diff)
	}

	// Restart: a new informer on the reopened store, against the same
	// server, which changes once more while the informer catches up.
	s2 := b.restart(t, inner)
	addStrict(t, s2)
	inf2 := newInformer(t, lw, s2, testOptions())
	w := &rvWatcher{last: make(chan struct{})}
	addHandler(t, inf2, w)
	start(t, inf2)
	lw.create("ns", "after", "1")
	waitDone(t, "restarted informer sync", inf2.HasSyncedChecker())
	if !waitApplied(t, lw, s2, nil) {
		t.Fatal("restarted informer did not catch up")
	}
	select {
	case <-w.last:
	case <-time.After(waitLimit):
		t.Fatal("handler not handed the add of ns/after")
	}
	if got := w.seen(); len(got) > 0 {
		t.Errorf("crash before commit %d: after the restart, handlers saw objects go back to older resourceVersions: %v", k, got)
	}
	return crashed
}

// crashFirstRun runs an informer with opts on a fresh store of b (prepared
// by prepare, when set) until it applied three creates, then runs sc,
// refusing every commit after the first k once sc arms the store, and stops
// the informer. It returns the server, the store and whether a commit was
// refused.
func crashFirstRun(t *testing.T, b backend, sc crashScenario, opts Options, prepare func(store.Store), k int) (*fakeLW, store.Store, bool) {
	t.Helper()
	lw := newFakeLW()
	lw.noBookmarks = true // every commit is the scenario's
	inner := b.open(t)
	if prepare != nil {
		prepare(inner)
	}
	c, s := newCrashStore(inner)
	inf := newInformer(t, lw, s, opts)
	r := start(t, inf)
	waitDone(t, "first run sync", inf.HasSyncedChecker())
	for _, n := range []string{"a", "b", "c"} {
		lw.create("ns", n, "1")
	}
	if !waitApplied(t, lw, inner, nil) {
		t.Fatal("first events not applied")
	}

	sc.run(t, lw, inf, c, func() { c.arm(k) })
	crashed := !waitApplied(t, lw, inner, c.crashed)
	r.stop()
	return lw, inner, crashed
}

// waitApplied waits until s holds the server's current state (bad objects
// left out) with the current resourceVersion as its resume point, and
// returns true; or returns false as soon as stop is closed.
func waitApplied(t *testing.T, lw *fakeLW, s store.Store, stop <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		rv := lw.currentRV()
		if s.ResourceVersion() == rv && cmp.Equal(lw.stateAt(rv), storeValues(s)) {
			return true
		}
		select {
		case <-stop:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("store not caught up after %v: resume point %q, want %q; (-server, bad objects left out, +store):\n%s",
				waitLimit, s.ResourceVersion(), rv, cmp.Diff(lw.stateAt(rv), storeValues(s)))
		}
		time.Sleep(time.Millisecond)
	}
}

// refusingStore is a store without store.BatchPreparer whose Commit
// refuses, as invalid, every batch holding an object with data "v" =
// "refuse", as a codec that cannot encode it would: the informer cannot
// tell which operation it refuses without committing. It counts commits.
type refusingStore struct {
	store.Store
	mu      sync.Mutex
	commits int
}

func (r *refusingStore) Commit(ctx context.Context, b store.Batch) error {
	r.mu.Lock()
	r.commits++
	r.mu.Unlock()
	for _, op := range b.Ops {
		if cm, ok := op.Object.(*corev1.ConfigMap); ok && op.Type == store.OpPut && cm.Data["v"] == "refuse" {
			return fmt.Errorf("refusingStore: cannot encode %s: %w", cm.Name, store.ErrInvalid)
		}
	}
	return r.Store.Commit(ctx, b)
}

func (r *refusingStore) commitCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commits
}

// TestRejectedObjectOneByOne checks the last resort of a rejected batch:
// when the informer cannot find the rejected operations without committing
// (no store.BatchPreparer, and the index functions accept every object), it
// applies the batch one operation per commit, skips what the store
// rejects, and then moves the resume point.
func TestRejectedObjectOneByOne(t *testing.T) {
	rs := &refusingStore{Store: openStore(t, "memdb://")}
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour
	opts.MaxBatchSize = 3 // the three events share one commit attempt
	lw, _, h := runGrouped(t, rs, opts)
	before := rs.commitCount()

	createSkippingBad(t, lw, h, rs, "refuse")
	// The group, refused; each operation; the resume point.
	if got := rs.commitCount() - before; got != 5 {
		t.Errorf("%d commits for a refused group of 3 operations, want 5 (the group, one per operation, the resume point)", got)
	}
}

// TestRefusedRelist checks scenario (f) of the crash tests: a relist
// whose list holds an object the queue refuses (its key function fails)
// is refused whole, and retried, and commits nothing meanwhile; once the
// object is gone, the relist is applied; and an informer restarted on the
// store at any of these points catches up with the server.
func TestRefusedRelist(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.noBookmarks = true
		s := b.open(t)
		opts := testOptions()
		opts.KeyFunc = func(obj interface{}) (string, error) {
			if cm := cmOf(obj); cm != nil && cm.Name == "nokey" {
				return "", errors.New("no key for nokey")
			}
			return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		}
		inf := newInformer(t, lw, s, opts)
		r := start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		for _, n := range []string{"a", "b", "c"} {
			lw.create("ns", n, "1")
		}
		waitApplied(t, lw, s, nil)
		rv := s.ResourceVersion()

		lw.muteWatches()
		lw.update("ns", "a", "2")
		lw.remove("ns", "b")
		lw.create("ns", "nokey", "1")
		lists := lw.fullLists()
		lw.expireWatches()
		deadline := time.Now().Add(waitLimit)
		for lw.fullLists() < lists+3 {
			if time.Now().After(deadline) {
				t.Fatalf("%d relists after the watch expired, want at least 3 (a refused relist is retried)", lw.fullLists()-lists)
			}
			time.Sleep(time.Millisecond)
		}
		if got := s.ResourceVersion(); got != rv {
			t.Errorf("resume point = %q while the relist is refused, want %q", got, rv)
		}
		if diff := cmp.Diff(lw.stateAt(rv), storeValues(s)); diff != "" {
			t.Errorf("store while the relist is refused (-server at %s +store):\n%s", rv, diff)
		}

		lw.remove("ns", "nokey")
		waitApplied(t, lw, s, nil)
		r.stop()

		s2 := b.restart(t, s)
		inf2 := newInformer(t, lw, s2, opts)
		start(t, inf2)
		lw.create("ns", "after", "1")
		waitDone(t, "restarted informer sync", inf2.HasSyncedChecker())
		waitApplied(t, lw, s2, nil)
	})
}

// TestRejectedChangeKeepsEarlierState checks what handlers and the store
// get when a group's newest change of a key is rejected: the key's last
// change in the group that the store accepts, as if each change had been
// committed on its own and the rejected ones skipped; a key whose every
// change is rejected keeps its state from before the group, and handlers
// hear nothing of it.
func TestRejectedChangeKeepsEarlierState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.noBookmarks = true
		inner := b.open(t)
		addStrict(t, inner)
		c, s := newCrashStore(inner)
		opts := testOptions()
		opts.MaxBatchDelay, opts.MaxBatchSize = time.Millisecond, 100
		inf := newInformer(t, lw, s, opts)
		h := newRecorder()
		addHandler(t, inf, h)
		start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		lw.create("ns", "a", "1")
		lw.create("ns", "b", "1")
		h.wait(t, 2)

		holdCommitOf(t, lw, c, "first")
		lw.update("ns", "a", "2")
		lw.update("ns", "a", badValue)
		lw.create("ns", "d", "1")
		lw.update("ns", "d", badValue)
		lw.update("ns", "b", badValue)
		lw.create("ns", "e", badValue)
		lw.remove("ns", "d")
		lw.create("ns", "d", badValue)
		waitPending(t, inf, 5) // first (held), a, d, b, e
		// Every change popped too, into the group after the held one: the
		// five keys are pending before d's delete and re-creation are
		// popped, and released then, those came in a group of their own,
		// where the events differ (make test saw it once).
		pollUntil(t, "every change popped", func() string {
			if n := inf.Stats().PendingDeltas; n != 9 {
				return fmt.Sprintf("%d deltas popped and not committed, want 9 (first's and the eight changes)", n)
			}
			return ""
		})
		c.release <- struct{}{}
		want := []ev{
			{Op: "add", Key: "ns/a", Value: "1", UID: "uid-1"},
			{Op: "add", Key: "ns/b", Value: "1", UID: "uid-2"},
			{Op: "add", Key: "ns/first", Value: "1", UID: "uid-3"},
			{Op: "update", Key: "ns/a", Value: "2", OldVal: "1", UID: "uid-1", OldUID: "uid-1"},
			{Op: "add", Key: "ns/d", Value: "1", UID: "uid-4"},
			// Told, although the store never holds it: a later change
			// of the key in the group (the delete) is accepted, and
			// changes before it are not checked.
			{Op: "update", Key: "ns/d", Value: badValue, OldVal: "1", UID: "uid-4", OldUID: "uid-4"},
			{Op: "delete", Key: "ns/d", Value: badValue, UID: "uid-4"},
		}
		lw.create("ns", "last", "1") // in the next group: its add ends the events
		want = append(want, ev{Op: "add", Key: "ns/last", Value: "1", UID: "uid-7"})
		if diff := cmp.Diff(want, h.wait(t, len(want))); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		waitApplied(t, lw, inner, nil)
		if diff := cmp.Diff(map[string]string{"ns/a": "2", "ns/b": "1", "ns/first": "1", "ns/last": "1"}, storeValues(inner)); diff != "" {
			t.Errorf("store (-want +got):\n%s", diff)
		}
	})
}
