package informer

import (
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// tombBackend opens an informer's store and its tombstone store in one
// database, as a Factory does, and reopens them as a restarted process
// would (the in-process memory backend keeps its stores: it has nothing to
// reopen from).
type tombBackend struct {
	name string
	url  func(t *testing.T) string
	// persistent backends are closed and reopened at a restart.
	persistent bool
}

func tombBackends() []tombBackend {
	inDir := func(name, scheme, file string) tombBackend {
		return tombBackend{name: name, persistent: true, url: func(t *testing.T) string {
			return scheme + "://" + filepath.Join(t.TempDir(), file)
		}}
	}
	return []tombBackend{
		{name: "memory", url: func(*testing.T) string { return "memory://" }},
		inDir("memory-file", "memory", "cache.snap"),
		inDir("memdb-file", "memdb", "cache.snap"),
		inDir("bolt", "bolt", "cache.db"),
		inDir("badger", "badger", ""),
	}
}

// storePair is an informer's store and its tombstone store.
type storePair struct {
	b          tombBackend
	url        string
	main, tomb store.Store
}

func openPair(t *testing.T, b tombBackend) *storePair {
	t.Helper()
	p := &storePair{b: b, url: b.url(t)}
	p.open(t)
	return p
}

func (p *storePair) open(t *testing.T) {
	t.Helper()
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	opts := store.Options{Name: "v1/configmaps", Codec: codec}
	if u, _ := url.Parse(p.url); u.Scheme == "bolt" || u.Scheme == "badger" {
		opts.Durability = store.DurabilityNoSync
	}
	iopts := Options{}
	s, err := openStores(t.Context(), p.url, opts, &iopts)
	if err != nil {
		t.Fatalf("opening the stores at %s: %v", p.url, err)
	}
	p.main, p.tomb = s, iopts.Tombstones
	main, tomb := p.main, p.tomb
	t.Cleanup(func() { _ = main.Close(); _ = tomb.Close() })
}

// restart returns the stores as the next process finds them.
func (p *storePair) restart(t *testing.T) {
	t.Helper()
	if !p.b.persistent {
		return
	}
	for _, s := range []store.Store{p.main, p.tomb} {
		if err := s.Close(); err != nil {
			t.Fatalf("closing %s: %v", s.Info().Name, err)
		}
	}
	p.open(t)
}

func forEachTombBackend(t *testing.T, f func(t *testing.T, b tombBackend)) {
	t.Helper()
	for _, b := range tombBackends() {
		t.Run("backend="+b.name, func(t *testing.T) { f(t, b) })
	}
}

// tombOptions are testOptions with the pair's tombstone store, and a fake
// clock for the retention (the reflector keeps the real one).
func tombOptions(p *storePair, clk clock.WithTicker) Options {
	o := testOptions()
	o.Tombstones = p.tomb
	o.Clock = clk
	o.Reflector.Clock = clock.RealClock{}
	return o
}

// firstTombRun runs an informer on fresh stores until it has applied
// ConfigMaps a, b, c and d, stops it, and returns the stores as the next
// process finds them.
func firstTombRun(t *testing.T, b tombBackend, lw *fakeLW) *storePair {
	t.Helper()
	p := openPair(t, b)
	inf := newInformer(t, lw, p.main, tombOptions(p, testingclock.NewFakeClock(time.Now())))
	h := newRecorder()
	addHandler(t, inf, h)
	r := start(t, inf)
	waitDone(t, "first run sync", inf.HasSyncedChecker())
	for _, n := range []string{"a", "b", "c", "d"} {
		lw.create("ns", n, n+"1")
	}
	h.wait(t, 4)
	r.stop()
	p.restart(t)
	return p
}

// lateHandlerSees is what a handler added after a restarted informer
// synced receives, when b was deleted and c deleted and created again while
// the process was down, a updated and e created: the deletes first, as
// tombstones carrying the last state, in key order, then the stored objects.
var lateHandlerSees = []ev{
	{Op: "delete", Key: "ns/b", Value: "b1", UID: "uid-2", Tomb: true},
	{Op: "delete", Key: "ns/c", Value: "c1", UID: "uid-3", Tomb: true},
	{Op: "add", Key: "ns/a", Value: "a2", UID: "uid-1", Initial: true},
	{Op: "add", Key: "ns/c", Value: "c2", UID: "uid-6", Initial: true},
	{Op: "add", Key: "ns/d", Value: "d1", UID: "uid-4", Initial: true},
	{Op: "add", Key: "ns/e", Value: "e1", UID: "uid-5", Initial: true},
}

// sortAfter sorts got[from:] (adds in store order) by key.
func sortAfter(got []ev, from int) []ev {
	sortReplay(got[from:], len(got)-from)
	return got
}

// addLate adds a handler to a running informer and waits until its
// registration has synced: it has been handed everything it is owed.
func addLate(t *testing.T, inf *Informer, n int) []ev {
	t.Helper()
	h := newRecorder()
	reg := addHandler(t, inf, h)
	waitDone(t, "late handler sync", reg.HasSyncedChecker())
	got := h.wait(t, n)
	if all := h.all(); len(all) != n {
		t.Fatalf("late handler got %d notifications, want %d: %+v", len(all), n, all)
	}
	return got
}

// TestLateHandlerGetsRestartDeletes is controller-runtime's builder after a
// restart: the informer resumes and syncs with no handler, and the
// handlers added then must still hear of the deletes made while the process
// was down, on every backend, as many handlers as are added, until the
// retention ends.
func TestLateHandlerGetsRestartDeletes(t *testing.T) {
	forEachTombBackend(t, func(t *testing.T, b tombBackend) {
		lw := newFakeLW()
		p := firstTombRun(t, b, lw)
		changeWhileDown(lw)

		clk := testingclock.NewFakeClock(time.Now())
		inf := newInformer(t, lw, p.main, tombOptions(p, clk))
		start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())

		for i := range 2 {
			got := sortAfter(addLate(t, inf, len(lateHandlerSees)), 2)
			if diff := cmp.Diff(lateHandlerSees, got); diff != "" {
				t.Errorf("late handler %d (-want +got):\n%s", i, diff)
			}
		}
		if got := p.tomb.ListKeys(); len(got) != 2 {
			t.Errorf("tombstone store holds %v during the retention, want ns/b and ns/c", got)
		}

		// A delete after the sync reaches later handlers too.
		lw.remove("ns", "d")
		pollUntil(t, "the delete of ns/d applied", func() string {
			if _, ok, _ := p.main.GetByKey("ns/d"); ok {
				return "ns/d still stored"
			}
			return ""
		})
		got := sortAfter(addLate(t, inf, 6), 3)
		want := []ev{
			lateHandlerSees[0], lateHandlerSees[1],
			{Op: "delete", Key: "ns/d", Value: "d1", UID: "uid-4", Tomb: true},
			lateHandlerSees[2], lateHandlerSees[3], lateHandlerSees[5],
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("late handler after a live delete (-want +got):\n%s", diff)
		}

		// The retention ends: a handler added later gets the stored
		// objects only, as in client-go, and the next commit empties the
		// tombstone store.
		clk.Step(DefaultTombstoneRetention)
		got = sortAfter(addLate(t, inf, 3), 0)
		if diff := cmp.Diff([]ev{lateHandlerSees[2], lateHandlerSees[3], lateHandlerSees[5]}, got); diff != "" {
			t.Errorf("handler added after the retention (-want +got):\n%s", diff)
		}
		lw.create("ns", "f", "f1")
		pollUntil(t, "the tombstone store emptied", func() string {
			if keys := p.tomb.ListKeys(); len(keys) > 0 {
				return fmt.Sprintf("holds %v", keys)
			}
			return ""
		})
	})
}

// syncWithoutHandlers runs an informer on p with no handler until it has
// synced, then stops it.
func syncWithoutHandlers(t *testing.T, lw *fakeLW, p *storePair) {
	t.Helper()
	inf := newInformer(t, lw, p.main, tombOptions(p, testingclock.NewFakeClock(time.Now())))
	r := start(t, inf)
	waitDone(t, "sync without handlers", inf.HasSyncedChecker())
	r.stop()
}

// TestRestartDeletesSurviveASecondCrash: the process commits the deletes
// made while it was down and dies before any handler was added. The next
// run must hand them to its handlers, those added before Run and those
// added after the sync alike.
func TestRestartDeletesSurviveASecondCrash(t *testing.T) {
	forEachTombBackend(t, func(t *testing.T, b tombBackend) {
		lw := newFakeLW()
		p := firstTombRun(t, b, lw)
		changeWhileDown(lw)

		// Second run: resumes, commits the deletes, no handler; it stops
		// before the retention ends, as a crash would.
		syncWithoutHandlers(t, lw, p)
		if _, ok, _ := p.main.GetByKey("ns/b"); ok {
			t.Fatalf("second run did not commit the delete of ns/b")
		}
		p.restart(t)

		// Third run: nothing changed meanwhile.
		inf := newInformer(t, lw, p.main, tombOptions(p, testingclock.NewFakeClock(time.Now())))
		early := newRecorder()
		addHandler(t, inf, early)
		start(t, inf)
		waitDone(t, "third run sync", inf.HasSyncedChecker())
		// The early handler: the earlier run's deletes, then the replay.
		if diff := cmp.Diff(lateHandlerSees, sortAfter(early.wait(t, len(lateHandlerSees)), 2)); diff != "" {
			t.Errorf("handler added before Run (-want +got):\n%s", diff)
		}
		got := sortAfter(addLate(t, inf, len(lateHandlerSees)), 2)
		if diff := cmp.Diff(lateHandlerSees, got); diff != "" {
			t.Errorf("handler added after the sync (-want +got):\n%s", diff)
		}
	})
}

// TestTombstoneOfAnUncommittedDeleteIsDropped: a process that died between
// persisting a tombstone and committing its delete leaves a tombstone of an
// object the store still holds. The next start drops it: the watch brings
// the delete again if it happened, and a handler must not hear of a
// delete of an object that exists.
func TestTombstoneOfAnUncommittedDeleteIsDropped(t *testing.T) {
	forEachTombBackend(t, func(t *testing.T, b tombBackend) {
		lw := newFakeLW()
		p := firstTombRun(t, b, lw)
		stored, ok, err := p.main.GetByKey("ns/a")
		if err != nil || !ok {
			t.Fatalf("ns/a not stored after the first run: %v", err)
		}
		// Another object under a stored name: a delete and a re-create.
		other := stored.(*corev1.ConfigMap).DeepCopy()
		other.Name, other.UID = "d", "uid-old-d"
		if err := p.tomb.Commit(t.Context(), store.Batch{Ops: []store.Op{
			{Type: store.OpPut, Object: stored, Key: "ns/a"},
			{Type: store.OpPut, Object: other, Key: "ns/d"},
		}}); err != nil {
			t.Fatalf("seeding tombstones: %v", err)
		}
		p.restart(t)

		inf := newInformer(t, lw, p.main, tombOptions(p, testingclock.NewFakeClock(time.Now())))
		start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		got := sortAfter(addLate(t, inf, 5), 1)
		want := []ev{
			{Op: "delete", Key: "ns/d", Value: "a1", UID: "uid-old-d", Tomb: true},
			{Op: "add", Key: "ns/a", Value: "a1", UID: "uid-1", Initial: true},
			{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2", Initial: true},
			{Op: "add", Key: "ns/c", Value: "c1", UID: "uid-3", Initial: true},
			{Op: "add", Key: "ns/d", Value: "d1", UID: "uid-4", Initial: true},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("late handler (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"ns/d"}, p.tomb.ListKeys()); diff != "" {
			t.Errorf("tombstone store after start (-want +got):\n%s", diff)
		}
	})
}

// TestMaxTombstonesBoundsLiveDeletes: deletes applied after the sync are
// kept up to MaxTombstones; the restart's deletes are always kept.
func TestMaxTombstonesBoundsLiveDeletes(t *testing.T) {
	lw := newFakeLW()
	b := tombBackends()[0]
	p := firstTombRun(t, b, lw)
	changeWhileDown(lw)
	opts := tombOptions(p, testingclock.NewFakeClock(time.Now()))
	opts.MaxTombstones = 1
	inf := newInformer(t, lw, p.main, opts)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	lw.remove("ns", "d")
	lw.remove("ns", "e")
	pollUntil(t, "the deletes applied", func() string {
		if keys := p.main.ListKeys(); len(keys) != 2 {
			return fmt.Sprintf("stored %v", keys)
		}
		return ""
	})
	got := sortAfter(addLate(t, inf, 5), 3)
	want := []ev{
		lateHandlerSees[0], lateHandlerSees[1],
		{Op: "delete", Key: "ns/d", Value: "d1", UID: "uid-4", Tomb: true},
		lateHandlerSees[2], lateHandlerSees[3],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("late handler (-want +got):\n%s", diff)
	}
}

// TestNegativeRetentionKeepsNoTombstones: client-go's behaviour on request.
func TestNegativeRetentionKeepsNoTombstones(t *testing.T) {
	lw := newFakeLW()
	p := firstTombRun(t, tombBackends()[0], lw)
	changeWhileDown(lw)
	opts := tombOptions(p, testingclock.NewFakeClock(time.Now()))
	opts.TombstoneRetention = -1
	inf := newInformer(t, lw, p.main, opts)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	got := sortAfter(addLate(t, inf, 4), 0)
	if diff := cmp.Diff(lateHandlerSees[2:], got); diff != "" {
		t.Errorf("late handler (-want +got):\n%s", diff)
	}
	if keys := p.tomb.ListKeys(); len(keys) != 0 {
		t.Errorf("tombstone store holds %v, want nothing", keys)
	}
}

// TestTombstonesMustBeAStoreOfTheirOwn: the informer's own store as its
// tombstone store would delete and re-add its objects.
func TestTombstonesMustBeAStoreOfTheirOwn(t *testing.T) {
	s := openStore(t, "memory://")
	_, err := New(newFakeLW(), &corev1.ConfigMap{}, s, &Options{Tombstones: s})
	if err == nil {
		t.Fatal("New with Options.Tombstones = the informer's store: no error")
	}
}

// TestGracefulStopWithHandlersClearsTombstones: a run that stops (its
// context ends) after its handler heard of every delete owes the next run
// nothing, so the next run's handlers get the replay and no old delete.
func TestGracefulStopWithHandlersClearsTombstones(t *testing.T) {
	forEachTombBackend(t, func(t *testing.T, b tombBackend) {
		lw := newFakeLW()
		p := firstTombRun(t, b, lw)
		changeWhileDown(lw)

		syncWithoutHandlers(t, lw, p)
		if got := p.tomb.ListKeys(); len(got) != 2 {
			t.Fatalf("tombstones after a run without handlers: %v, want ns/b and ns/c", got)
		}
		p.restart(t)

		inf := newInformer(t, lw, p.main, tombOptions(p, testingclock.NewFakeClock(time.Now())))
		h := newRecorder()
		reg := addHandler(t, inf, h)
		r := start(t, inf)
		waitDone(t, "handler sync", reg.HasSyncedChecker())
		if diff := cmp.Diff(lateHandlerSees, sortAfter(h.wait(t, len(lateHandlerSees)), 2)); diff != "" {
			t.Errorf("handler of the run after a stop without handlers (-want +got):\n%s", diff)
		}
		r.stop()
		if got := p.tomb.ListKeys(); len(got) != 0 {
			t.Errorf("tombstones after a stop with every handler caught up: %v, want none", got)
		}
	})
}

// TestFactoryLateHandlerGetsDeletes: a Factory's informer, with a handler
// added after WaitForCacheSync as client-go controllers and
// controller-runtime do, hears of a delete applied before it was added,
// and the delete is in the informer's tombstone store in the factory's
// database.
func TestFactoryLateHandlerGetsDeletes(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	client, watching := fakeClientset()
	f, err := NewFactory(ctx, dbURL, client, &FactoryOptions{
		Informer: testOptions(),
		Store:    store.Options{Durability: store.DurabilityNoSync},
	})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer func() { _ = f.Shutdown() }()
	inf, err := f.InformerFor(ctx, configMapsGVR)
	if err != nil {
		t.Fatalf("InformerFor: %v", err)
	}
	f.Start(ctx)
	f.WaitForCacheSync(ctx)
	<-watching
	if err := client.CoreV1().ConfigMaps("a").Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete a/x: %v", err)
	}
	pollUntil(t, "the delete applied", func() string {
		if _, ok, _ := inf.GetStore().GetByKey("a/x"); ok {
			return "a/x still stored"
		}
		return ""
	})
	got := addLate(t, inf, 2)
	want := []ev{
		{Op: "delete", Key: "a/x", Value: "x1", UID: "uid-x", Tomb: true},
		{Op: "add", Key: "b/y", Value: "y1", UID: "uid-y", Initial: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handler added after WaitForCacheSync (-want +got):\n%s", diff)
	}
	tombs := inf.opts.Tombstones
	if tombs == nil {
		t.Fatal("the factory's informer has no tombstone store")
	}
	if name, want := tombs.Info().Name, StoreName(configMapsGVR)+TombstoneStoreSuffix; name != want {
		t.Errorf("tombstone store %q, want %q", name, want)
	}
	if diff := cmp.Diff([]string{"a/x"}, tombs.ListKeys()); diff != "" {
		t.Errorf("tombstone store keys (-want +got):\n%s", diff)
	}
}
