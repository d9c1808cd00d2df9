package informer

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"

	"github.com/informerdb/informerdb/store"
)

// Tests of Options.Queue = DeltaFIFOQueue: the informer applies the
// per-key batches of deltafifo.DeltaFIFO, moves its resume point by the
// queue's watermark only, and commits a relist, which the queue hands out
// key by key, in one commit (DESIGN invariants 1 and 2).

func deltaFIFOOptions() Options {
	o := testOptions()
	o.Queue = DeltaFIFOQueue
	return o
}

func TestQueueOptionUnknown(t *testing.T) {
	_, err := New(newFakeLW(), nil, openStore(t, "memory://"), &Options{Queue: QueueKind(7)})
	if err == nil {
		t.Fatal("New with Queue 7: no error")
	}
	if want := "informer: options: unknown Queue QueueKind(7)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// waitArrived waits until inf's queue has taken n events in all.
func waitArrived(t *testing.T, inf *Informer, n uint64) {
	t.Helper()
	pollUntil(t, fmt.Sprintf("the queue to take %d events", n), func() string {
		if got := (*inf.queuePub.Load()).Arrived(); got < n {
			return fmt.Sprintf("%d taken", got)
		}
		return ""
	})
}

// holdPopLoop holds the commit of a new object "first" and lets the pop
// loop take one more ("second"), which then waits for the committer: the
// events queued after it stay in the queue until release. It returns how
// many events the queue has taken.
func holdPopLoop(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore) uint64 {
	t.Helper()
	holdCommitOf(t, lw, c, "first")
	lw.create("ns", "second", "1")
	waitPending(t, inf, 2)
	return (*inf.queuePub.Load()).Arrived()
}

// TestQueueGroupsPerKey shows what the option changes for handlers, on
// every backend: with DeltaFIFO the changes of a key queued behind a slow
// commit reach the handlers together, keys in the order of their first
// change; with the in-order queue, in the order they happened.
func TestQueueGroupsPerKey(t *testing.T) {
	for _, tc := range []struct {
		queue QueueKind
		want  []string
	}{
		{InOrderQueue, []string{"update ns/a 2", "add ns/b 1", "update ns/a 3"}},
		{DeltaFIFOQueue, []string{"update ns/a 2", "update ns/a 3", "add ns/b 1"}},
	} {
		t.Run(tc.queue.String(), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend) {
				lw := newFakeLW()
				lw.noBookmarks = true
				inner := b.open(t)
				c, s := newCrashStore(inner)
				opts := testOptions()
				opts.Queue = tc.queue
				inf := newInformer(t, lw, s, opts)
				h := newRecorder()
				addHandler(t, inf, h)
				start(t, inf)
				waitDone(t, "sync", inf.HasSyncedChecker())
				lw.create("ns", "a", "1")
				h.wait(t, 1)

				arrived := holdPopLoop(t, lw, inf, c)
				lw.update("ns", "a", "2")
				lw.create("ns", "b", "1")
				lw.update("ns", "a", "3")
				waitArrived(t, inf, arrived+3)
				c.release <- struct{}{}

				var got []string
				for _, e := range h.wait(t, 6)[3:] { // after a, first and second
					got = append(got, e.Op+" "+e.Key+" "+e.Value)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("notifications (-want +got):\n%s", diff)
				}
				if !waitApplied(t, lw, inner, nil) {
					t.Fatal("not applied")
				}
			})
		})
	}
}

// TestDeltaFIFOBookmarksAndEmptyRelists checks, on every backend, that
// with DeltaFIFO a bookmark on a quiet stream moves the persisted resume
// point, and that a resource the server stops serving (an empty relist
// without a resourceVersion, which the queue hands out as a batch without
// deltas) empties the store without moving it, and syncs a cold start.
func TestDeltaFIFOBookmarksAndEmptyRelists(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.noBookmarks = true
		s := b.open(t)
		inf := newInformer(t, lw, s, deltaFIFOOptions())
		h := newRecorder()
		addHandler(t, inf, h)
		start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
		lw.create("ns", "a", "1")
		lw.create("ns", "b", "1")
		if !waitApplied(t, lw, s, nil) {
			t.Fatal("not applied")
		}
		// Something outside the informer's scope is written: only a
		// bookmark tells the informer of the newer resourceVersion.
		lw.mu.Lock()
		lw.rv += 5
		lw.mu.Unlock()
		lw.sendBookmark()
		if !waitApplied(t, lw, s, nil) {
			t.Fatal("bookmark not applied")
		}

		rv := s.ResourceVersion()
		lw.setGone(true)
		pollUntil(t, "the handler told of both deletes", func() string {
			if st := toldState(h); len(st) > 0 {
				return fmt.Sprintf("still told of %v", st)
			}
			return ""
		})
		if n := len(s.ListKeys()); n != 0 {
			t.Errorf("%d objects stored after the resource went away, want none", n)
		}
		if got := s.ResourceVersion(); got != rv {
			t.Errorf("resume point %q after the resource went away, want %q (unchanged)", got, rv)
		}
	})
	t.Run("cold start on an unserved resource", func(t *testing.T) {
		lw := newFakeLW()
		lw.setGone(true)
		inf := newInformer(t, lw, openStore(t, "memory://"), deltaFIFOOptions())
		start(t, inf)
		waitDone(t, "sync", inf.HasSyncedChecker())
	})
}

// deltaCrashScenarios run with DeltaFIFO, each from a synced informer
// whose store holds ns/a, ns/b and ns/c at v=1. exact says whether the
// store must hold exactly the server's state at its resume point after
// the crash: true where nothing is reordered. Where DeltaFIFO reorders,
// keys popped ahead of the watermark may be stored in a newer state (see
// DeltaFIFOQueue), and each stored key must be in a state it had at the
// resume point or later.
var deltaCrashScenarios = []struct {
	crashScenario
	exact bool
}{
	{
		// a's second change is popped with its first, ahead of d and b:
		// the watermark stays behind d's first event until d is out.
		crashScenario: crashScenario{
			name: "reordered events",
			run: func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func()) {
				arrived := holdPopLoop(t, lw, inf, c)
				lw.update("ns", "a", "2")
				lw.create("ns", "d", "1")
				lw.update("ns", "a", "3")
				lw.remove("ns", "b")
				lw.update("ns", "d", "2")
				lw.update("ns", "c", "2")
				waitArrived(t, inf, arrived+6)
				arm()
				c.release <- struct{}{}
			},
		},
	},
	{
		// A relist queued behind a held commit: the queue hands it out
		// key by key; every crash must find it wholly applied with its
		// resourceVersion, or not at all.
		crashScenario: crashScenario{
			name: "relist handed out key by key",
			run: func(t *testing.T, lw *fakeLW, inf *Informer, c *crashStore, arm func()) {
				arrived := holdPopLoop(t, lw, inf, c)
				lists := lw.fullLists()
				lw.muteWatches()
				lw.update("ns", "a", "2")
				lw.remove("ns", "b")
				lw.create("ns", "d", "1")
				lw.create("ns", "e", "1")
				lw.expireWatches()
				pollUntil(t, "the relist", func() string {
					if lw.fullLists() == lists {
						return "not listed yet"
					}
					return ""
				})
				waitArrived(t, inf, arrived+1)
				arm()
				c.release <- struct{}{}
			},
		},
		exact: true,
	},
}

// TestDeltaFIFOCrashAtEveryCommit is TestCrashAtEveryCommit for
// DeltaFIFO, on every backend: it crashes before each commit in turn,
// checks the store, restarts on it with a DeltaFIFO and checks that the
// informer catches up with the server.
func TestDeltaFIFOCrashAtEveryCommit(t *testing.T) {
	for _, sc := range deltaCrashScenarios {
		t.Run(sc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend) {
				for k := 0; ; k++ {
					crashed := false
					t.Run("crash="+strconv.Itoa(k), func(t *testing.T) {
						crashed = deltaCrashAt(t, b, sc.crashScenario, sc.exact, k)
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

func deltaCrashAt(t *testing.T, b backend, sc crashScenario, exact bool, k int) bool {
	lw, inner, crashed := crashFirstRun(t, b, sc, deltaFIFOOptions(), nil, k)

	rv := inner.ResourceVersion()
	if exact {
		if diff := cmp.Diff(lw.stateAt(rv), storeValues(inner)); diff != "" {
			t.Errorf("crash before commit %d: the store is not the server's state at its resume point %s (-server at %[2]s +store):\n%s", k, rv, diff)
		}
	} else if bad := notSince(lw, rv, storeValues(inner)); len(bad) > 0 {
		t.Errorf("crash before commit %d: keys in a state they never had at or after the resume point %s: %v", k, rv, bad)
	}

	s2 := b.restart(t, inner)
	inf2 := newInformer(t, lw, s2, deltaFIFOOptions())
	h := newRecorder()
	addHandler(t, inf2, h)
	start(t, inf2)
	lw.create("ns", "after", "1")
	waitDone(t, "restarted informer sync", inf2.HasSyncedChecker())
	if !waitApplied(t, lw, s2, nil) {
		t.Fatal("restarted informer did not catch up")
	}
	pollUntil(t, "the handler to hold the server's state", func() string {
		return cmp.Diff(lw.values(), toldState(h))
	})
	return crashed
}

// notSince returns the keys of stored (key -> data "v") whose state is
// none the key had at resourceVersion rv or later: what a DeltaFIFO's
// watermark allows is a state at least as new as the resume point.
func notSince(lw *fakeLW, rv string, stored map[string]string) []string {
	from, err := parseRV(rv)
	if err != nil {
		return []string{"resume point " + rv}
	}
	to, _ := parseRV(lw.currentRV())
	const absent = "\x00absent"
	var states []map[string]string
	allowed := map[string]map[string]bool{}
	for key := range stored {
		allowed[key] = map[string]bool{}
	}
	for n := from; n <= to; n++ {
		at := lw.stateAt(lw.fmtRV(n))
		states = append(states, at)
		for key := range at {
			allowed[key] = map[string]bool{}
		}
	}
	for _, at := range states {
		for key, set := range allowed {
			if v, ok := at[key]; ok {
				set[v] = true
			} else {
				set[absent] = true
			}
		}
	}
	var bad []string
	for key, set := range allowed {
		v, ok := stored[key]
		if !ok {
			v = absent
		}
		if !set[v] {
			bad = append(bad, fmt.Sprintf("%s=%q", key, v))
		}
	}
	return bad
}

// cancelOnRead is a store that calls cancel when, once armed, a key of
// keys is read for the second time: the informer reads the stored state
// of a key when it applies the key's deltas, so the informer then holds
// one key of the relist and is applying the next.
type cancelOnRead struct {
	store.Store
	keys   map[string]bool
	armed  atomic.Bool
	reads  atomic.Int32
	cancel atomic.Pointer[func()]
}

func (c *cancelOnRead) GetByKey(key string) (interface{}, bool, error) {
	if c.armed.Load() && c.keys[key] && c.reads.Add(1) == 2 {
		(*c.cancel.Load())()
	}
	return c.Store.GetByKey(key)
}

// TestDeltaFIFORelistPartlyPopped stops the informer (as a process
// killed then would) after it has popped the first keys of a relist and
// before it has popped the rest, on every backend: nothing of the relist
// may be persisted (DESIGN invariant 2), and the restarted informer, whose
// resume point the server no longer serves, relists and hands the delete
// the first run never committed to its handlers as a tombstone with the
// last stored object (DESIGN invariant 4).
func TestDeltaFIFORelistPartlyPopped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		lw.noBookmarks = true
		inner := b.open(t)
		s := &cancelOnRead{Store: inner, keys: map[string]bool{"ns/a": true, "ns/c": true, "ns/d": true}}
		inf := newInformer(t, lw, s, deltaFIFOOptions())
		h0 := newRecorder()
		addHandler(t, inf, h0)
		r := start(t, inf)
		cancel := func() { r.cancel() }
		s.cancel.Store(&cancel)
		waitDone(t, "first run sync", inf.HasSyncedChecker())
		for _, n := range []string{"a", "b", "c"} {
			lw.create("ns", n, "1")
		}
		if !waitApplied(t, lw, inner, nil) {
			t.Fatal("first events not applied")
		}
		// The store holds a commit a moment before Stats counts it; the
		// handler hears of it after. So Commits is read once the handler
		// heard of the three creates.
		h0.wait(t, 3)
		before, beforeRV := storeValues(inner), inner.ResourceVersion()
		commits := inf.Stats().Commits

		lw.muteWatches()
		lw.update("ns", "a", "2")
		lw.update("ns", "c", "2")
		lw.remove("ns", "b")
		lw.create("ns", "d", "1")
		lw.compact()
		s.armed.Store(true)
		lw.expireWatches() // the relist: a, c, d listed, b gone
		select {
		case <-r.done:
		case <-time.After(waitLimit):
			t.Fatal("the informer did not stop while popping the relist")
		}
		if got := inf.Stats(); got.Commits != commits {
			t.Errorf("%d commits after the relist began, want none (stats %+v)", got.Commits-commits, got)
		}
		if got := inner.ResourceVersion(); got != beforeRV {
			t.Errorf("resume point %q after a relist partly popped, want %q", got, beforeRV)
		}
		if diff := cmp.Diff(before, storeValues(inner)); diff != "" {
			t.Errorf("store after a relist partly popped (-before +after):\n%s", diff)
		}

		s2 := b.restart(t, inner)
		inf2 := newInformer(t, lw, s2, deltaFIFOOptions())
		h := newRecorder()
		addHandler(t, inf2, h)
		start(t, inf2)
		waitDone(t, "restarted informer sync", inf2.HasSyncedChecker())
		if !waitApplied(t, lw, s2, nil) {
			t.Fatal("restarted informer did not catch up")
		}
		pollUntil(t, "the handler to hold the server's state", func() string {
			return cmp.Diff(lw.values(), toldState(h))
		})
		var deletes []ev
		for _, e := range h.all() {
			if e.Op == "delete" {
				deletes = append(deletes, e)
			}
		}
		want := []ev{{Op: "delete", Key: "ns/b", Value: "1", UID: "uid-2", Tomb: true}}
		if diff := cmp.Diff(want, deletes); diff != "" {
			t.Errorf("deletes after the restart (-want +got):\n%s", diff)
		}
	})
}

// TestDifferentialDeltaFIFO is TestDifferential with DeltaFIFO on both
// sides: client-go's informer with its DeltaFIFO (the InOrderInformers
// feature gate off, as before client-go v0.33 made it the default) and
// this package's with DeltaFIFOQueue. The gate is process-wide, so this
// test is not parallel with other top-level tests: it runs, with its
// seeds, before the parallel ones start.
func TestDifferentialDeltaFIFO(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.InOrderInformers, false)
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			runDifferential(t, seed, deltaFIFOOptions())
		})
	}
}

// toldState returns key -> data "v" of the objects h was last told of.
func toldState(h *recorder) map[string]string {
	out := map[string]string{}
	for _, e := range h.all() {
		if e.Op == "delete" {
			delete(out, e.Key)
		} else {
			out[e.Key] = e.Value
		}
	}
	return out
}
