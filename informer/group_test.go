package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// waitPending waits until n keys are popped but not committed.
func waitPending(t *testing.T, inf *Informer, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for inf.view.pendingLen() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys pending, want %d", inf.view.pendingLen(), n)
		}
		runtime.Gosched()
	}
}

func TestGroupCommit(t *testing.T) {
	lw := newFakeLW()
	lw.noBookmarks = true // every delta in this test is an object change
	s := openStore(t, "memory://")
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour // only the size bound closes a group
	opts.MaxBatchSize = 5
	inf := newInformer(t, lw, s, opts)
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	// The initial relist is committed at once, despite the delay.
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	commits, rv := inf.Stats().Commits, s.ResourceVersion()

	for i := 0; i < 4; i++ {
		lw.create("ns", "o"+strconv.Itoa(i), "1")
	}
	waitPending(t, inf, 4)
	if got := h.all(); len(got) != 0 {
		t.Errorf("handler notified before the commit: %v", got)
	}
	if got := s.ResourceVersion(); got != rv {
		t.Errorf("resume point moved to %q before the commit, want %q", got, rv)
	}
	if n := len(s.ListKeys()); n != 0 {
		t.Errorf("store holds %d objects before the commit, want 0", n)
	}
	lw.create("ns", "o4", "1") // the fifth delta fills the group
	h.wait(t, 5)
	if got := inf.Stats().Commits - commits; got != 1 {
		t.Errorf("5 events took %d commits, want 1", got)
	}
	if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point = %q, want %q", got, want)
	}
}

// TestRelistIsNotMerged checks that a relist popped while a group is open
// is committed on its own, after the group, and that the relist sees the
// group's objects as known although they were not committed yet.
func TestRelistIsNotMerged(t *testing.T) {
	lw := newFakeLW()
	lw.noBookmarks = true
	lw.create("ns", "old", "1")
	s := openStore(t, "memory://")
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour
	opts.MaxBatchSize = 100
	inf := newInformer(t, lw, s, opts)
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	commits := inf.Stats().Commits

	lw.create("ns", "a", "1")
	lw.create("ns", "b", "1")
	waitPending(t, inf, 2)
	// b and old go away while the watch is broken; the relist must delete
	// them, b although it was never committed before the relist was queued.
	lw.muteWatches()
	lw.remove("ns", "b")
	lw.remove("ns", "old")
	lw.expireWatches()

	want := []ev{
		{Op: "add", Key: "ns/old", Value: "1", UID: "uid-1", Initial: true},
		{Op: "add", Key: "ns/a", Value: "1", UID: "uid-2"},
		{Op: "add", Key: "ns/b", Value: "1", UID: "uid-3"},
		// The relist: deletions as tombstones (in unspecified order), then
		// a's unchanged Replaced delta, a resync (delivered after these, as
		// in client-go: see TestRelistNotifiesUnchangedObjects).
		{Op: "delete", Key: "ns/b", Value: "1", UID: "uid-3", Tomb: true},
		{Op: "delete", Key: "ns/old", Value: "1", UID: "uid-1", Tomb: true},
	}
	got := h.wait(t, len(want))
	if got[3].Key > got[4].Key {
		got[3], got[4] = got[4], got[3]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := inf.Stats().Commits - commits; got != 2 {
		t.Errorf("group then relist took %d commits, want 2 (a relist is never merged); stats %+v", got, inf.Stats())
	}
	if diff := cmp.Diff(lw.values(), storeValues(s)); diff != "" {
		t.Errorf("store after relist (-source +store):\n%s", diff)
	}
	if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point = %q, want %q", got, want)
	}
}

// TestRejectedObjectIsSkipped checks that an object the store rejects (here
// through a failing index function) does not stop the informer: the rest of
// its batch is applied and the resume point moves.
func TestRejectedObjectIsSkipped(t *testing.T) {
	lw := newFakeLW()
	lw.noBookmarks = true
	s := openStore(t, "memory://")
	err := s.AddIndexers(cache.Indexers{"strict": func(obj interface{}) ([]string, error) {
		if cm := obj.(*corev1.ConfigMap); cm.Name == "bad" {
			return nil, errors.New("no index value for bad")
		}
		return []string{"ok"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour
	opts.MaxBatchSize = 3 // the three events share one commit attempt
	inf := newInformer(t, lw, s, opts)
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())

	createSkippingBad(t, lw, h, s, "1")
	// The informer goes on (three events fill the next group).
	for _, n := range []string{"good3", "good4", "good5"} {
		lw.create("ns", n, "1")
	}
	if got := h.wait(t, 5)[2]; got.Key != "ns/good3" {
		t.Errorf("event after the rejected object = %v, want an add of ns/good3", got)
	}
}

// createSkippingBad creates good1, bad (with data badValue, which the
// store rejects) and good2 in one group, and checks that handlers and the
// store got the good ones only, and that the resume point moved past bad.
func createSkippingBad(t *testing.T, lw *fakeLW, h *recorder, s store.Store, badValue string) {
	t.Helper()
	lw.create("ns", "good1", "1")
	lw.create("ns", "bad", badValue)
	lw.create("ns", "good2", "1")
	want := []ev{
		{Op: "add", Key: "ns/good1", Value: "1", UID: "uid-1"},
		{Op: "add", Key: "ns/good2", Value: "1", UID: "uid-3"},
	}
	if diff := cmp.Diff(want, h.wait(t, 2)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"ns/good1": "1", "ns/good2": "1"}, storeValues(s)); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point = %q, want %q", got, want)
	}
}

// gatedStore holds every commit until the test lets it through, once
// closed is set.
type gatedStore struct {
	store.Store
	closed  atomic.Bool
	entered chan int // receives the number of ops of each held commit
	release chan struct{}
}

func (g *gatedStore) Commit(ctx context.Context, b store.Batch) error {
	if g.closed.Load() {
		g.entered <- len(b.Ops)
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.Commit(ctx, b)
}

// TestGroupGrowsDuringCommit checks that the informer pops and prepares the
// next group while a commit runs, that this group keeps growing past
// MaxBatchDelay until the commit is over, and that groups are committed and
// notified in order, each only after its commit.
func TestGroupGrowsDuringCommit(t *testing.T) {
	g := &gatedStore{Store: openStore(t, "memory://"), entered: make(chan int, 10), release: make(chan struct{})}
	opts := testOptions()
	opts.MaxBatchDelay = time.Millisecond
	opts.MaxBatchSize = 100
	lw, inf, h := runGrouped(t, g, opts)
	commits := inf.Stats().Commits

	g.closed.Store(true)
	lw.create("ns", "first", "1")
	if n := <-g.entered; n != 1 {
		t.Fatalf("first held commit has %d ops, want 1", n)
	}
	// While that commit is held, the next events are popped and prepared
	// (the view has them), over far more than MaxBatchDelay.
	lw.create("ns", "a", "1")
	waitPending(t, inf, 2)
	time.Sleep(50 * opts.MaxBatchDelay)
	lw.create("ns", "b", "1")
	lw.create("ns", "c", "1")
	waitPending(t, inf, 4)
	if got := h.all(); len(got) != 0 {
		t.Fatalf("handler notified while the first commit is held: %v", got)
	}
	g.release <- struct{}{}
	// The second group holds all three: it grew until the first commit
	// was over.
	if n := <-g.entered; n != 3 {
		t.Errorf("second commit has %d ops, want 3 (the events popped while the first commit ran)", n)
	}
	if got := h.wait(t, 1); len(got) != 1 || got[0].Key != "ns/first" {
		t.Errorf("after the first commit, handler saw %v; want ns/first only", got)
	}
	g.closed.Store(false)
	g.release <- struct{}{}
	got := h.wait(t, 4)
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	if diff := cmp.Diff([]string{"ns/first", "ns/a", "ns/b", "ns/c"}, keys); diff != "" {
		t.Errorf("notification order (-want +got):\n%s", diff)
	}
	if got := inf.Stats().Commits - commits; got != 2 {
		t.Errorf("4 events took %d commits, want 2", got)
	}
	if got, want := g.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point = %q, want %q", got, want)
	}
}

// limitedStore is a store that asks for commits of at most limit
// operations (store.BatchLimiter) and reports the size of each commit. Once
// held is set, each commit waits for a receive on release after reporting.
type limitedStore struct {
	store.Store
	limit   int
	sizes   chan int
	held    atomic.Bool
	release chan struct{}
}

func (l *limitedStore) MaxBatchOps() int { return l.limit }

func (l *limitedStore) Commit(ctx context.Context, b store.Batch) error {
	l.sizes <- len(b.Ops)
	if l.held.Load() {
		select {
		case <-l.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return l.Store.Commit(ctx, b)
}

func newLimitedStore(t *testing.T, limit int) *limitedStore {
	return &limitedStore{Store: openStore(t, "memory://"), limit: limit, sizes: make(chan int, 100), release: make(chan struct{})}
}

// TestGroupRespectsStoreLimit checks that groups stay within the limit a
// store.BatchLimiter gives, below MaxBatchSize, in pops and in groups.
func TestGroupRespectsStoreLimit(t *testing.T) {
	ls := newLimitedStore(t, 3)
	opts := testOptions()
	opts.MaxBatchDelay = 20 * time.Millisecond
	opts.MaxBatchSize = 100
	lw, _, h := runGrouped(t, ls, opts)
	<-ls.sizes // the initial relist
	const n = 20
	for i := range n {
		lw.create("ns", "o"+strconv.Itoa(i), "1")
	}
	h.wait(t, n)
	total := 0
	for total < n {
		size := <-ls.sizes
		if size > 3 {
			t.Errorf("commit of %d ops, want at most 3 (the store's limit)", size)
		}
		total += size
	}
	if total != n {
		t.Errorf("commits hold %d ops, want %d", total, n)
	}
}

// TestGroupWritesEachKeyOnce checks that a group commits one operation per
// key, the newest, while every change is still notified in order; that
// MaxBatchSize and the store's limit count operations, not deltas: a full
// group goes on taking changes to its keys while the previous commit runs,
// and a new key ends it; and that it is handed over as soon as that commit
// is over.
func TestGroupWritesEachKeyOnce(t *testing.T) {
	ls := newLimitedStore(t, 2)
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour // only the bounds and the running commit close a group
	opts.MaxBatchSize = 3
	lw, inf, h := runGrouped(t, ls, opts)
	<-ls.sizes // the initial relist
	commits := inf.Stats().Commits
	ls.held.Store(true)
	lw.create("ns", "first", "1")
	lw.create("ns", "second", "1") // fills the group: it is committed, and held
	if n := <-ls.sizes; n != 2 {
		t.Fatalf("held commit of %d ops, want 2", n)
	}
	// Seven changes to two keys while that commit is held: one group of
	// two operations (the store's limit, below MaxBatchSize), then a
	// third key, which must wait for the next group.
	lw.create("ns", "a", "1")
	lw.create("ns", "b", "1")
	for i := 2; i <= 4; i++ {
		lw.update("ns", "a", strconv.Itoa(i))
	}
	lw.update("ns", "b", "2")
	lw.remove("ns", "b")
	lw.create("ns", "c", "1")
	waitPending(t, inf, 5) // first, second (held), a, b (deleted) and c
	ls.held.Store(false)
	ls.release <- struct{}{}
	got := h.wait(t, 10)
	// The group's commit and the carry's: the group holds a and b with all
	// their changes, the carry the batch that brought c.
	if n := inf.Stats().Commits - commits; n != 3 {
		t.Errorf("%d commits from the held one on, want 3 (held, group, carry)", n)
	}
	for i := range 2 {
		if n := <-ls.sizes; n > 2 {
			t.Errorf("commit %d after the held one: %d ops, want at most 2 (the store's limit)", i+1, n)
		}
	}
	var ops []string
	for _, e := range got {
		ops = append(ops, e.Op+" "+e.Key+" "+e.Value)
	}
	want := []string{"add ns/first 1", "add ns/second 1", "add ns/a 1", "add ns/b 1", "update ns/a 2", "update ns/a 3", "update ns/a 4", "update ns/b 2", "delete ns/b 2", "add ns/c 1"}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(lw.values(), storeValues(ls)); diff != "" {
		t.Errorf("store (-source +store):\n%s", diff)
	}
}

// TestGroupDeltasBounded checks the bound on a group's deltas: changes to
// one key, popped while a commit runs, fill a group of at most
// GroupDeltasPerOp * MaxBatchSize deltas, and the rest waits for the next.
func TestGroupDeltasBounded(t *testing.T) {
	ls := newLimitedStore(t, 100)
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour
	opts.MaxBatchSize = 1
	lw, inf, h := runGrouped(t, ls, opts)
	<-ls.sizes // the initial relist
	lw.create("ns", "a", "0")
	h.wait(t, 1)
	<-ls.sizes
	ls.held.Store(true)
	lw.create("ns", "first", "1")
	<-ls.sizes
	popped := inf.stats.popped.Load()
	const updates = 3 * GroupDeltasPerOp
	for i := 1; i <= updates; i++ {
		lw.update("ns", "a", strconv.Itoa(i))
	}
	// The group takes GroupDeltasPerOp deltas (pops hold one, as
	// MaxBatchSize is one operation), then waits for the held commit.
	deadline := time.Now().Add(waitLimit)
	for inf.stats.popped.Load() < popped+GroupDeltasPerOp {
		if time.Now().After(deadline) {
			t.Fatalf("%d deltas popped, want %d", inf.stats.popped.Load()-popped, GroupDeltasPerOp)
		}
		runtime.Gosched()
	}
	ls.release <- struct{}{} // the held commit
	<-ls.sizes               // the group's commit, held
	ls.release <- struct{}{}
	<-ls.sizes // the next group's commit, held
	// The handler has everything up to the group's commit: the create of
	// a, "first" and the group's deltas, no more.
	h.wait(t, 2+GroupDeltasPerOp)
	time.Sleep(10 * time.Millisecond) // anything beyond the group would arrive now
	if got := h.all(); len(got) != 2+GroupDeltasPerOp {
		t.Errorf("after the group's commit the handler saw %d events, want %d: a group holds at most %d deltas", len(got), 2+GroupDeltasPerOp, GroupDeltasPerOp)
	}
	ls.held.Store(false)
	ls.release <- struct{}{}
	if got := h.wait(t, 2+updates); got[len(got)-1].Value != strconv.Itoa(updates) {
		t.Errorf("last event %v, want the update to %d", got[len(got)-1], updates)
	}
	if diff := cmp.Diff(lw.values(), storeValues(ls)); diff != "" {
		t.Errorf("store (-source +store):\n%s", diff)
	}
}

// runGrouped runs an informer on s with opts, over a fake source that sends
// no bookmarks (every delta is an object change), with a recording handler,
// and waits until it synced.
func runGrouped(t *testing.T, s store.Store, opts Options) (*fakeLW, *Informer, *recorder) {
	t.Helper()
	lw := newFakeLW()
	lw.noBookmarks = true
	inf := newInformer(t, lw, s, opts)
	h := newRecorder()
	addHandler(t, inf, h)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	return lw, inf, h
}

// preparingStore is a gatedStore over a store.BatchPreparer: it reports
// the size of each batch prepared ahead on prepared, and holds the commits
// of prepared batches as gatedStore holds the others, reporting them on
// entered as negative sizes.
type preparingStore struct {
	*gatedStore
	prepared chan int
}

func (p *preparingStore) PrepareBatch(b store.Batch) (store.PreparedBatch, error) {
	pb, err := p.Store.(store.BatchPreparer).PrepareBatch(b)
	if err != nil {
		return nil, err
	}
	p.prepared <- len(b.Ops)
	return gatedPrepared{g: p.gatedStore, pb: pb, n: len(b.Ops)}, nil
}

type gatedPrepared struct {
	g  *gatedStore
	pb store.PreparedBatch
	n  int
}

func (gp gatedPrepared) Commit(ctx context.Context) error {
	if gp.g.closed.Load() {
		gp.g.entered <- -gp.n
		select {
		case <-gp.g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return gp.pb.Commit(ctx)
}

// TestGroupPreparedAhead checks that a group completed while the previous
// commit runs is prepared for the store (encoded) right away, before its
// commit, and that prepared groups commit and notify as the others do.
func TestGroupPreparedAhead(t *testing.T) {
	g := &gatedStore{Store: openStore(t, "memory://"), entered: make(chan int, 10), release: make(chan struct{})}
	p := &preparingStore{gatedStore: g, prepared: make(chan int, 10)}
	opts := testOptions()
	opts.MaxBatchDelay = time.Hour // only the bounds and the running commit close a group
	opts.MaxBatchSize = 2
	lw, _, h := runGrouped(t, p, opts)

	g.closed.Store(true)
	lw.create("ns", "first", "1")
	lw.create("ns", "second", "1") // fills the group; the committer is idle: not prepared
	if n := <-g.entered; n != 2 {
		t.Fatalf("held commit of %d ops, want 2 (not prepared ahead)", n)
	}
	// A full group, then a new key: the group is complete while the
	// commit is held, and is prepared, and so is the carry that brought
	// the new key (how the queue splits the events into pops varies).
	lw.create("ns", "a", "1")
	lw.create("ns", "b", "1")
	lw.update("ns", "a", "2")
	lw.create("ns", "c", "1")
	prepared := 0
	for prepared < 3 {
		select {
		case n := <-p.prepared:
			prepared += n
		case <-time.After(waitLimit):
			t.Fatalf("%d of the 3 operations after the held commit prepared while it is held, want all", prepared)
		}
	}
	if got := h.all(); len(got) != 0 {
		t.Fatalf("handler notified while the first commit is held: %v", got)
	}
	for committed := 0; committed < 3; {
		g.release <- struct{}{}
		n := <-g.entered
		if n >= 0 {
			t.Fatalf("a commit of %d ops not prepared ahead", n)
		}
		committed -= n
	}
	g.closed.Store(false)
	g.release <- struct{}{}
	g.closed.Store(false)
	got := h.wait(t, 6)
	var ops []string
	for _, e := range got {
		ops = append(ops, e.Op+" "+e.Key+" "+e.Value)
	}
	want := []string{"add ns/first 1", "add ns/second 1", "add ns/a 1", "add ns/b 1", "update ns/a 2", "add ns/c 1"}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(lw.values(), storeValues(p)); diff != "" {
		t.Errorf("store (-source +store):\n%s", diff)
	}
	if got, want := p.ResourceVersion(), lw.currentRV(); got != want {
		t.Errorf("resume point = %q, want %q", got, want)
	}
}

// TestMaxQueuedHoldsTheWatch holds the store's commits while the watch
// delivers far more events than Options.MaxQueued: the queue fills up to
// the bound and no further (the reflector waits for room), and once the
// commits go through, every event reaches the handler, in order, and the
// resume point is the last one.
func TestMaxQueuedHoldsTheWatch(t *testing.T) {
	g := &gatedStore{Store: openStore(t, "memory://"), entered: make(chan int, 100), release: make(chan struct{})}
	opts := testOptions()
	opts.MaxBatchSize = 2
	opts.MaxQueued = 5
	lw, inf, h := runGrouped(t, g, opts)
	g.closed.Store(true)
	const events = 40
	var want []string
	for i := range events {
		name := fmt.Sprintf("q%02d", i)
		lw.create("ns", name, "v")
		want = append(want, "ns/"+name)
	}
	<-g.entered // the first group's commit is held
	waitQueued(t, inf, opts.MaxQueued)
	// Full, and no fuller: the rest of the events wait in the watch.
	st := inf.Stats()
	if st.Queued != int64(opts.MaxQueued) {
		t.Errorf("the queue holds %d entries; want at most MaxQueued (%d)", st.Queued, opts.MaxQueued)
	}
	if taken := st.Queued + st.PendingDeltas; taken >= events {
		t.Errorf("%d of %d events taken from the watch while commits are held; the watch should wait", taken, events)
	}
	g.closed.Store(false)
	close(g.release)
	got := h.wait(t, events)
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("notifications after the commits went through (-want +got):\n%s", diff)
	}
	pollUntil(t, "the resume point to reach the last event", func() string {
		if got, want := g.ResourceVersion(), lw.currentRV(); got != want {
			return fmt.Sprintf("resume point %q, want %q", got, want)
		}
		return ""
	})
}

// TestStopWithTheQueueFull stops an informer whose reflector waits for room
// in a full queue (commits held): it stops, and the event it was queuing
// is not reported as dropped, since nothing was.
func TestStopWithTheQueueFull(t *testing.T) {
	g := &gatedStore{Store: openStore(t, "memory://"), entered: make(chan int, 100), release: make(chan struct{})}
	opts := testOptions()
	opts.MaxBatchSize = 2
	opts.MaxQueued = 2
	lw := newFakeLW()
	lw.noBookmarks = true
	inf := newInformer(t, lw, g, opts)
	reported := make(chan error, 100)
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { reported <- err }); err != nil {
		t.Fatal(err)
	}
	r := start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	g.closed.Store(true)
	for i := range 10 {
		lw.create("ns", fmt.Sprintf("s%d", i), "v")
	}
	<-g.entered
	waitQueued(t, inf, opts.MaxQueued)
	r.stop()
	if n := inf.Stats().Reflector.Dropped; n != 0 {
		t.Errorf("%d events counted as dropped by a stop with the queue full; want 0", n)
	}
	close(reported)
	for err := range reported {
		t.Errorf("watch error reported by a stop with the queue full: %v", err)
	}
}
