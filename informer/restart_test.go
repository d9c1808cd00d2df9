package informer

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// firstRun runs an informer on a fresh store of b until it has applied
// ConfigMaps a, b, c and d, then stops it, and returns the source and the
// store as a restarted process would find it.
func firstRun(t *testing.T, b backend) (*fakeLW, store.Store) {
	t.Helper()
	return firstRunOn(t, b, newFakeLW())
}

// firstRunOn is firstRun with a given source.
func firstRunOn(t *testing.T, b backend, lw *fakeLW) (*fakeLW, store.Store) {
	t.Helper()
	s := b.open(t)
	inf := newInformer(t, lw, s, testOptions())
	h := newRecorder()
	addHandler(t, inf, h)
	r := start(t, inf)
	waitDone(t, "first run sync", inf.HasSyncedChecker())
	for _, n := range []string{"a", "b", "c", "d"} {
		lw.create("ns", n, n+"1")
	}
	h.wait(t, 4)
	r.stop()
	if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
		t.Fatalf("resume point after first run = %q, want %q", got, want)
	}
	return lw, b.restart(t, s)
}

// forEachBackendAndDelay runs f per backend, with group commit off and with
// the default MaxBatchDelay.
func forEachBackendAndDelay(t *testing.T, f func(t *testing.T, b backend, opts Options)) {
	t.Helper()
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, d := range []struct {
			name  string
			delay time.Duration
		}{{"none", NoBatchDelay}, {"default", 0}} {
			t.Run("delay="+d.name, func(t *testing.T) {
				opts := testOptions()
				opts.MaxBatchDelay = d.delay
				f(t, b, opts)
			})
		}
	})
}

// changeWhileDown creates e, updates a, deletes b, deletes and recreates c.
func changeWhileDown(lw *fakeLW) {
	lw.create("ns", "e", "e1")
	lw.update("ns", "a", "a2")
	lw.remove("ns", "b")
	lw.remove("ns", "c")
	lw.create("ns", "c", "c2")
}

// replayed is what every handler of a restarted informer gets first.
var replayed = []ev{
	{Op: "add", Key: "ns/a", Value: "a1", UID: "uid-1", Initial: true},
	{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2", Initial: true},
	{Op: "add", Key: "ns/c", Value: "c1", UID: "uid-3", Initial: true},
	{Op: "add", Key: "ns/d", Value: "d1", UID: "uid-4", Initial: true},
}

// sortReplay sorts the first n events (the replay, in unspecified store
// order) by key.
func sortReplay(got []ev, n int) []ev {
	sort.SliceStable(got[:n], func(i, j int) bool { return got[i].Key < got[j].Key })
	return got
}

func TestRestartResumesWithoutList(t *testing.T) {
	forEachBackendAndDelay(t, func(t *testing.T, b backend, opts Options) {
		lw, s := firstRun(t, b)
		fullLists, probes := lw.fullLists(), lw.probes()
		changeWhileDown(lw)

		inf := newInformer(t, lw, s, opts)
		h := newRecorder()
		reg := addHandler(t, inf, h)
		start(t, inf)

		want := append(append([]ev(nil), replayed...),
			ev{Op: "add", Key: "ns/e", Value: "e1", UID: "uid-5"},
			ev{Op: "update", Key: "ns/a", Value: "a2", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"},
			ev{Op: "delete", Key: "ns/b", Value: "b1", UID: "uid-2"},
			ev{Op: "delete", Key: "ns/c", Value: "c1", UID: "uid-3"},
			ev{Op: "add", Key: "ns/c", Value: "c2", UID: "uid-6"},
		)
		if diff := cmp.Diff(want, sortReplay(h.wait(t, len(want)), 4)); diff != "" {
			t.Errorf("events after restart (-want +got):\n%s", diff)
		}
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		waitDone(t, "handler sync", reg.HasSyncedChecker())
		if diff := cmp.Diff(lw.values(), storeValues(s)); diff != "" {
			t.Errorf("store after resume (-source +store):\n%s", diff)
		}
		if got := lw.fullLists() - fullLists; got != 0 {
			t.Errorf("resume made %d full LISTs, want 0", got)
		}
		if got := lw.probes() - probes; got != 1 {
			t.Errorf("resume made %d limit=1 probes, want 1", got)
		}
		if st := inf.Stats().Reflector; st.Resumes != 1 || st.Relists != (reflector.RelistStats{}) {
			t.Errorf("reflector stats %+v, want one resume and no relist", st)
		}
		if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
			t.Errorf("resume point = %q, want %q", got, want)
		}
	})
}

func TestRestartAfterCompactionRelists(t *testing.T) {
	forEachBackendAndDelay(t, func(t *testing.T, b backend, opts Options) {
		lw, s := firstRun(t, b)
		fullLists := lw.fullLists()
		changeWhileDown(lw)
		lw.compact() // the resume point is now too old: 410 Gone

		cs := &countingStore{Store: s}
		inf := newInformer(t, lw, cs, opts)
		h := newRecorder()
		addHandler(t, inf, h)
		start(t, inf)

		// The relist is applied as one Replace: deletions first, as
		// tombstones carrying the last stored object, then the listed
		// objects in list order. d did not change: its Replaced delta is a
		// resync, which, as in client-go, reaches every handler that has
		// not been through a resync check yet (here: all of them, as the
		// informer does not resync).
		want := append(append([]ev(nil), replayed...),
			ev{Op: "delete", Key: "ns/b", Value: "b1", UID: "uid-2", Tomb: true},
			ev{Op: "update", Key: "ns/a", Value: "a2", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"},
			ev{Op: "delete", Key: "ns/c", Value: "c1", UID: "uid-3", Tomb: true},
			ev{Op: "add", Key: "ns/c", Value: "c2", UID: "uid-6", Initial: true},
			ev{Op: "update", Key: "ns/d", Value: "d1", OldVal: "d1", UID: "uid-4", OldUID: "uid-4"},
			ev{Op: "add", Key: "ns/e", Value: "e1", UID: "uid-5", Initial: true},
		)
		if diff := cmp.Diff(want, sortReplay(h.wait(t, len(want)), 4)); diff != "" {
			t.Errorf("events after restart with 410 (-want +got):\n%s", diff)
		}
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		if diff := cmp.Diff(lw.values(), storeValues(s)); diff != "" {
			t.Errorf("store after relist (-source +store):\n%s", diff)
		}
		if got := lw.fullLists() - fullLists; got != 1 {
			t.Errorf("restart after compaction made %d full LISTs, want 1", got)
		}
		// One commit: delete b, put a, put c, put e; d is unchanged and
		// not written again.
		if diff := cmp.Diff([]int{4}, cs.commitSizes()); diff != "" {
			t.Errorf("operations per commit (-want +got):\n%s", diff)
		}
	})
}

func TestHasSyncedAfterRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		t.Run("waits for the sync target", func(t *testing.T) {
			lw, s := firstRun(t, b)
			lw.update("ns", "a", "a2")
			gate := make(chan struct{})
			lw.setGate(gate)

			inf := newInformer(t, lw, s, testOptions())
			h := newRecorder()
			reg := addHandler(t, inf, h)
			start(t, inf)
			h.wait(t, len(replayed))
			// The update is held back by the source: the informer has not
			// reached the consistent read taken at start.
			if inf.HasSynced() {
				t.Errorf("informer HasSynced = true before applying events up to the sync target")
			}
			if reg.HasSynced() {
				t.Errorf("registration HasSynced = true before the informer synced")
			}
			close(gate)
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			if diff := cmp.Diff(lw.values(), storeValues(s)); diff != "" {
				t.Errorf("store when synced (-source +store):\n%s", diff)
			}
			waitDone(t, "handler sync", reg.HasSyncedChecker())
			want := ev{Op: "update", Key: "ns/a", Value: "a2", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"}
			if got := h.all(); len(got) != len(replayed)+1 || got[len(replayed)] != want {
				t.Errorf("handler synced with events %v, want the replay then %v", got, want)
			}
		})
		t.Run("resourceVersions not comparable", func(t *testing.T) {
			opaque := newFakeLW()
			opaque.opaque = true
			lw, s := firstRunOn(t, b, opaque)
			lw.update("ns", "a", "a2")
			gate := make(chan struct{})
			lw.setGate(gate)

			inf := newInformer(t, lw, s, testOptions())
			h := newRecorder()
			start(t, inf)
			addHandler(t, inf, h)
			h.wait(t, len(replayed))
			if inf.HasSynced() {
				t.Errorf("informer HasSynced = true before the server said it had sent everything")
			}
			close(gate) // the update, then the bookmark that ends the catch-up
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			if diff := cmp.Diff(lw.values(), storeValues(s)); diff != "" {
				t.Errorf("store when synced (-source +store):\n%s", diff)
			}
		})
		t.Run("nothing changed while down", func(t *testing.T) {
			lw, s := firstRun(t, b)
			gate := make(chan struct{})
			lw.setGate(gate) // no event, not even a bookmark, gets through
			defer close(gate)

			inf := newInformer(t, lw, s, testOptions())
			start(t, inf)
			waitDone(t, "informer sync", inf.HasSyncedChecker())
		})
		t.Run("ServeStale", func(t *testing.T) {
			lw, s := firstRun(t, b)
			lw.update("ns", "a", "a2")
			gate := make(chan struct{})
			lw.setGate(gate)

			opts := testOptions()
			opts.ServeStale = true
			inf := newInformer(t, lw, s, opts)
			h := newRecorder()
			reg := addHandler(t, inf, h)
			start(t, inf)
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			waitDone(t, "handler sync", reg.HasSyncedChecker())
			if got := storeValues(s)["ns/a"]; got != "a1" {
				t.Errorf("ns/a = %q when synced with ServeStale, want the persisted a1", got)
			}
			close(gate)
			want := ev{Op: "update", Key: "ns/a", Value: "a2", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"}
			if got := h.wait(t, len(replayed)+1)[len(replayed)]; got != want {
				t.Errorf("event after the gate opened = %v, want %v", got, want)
			}
		})
	})
}

// countingStore records the number of operations of every commit that
// writes something.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	sizes []int
}

func (c *countingStore) Commit(ctx context.Context, b store.Batch) error {
	err := c.Store.Commit(ctx, b)
	if err == nil && len(b.Ops) > 0 {
		c.mu.Lock()
		c.sizes = append(c.sizes, len(b.Ops))
		c.mu.Unlock()
	}
	return err
}

func (c *countingStore) commitSizes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.sizes...)
}

// TestResourceGone checks DESIGN invariant 5's last case: a resource the
// server no longer serves (a CRD deleted) empties the store with deletions,
// whether it went away while the process was down or while it runs, and is
// listed afresh when it is served again.
func TestResourceGone(t *testing.T) {
	tombs := func(vals ...string) []ev {
		var out []ev
		for i, v := range vals {
			out = append(out, ev{Op: "delete", Key: "ns/" + v[:1], Value: v, UID: "uid-" + strconv.Itoa(i+1), Tomb: true})
		}
		return out
	}
	sortFrom := func(got []ev, from int) []ev {
		sort.SliceStable(got[from:], func(i, j int) bool { return got[from+i].Key < got[from+j].Key })
		return got
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		t.Run("while down", func(t *testing.T) {
			lw, s := firstRun(t, b)
			lw.setGone(true)
			inf := newInformer(t, lw, s, testOptions())
			h := newRecorder()
			reg := addHandler(t, inf, h)
			start(t, inf)
			want := append(append([]ev(nil), replayed...), tombs("a1", "b1", "c1", "d1")...)
			got := sortFrom(sortReplay(h.wait(t, len(want)), 4), 4)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			waitDone(t, "handler sync", reg.HasSyncedChecker())
			if keys := s.ListKeys(); len(keys) != 0 {
				t.Errorf("store holds %v after the resource went away, want nothing", keys)
			}
			if st := inf.Stats().Reflector; st.Relists.Gone != 1 || st.Resumes != 0 {
				t.Errorf("reflector stats %+v, want one relist for gone and no resume", st)
			}
			// Served again: listed from scratch.
			lists := lw.fullLists()
			lw.update("ns", "a", "a2")
			lw.setGone(false)
			want = append(want,
				ev{Op: "add", Key: "ns/a", Value: "a2", UID: "uid-1"},
				ev{Op: "add", Key: "ns/b", Value: "b1", UID: "uid-2"},
				ev{Op: "add", Key: "ns/c", Value: "c1", UID: "uid-3"},
				ev{Op: "add", Key: "ns/d", Value: "d1", UID: "uid-4"})
			got = h.wait(t, len(want))
			sortReplay(got, 4)
			sortFrom(got[:8], 4)
			sortFrom(got, 8)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events once served again (-want +got):\n%s", diff)
			}
			if lw.fullLists() == lists {
				t.Error("no full LIST once the resource was served again")
			}
			waitEqual(t, lw, s)
		})
		t.Run("while running", func(t *testing.T) {
			lw, s := firstRun(t, b)
			inf := newInformer(t, lw, s, testOptions())
			h := newRecorder()
			addHandler(t, inf, h)
			start(t, inf)
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			h.wait(t, 4) // the replay
			lw.setGone(true)
			want := append(append([]ev(nil), replayed...), tombs("a1", "b1", "c1", "d1")...)
			got := sortFrom(sortReplay(h.wait(t, len(want)), 4), 4)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if keys := s.ListKeys(); len(keys) != 0 {
				t.Errorf("store holds %v after the resource went away, want nothing", keys)
			}
			lw.setGone(false)
			h.wait(t, len(want)+4)
			waitEqual(t, lw, s)
		})
	})
}

// waitEqual waits until s holds what lw serves.
func waitEqual(t *testing.T, lw *fakeLW, s store.Store) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cmp.Equal(lw.values(), storeValues(s)) {
		if time.Now().After(deadline) {
			t.Fatalf("store (-source +store):\n%s", cmp.Diff(lw.values(), storeValues(s)))
		}
		time.Sleep(time.Millisecond)
	}
}
