package informer

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/informerdb/informerdb/reflector"
)

// otherWrite moves the fake server's resourceVersion without an event its
// watches see: another resource's write (a lease renewal), after which a
// resumed informer reaches its sync target only with a bookmark.
func (f *fakeLW) otherWrite() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
}

// setBookmarks turns on or off the bookmark a watch gets when it starts.
func (f *fakeLW) setBookmarks(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noBookmarks = !on
}

// bookmarkWatches sends every open watch a bookmark at the current
// resourceVersion.
func (f *fakeLW) bookmarkWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watchers {
		w.send(watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: f.fmtRV(f.rv)}}})
	}
}

// fakeState is a StateLister of a fakeLW: the metadata of its objects at
// its current resourceVersion. With stale, the resourceVersion it reports
// is one below the current one; with err, it fails.
type fakeState struct {
	lw    *fakeLW
	stale bool
	err   error

	mu    sync.Mutex
	calls int
}

func (s *fakeState) ListState(context.Context) ([]metav1.Object, string, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	if s.err != nil {
		return nil, "", s.err
	}
	s.lw.mu.Lock()
	defer s.lw.mu.Unlock()
	var items []metav1.Object
	for _, cm := range s.lw.objs {
		items = append(items, &metav1.PartialObjectMetadata{ObjectMeta: *cm.ObjectMeta.DeepCopy()})
	}
	rv := s.lw.rv
	if s.stale {
		rv--
	}
	return items, s.lw.fmtRV(rv), nil
}

// stateWaiting reports whether inf waits for the keys that differ from a
// listed state (its outstanding keys, sorted), and whether it does.
func stateWaiting(inf *Informer) ([]string, bool) {
	inf.applyMu.Lock()
	defer inf.applyMu.Unlock()
	if inf.state == nil {
		return nil, false
	}
	var keys []string
	for k := range inf.state.outstanding {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, true
}

// TestStateCatchUp: a resumed informer with Options.StateCatchUp, on a
// server whose newest revision is not one of its objects and which sends
// no bookmark, syncs once its store holds the server's listed state: not
// before the watch's events of the keys that differ are applied (held
// back here until the test has seen it wait for exactly those keys),
// with every change while down delivered to the handler, deletes
// included, and no relist.
func TestStateCatchUp(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		lw, s := firstRun(t, b)
		lists := lw.fullLists()
		changeWhileDown(lw)
		lw.otherWrite()
		lw.setBookmarks(false)
		gate := make(chan struct{})
		lw.setGate(gate)

		opts := testOptions()
		state := &fakeState{lw: lw}
		opts.StateCatchUp = state
		inf := newInformer(t, lw, s, opts)
		h := newRecorder()
		reg := addHandler(t, inf, h)
		start(t, inf)

		var waiting []string
		pollUntil(t, "the informer waits for the listed state", func() string {
			keys, ok := stateWaiting(inf)
			if !ok {
				return "no state listed yet"
			}
			waiting = keys
			return ""
		})
		// e created, a updated, b deleted, c deleted and created again.
		if diff := cmp.Diff([]string{"ns/a", "ns/b", "ns/c", "ns/e"}, waiting); diff != "" {
			t.Errorf("keys waited for (-want +got):\n%s", diff)
		}
		if inf.HasSynced() {
			t.Fatalf("synced before the watch's events of the keys that differ were applied")
		}
		close(gate)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		waitDone(t, "handler sync", reg.HasSyncedChecker())
		if diff := cmp.Diff(lw.values(), storeValues(inf.GetStore())); diff != "" {
			t.Errorf("store at sync (-server +store):\n%s", diff)
		}
		st := inf.Stats()
		if !st.SyncedByState || st.StateLists != 1 {
			t.Errorf("Stats: SyncedByState %v, StateLists %d; want true, 1", st.SyncedByState, st.StateLists)
		}
		if !st.Reflector.CaughtUpAt.IsZero() {
			t.Errorf("the reflector caught up at %v, on a server that sends no bookmark", st.Reflector.CaughtUpAt)
		}
		if n := lw.fullLists() - lists; n != 0 {
			t.Errorf("%d full lists on the restart, want none", n)
		}
		evs := h.wait(t, len(replayed)+5)
		sortReplay(evs, len(replayed))
		want := append(append([]ev{}, replayed...),
			ev{Op: "add", Key: "ns/e", Value: "e1", UID: "uid-5"},
			ev{Op: "update", Key: "ns/a", Value: "a2", OldVal: "a1", UID: "uid-1", OldUID: "uid-1"},
			ev{Op: "delete", Key: "ns/b", Value: "b1", UID: "uid-2"},
			ev{Op: "delete", Key: "ns/c", Value: "c1", UID: "uid-3"},
			ev{Op: "add", Key: "ns/c", Value: "c2", UID: "uid-6"},
		)
		if diff := cmp.Diff(want, evs); diff != "" {
			t.Errorf("handler events (-want +got):\n%s", diff)
		}
	})
}

// TestStateCatchUpNothingChanged: with no change of the informer's objects
// while it was down, the listed state is the store's, and the informer
// syncs on it at once, without any watch event or bookmark.
func TestStateCatchUpNothingChanged(t *testing.T) {
	lw, s := firstRun(t, backends(t)[0])
	lw.otherWrite()
	lw.setBookmarks(false)
	opts := testOptions()
	opts.StateCatchUp = &fakeState{lw: lw}
	inf := newInformer(t, lw, s, opts)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if st := inf.Stats(); !st.SyncedByState || st.Deltas != 0 {
		t.Errorf("Stats: SyncedByState %v, Deltas %d; want true, 0", st.SyncedByState, st.Deltas)
	}
}

// TestStateCatchUpFallsBack: a state the informer cannot use (the list
// fails, or its resourceVersion is before the sync target) leaves the
// catch-up to the reflector's bookmark: the informer syncs when one comes,
// not by the state.
func TestStateCatchUpFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state func(*fakeLW) *fakeState
	}{
		{"list fails", func(lw *fakeLW) *fakeState { return &fakeState{lw: lw, err: errors.New("injected")} }},
		{"older than the target", func(lw *fakeLW) *fakeState { return &fakeState{lw: lw, stale: true} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw, s := firstRun(t, backends(t)[0])
			lw.otherWrite()
			lw.setBookmarks(false)
			opts := testOptions()
			state := tc.state(lw)
			opts.StateCatchUp = state
			inf := newInformer(t, lw, s, opts)
			start(t, inf)
			pollUntil(t, "the state listed", func() string {
				if inf.Stats().StateLists == 0 {
					return "not yet"
				}
				return ""
			})
			lw.bookmarkWatches()
			waitDone(t, "informer sync", inf.HasSyncedChecker())
			// The informer may apply the bookmark, and sync, a moment
			// before the reflector that queued it records its catch-up.
			pollUntil(t, "the reflector's catch-up", func() string {
				if inf.Stats().Reflector.CaughtUpAt.IsZero() {
					return "not yet"
				}
				return ""
			})
			st := inf.Stats()
			if st.SyncedByState {
				t.Errorf("synced by a state it could not use")
			}
			if st.Reflector.Relists != (reflector.RelistStats{}) {
				t.Errorf("reflector caught up at %v with relists %+v; want a catch-up by the bookmark, no relist", st.Reflector.CaughtUpAt, st.Reflector.Relists)
			}
		})
	}
}

// TestStateCatchUpOtherScope: a lister of another scope than the
// informer's (here one object more) never matches the store, so it never
// syncs the informer; the bookmark does.
func TestStateCatchUpOtherScope(t *testing.T) {
	lw, s := firstRun(t, backends(t)[0])
	lw.otherWrite()
	lw.setBookmarks(false)
	other := newFakeLW()
	other.create("elsewhere", "x", "x1")
	opts := testOptions()
	opts.StateCatchUp = &mergedState{a: &fakeState{lw: lw}, b: &fakeState{lw: other}}
	inf := newInformer(t, lw, s, opts)
	start(t, inf)
	var waiting []string
	pollUntil(t, "the informer waits for the listed state", func() string {
		keys, ok := stateWaiting(inf)
		if !ok {
			return "no state listed yet"
		}
		waiting = keys
		return ""
	})
	if diff := cmp.Diff([]string{"elsewhere/x"}, waiting); diff != "" {
		t.Errorf("keys waited for (-want +got):\n%s", diff)
	}
	if inf.HasSynced() {
		t.Fatalf("synced by a state that lists an object the informer does not watch")
	}
	lw.bookmarkWatches()
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if inf.Stats().SyncedByState {
		t.Errorf("synced by a state of another scope")
	}
}

// mergedState lists a's objects and b's, at a's resourceVersion.
type mergedState struct{ a, b StateLister }

func (m *mergedState) ListState(ctx context.Context) ([]metav1.Object, string, error) {
	items, rv, err := m.a.ListState(ctx)
	if err != nil {
		return nil, "", err
	}
	more, _, err := m.b.ListState(ctx)
	return append(items, more...), rv, err
}

// TestStateCatchUpColdStart: a cold start lists everything anyway; it
// makes no state list.
func TestStateCatchUpColdStart(t *testing.T) {
	lw := newFakeLW()
	lw.create("ns", "a", "a1")
	opts := testOptions()
	opts.StateCatchUp = &fakeState{lw: lw}
	inf := newInformer(t, lw, backends(t)[0].open(t), opts)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if st := inf.Stats(); st.StateLists != 0 || st.SyncedByState || st.Reflector.Relists.Cold != 1 {
		t.Errorf("cold start: StateLists %d, SyncedByState %v, cold relists %d; want 0, false, 1", st.StateLists, st.SyncedByState, st.Reflector.Relists.Cold)
	}
}

// TestStateCatchUpTimeTravel: after time travel (a server restored from a
// backup older than the resume point) the reflector relists, and the
// stored objects, from another history, must not be compared with the
// server's state: an object the server no longer has, whose
// resourceVersion compares as newer than that state's, would count as
// fresh. No state is listed; the relist syncs the informer.
func TestStateCatchUpTimeTravel(t *testing.T) {
	lw := newFakeLW()
	for _, n := range []string{"a", "b", "c"} {
		lw.create("ns", n, n+"1")
	}
	s := openStore(t, "memory://")
	inf := newInformer(t, lw, s, testOptions())
	r := start(t, inf)
	waitDone(t, "first run sync", inf.HasSyncedChecker())
	r.stop()

	// The restored server holds a and b at the resourceVersions the store
	// has for them, and is at resourceVersion 2, before the resume point 3.
	older := newFakeLW()
	older.create("ns", "a", "a1")
	older.create("ns", "b", "b1")
	gs := &gatedStore{Store: s, entered: make(chan int, 10), release: make(chan struct{})}
	gs.closed.Store(true)
	opts := testOptions()
	opts.StateCatchUp = &fakeState{lw: older}
	inf = newInformer(t, older, gs, opts)
	start(t, inf)
	select {
	case <-gs.entered: // the relist is being committed, and held
	case <-time.After(waitLimit):
		t.Fatal("no commit")
	}
	close(gs.release)
	waitDone(t, "sync after the relist", inf.HasSyncedChecker())
	if keys := inf.GetStore().ListKeys(); len(keys) != 2 {
		t.Errorf("store keys once synced = %v, want ns/a and ns/b", keys)
	}
	if st := inf.Stats(); st.StateLists != 0 || st.SyncedByState || st.Reflector.Relists.TimeTravel != 1 {
		t.Errorf("StateLists %d, SyncedByState %v, time-travel relists %d; want 0, false, 1", st.StateLists, st.SyncedByState, st.Reflector.Relists.TimeTravel)
	}
}
