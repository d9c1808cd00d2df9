package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestDifferential runs client-go's own SharedIndexInformer and this
// package's Informer, on every backend, against fakeLWs fed the same
// seeded script of API changes, and checks that every handler of every
// informer is told the same things about each object as the matching
// handler of client-go's.
//
// The script has four parts, each one a thing client-go specifies:
//   - changes before the start, which the first list delivers (OnAdd with
//     isInInitialList=true);
//   - changes delivered by the watch (keys created, updated, deleted and
//     created again);
//   - a watch that ends with 410 after the history it would resume from was
//     compacted, with changes made meanwhile that the watch never delivered
//     (deletes among them): the relist delivers them, deletes as
//     cache.DeletedFinalStateUnknown, and objects it finds unchanged as
//     OnUpdate with equal resourceVersions (relist-as-resync);
//   - handlers added late, one before and one after that relist, which are
//     first handed every object the informer has.
//
// Handlers are compared key by key: client-go promises the order of the
// notifications of one object, not how those of different objects
// interleave (a relist, for one, delivers its deletes first). The
// comparison is exact but for the two differences this package makes on
// purpose, spelled out by recreationsAsTombstones and withTombstones.
//
// Only the client-go side waits out its reflector's backoff (0.8 s to 1.6 s
// before it relists, not configurable from a SharedIndexInformer), so one
// client-go informer per seed is the reference for every backend, and the
// seeds run in parallel.
func TestDifferential(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			runDifferential(t, seed, testOptions())
		})
	}
}

func runDifferential(t *testing.T, seed uint64, opts Options) {
	bs := backends(t)
	sc := newDiffScript(seed, 1+len(bs))

	// What the first list finds.
	sc.changes(8)

	ref := &diffSubject{name: "client-go", lw: sc.lws[0], inf: cache.NewSharedIndexInformer(
		&cache.ListWatch{ListWithContextFunc: sc.lws[0].ListWithContext, WatchFuncWithContext: sc.lws[0].WatchWithContext},
		&corev1.ConfigMap{}, 0, cache.Indexers{})}
	subjects := []*diffSubject{ref}
	for i, b := range bs {
		lw := sc.lws[i+1]
		subjects = append(subjects, &diffSubject{name: b.scheme, lw: lw, inf: newInformer(t, lw, b.open(t), opts)})
	}
	for _, s := range subjects {
		s.early = s.addHandler(t, "early")
		s.run(t)
	}
	for _, s := range subjects {
		waitDone(t, s.name+" sync", s.inf.HasSyncedChecker())
		// Changes made before the watch is open would reach the informer
		// through the list or the watch depending on timing.
		waitListedAndWatching(t, s, 1)
	}

	sc.changes(12)
	// A late handler is handed what the informer holds when it is added:
	// all informers must be at the same point then.
	waitToldOfCurrent(t, subjects, func(s *diffSubject) []*diffRecorder { return []*diffRecorder{s.early} })
	// What the early handler was told of when each late one is added:
	// the deletes among it reach the late handler first (tombstones).
	earlyAt := map[string]map[string][]diffNote{"late, before the relist": recreationsAsTombstones(ref.early.notes())}
	for _, s := range subjects {
		s.lateBeforeRelist = s.addHandler(t, "late, before the relist")
	}

	sc.changes(12)
	sc.loseHistory(6)
	for _, s := range subjects {
		// The changes after this one must come through the new watch, not
		// the relist, on every side.
		waitListedAndWatching(t, s, 2)
	}

	sc.changes(8)
	waitToldOfCurrent(t, subjects, func(s *diffSubject) []*diffRecorder {
		return []*diffRecorder{s.early, s.lateBeforeRelist}
	})
	earlyAt["late, after the relist"] = recreationsAsTombstones(ref.early.notes())
	for _, s := range subjects {
		s.lateAfterRelist = s.addHandler(t, "late, after the relist")
	}

	// The script ends with a change the watch delivers: a handler told of
	// it has been told of everything before it.
	sc.changes(8)
	for _, s := range subjects {
		pollUntil(t, s.name+" final state", s.finalStateMismatch)
	}

	checkScriptCoverage(t, ref)
	for _, s := range subjects[1:] {
		t.Run("backend="+s.name, func(t *testing.T) {
			for i, h := range s.handlers() {
				want := recreationsAsTombstones(ref.handlers()[i].notes())
				if early, ok := earlyAt[h.name]; ok {
					want = withTombstones(early, want)
				}
				if diff := cmp.Diff(want, h.notes()); diff != "" {
					t.Errorf("%s handler, notifications per key (-want, from client-go +informerdb):\n%s", h.name, diff)
				}
			}
		})
	}
}

// recreationsAsTombstones returns client-go's notifications as this
// package means to deliver them. They differ in one case only, on purpose:
// a relist that finds a name deleted and created again while the watch was
// not looking (another UID under the same key). client-go hands that to
// handlers as an update of the old object to the new one
// (tools/cache/controller.go, processReplacedAllInfo: a relisted key the
// store has becomes an OnUpdate, whatever its UID). This package tells
// handlers that the old object is gone, as a cache.DeletedFinalStateUnknown
// carrying it, then adds the new one (apply.go, prepare; doc.go, Restart;
// DESIGN invariant 4), so that handlers keyed by UID see the delete.
//
// Only a relist can make such an update: a watch never reports another UID
// as a modification, and fakeLW keeps UIDs on update. The add is not in
// the initial list: the relist comes after the sync.
func recreationsAsTombstones(byKey map[string][]diffNote) map[string][]diffNote {
	out := make(map[string][]diffNote, len(byKey))
	for key, notes := range byKey {
		var want []diffNote
		for _, n := range notes {
			if n.Kind == "update" && n.OldUID != n.UID {
				want = append(want,
					diffNote{Kind: "delete", RV: n.OldRV, UID: n.OldUID, Tomb: true},
					diffNote{Kind: "add", RV: n.RV, UID: n.UID})
				continue
			}
			want = append(want, n)
		}
		out[key] = want
	}
	return out
}

// withTombstones returns the notifications of a handler added late, late,
// as this package delivers them: each key whose object was deleted before
// the handler was added (early holds what a handler present from the start
// had been told of then) begins with a tombstone of its last delete, as a
// cache.DeletedFinalStateUnknown carrying the deleted object (informer.go,
// initialNotesLocked; Options.TombstoneRetention), so that a handler added
// after the sync, as controller-runtime's are, hears of the deletes it
// missed.
func withTombstones(early, late map[string][]diffNote) map[string][]diffNote {
	out := make(map[string][]diffNote, len(late))
	for key, notes := range late {
		out[key] = notes
	}
	for key, notes := range early {
		for i := len(notes) - 1; i >= 0; i-- {
			if notes[i].Kind == "delete" {
				tomb := diffNote{Kind: "delete", RV: notes[i].RV, UID: notes[i].UID, Tomb: true}
				out[key] = append([]diffNote{tomb}, out[key]...)
				break
			}
		}
	}
	return out
}

// diffKeys is the key space of the script: small, so that keys are
// updated, deleted and created again.
var diffKeys = []diffKey{
	{"a", "k0"}, {"a", "k1"}, {"a", "k2"},
	{"b", "k0"}, {"b", "k1"}, {"b", "k2"},
}

type diffKey struct{ ns, name string }

// diffScript makes the same changes on every fakeLW, in the same order, so
// that every informer sees the same objects with the same resourceVersions
// and UIDs.
type diffScript struct {
	rng  *rand.Rand
	lws  []*fakeLW
	step int
}

func newDiffScript(seed uint64, n int) *diffScript {
	sc := &diffScript{rng: rand.New(rand.NewPCG(seed, seed))}
	for range n {
		sc.lws = append(sc.lws, newFakeLW())
	}
	return sc
}

func (sc *diffScript) each(f func(lw *fakeLW)) {
	for _, lw := range sc.lws {
		f(lw)
	}
}

// existing returns the keys of the objects the API server holds, sorted.
func (sc *diffScript) existing() []string {
	lw := sc.lws[0]
	lw.mu.Lock()
	defer lw.mu.Unlock()
	keys := make([]string, 0, len(lw.objs))
	for k := range lw.objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (sc *diffScript) exists(ns, name string) bool {
	k := cmKey(ns, name)
	for _, e := range sc.existing() {
		if e == k {
			return true
		}
	}
	return false
}

func (sc *diffScript) value() string {
	sc.step++
	return fmt.Sprintf("v%d", sc.step)
}

func (sc *diffScript) create(ns, name string) {
	v := sc.value()
	sc.each(func(lw *fakeLW) { lw.create(ns, name, v) })
}

func (sc *diffScript) update(ns, name string) {
	v := sc.value()
	sc.each(func(lw *fakeLW) { lw.update(ns, name, v) })
}

func (sc *diffScript) remove(ns, name string) {
	sc.each(func(lw *fakeLW) { lw.remove(ns, name) })
}

// change creates a random key of keys if it does not exist, and otherwise
// updates it or (one time in three) deletes it.
func (sc *diffScript) change(keys []diffKey) {
	k := keys[sc.rng.IntN(len(keys))]
	switch {
	case !sc.exists(k.ns, k.name):
		sc.create(k.ns, k.name)
	case sc.rng.IntN(3) == 0:
		sc.remove(k.ns, k.name)
	default:
		sc.update(k.ns, k.name)
	}
}

func (sc *diffScript) changes(n int) {
	for range n {
		sc.change(diffKeys)
	}
}

// loseHistory makes changes the open watches never deliver, compacts the
// history past them and ends the watches with 410, so that every informer
// relists. Whatever the seed, one object is deleted meanwhile, one deleted
// and created again, and one left alone (the relist finds it unchanged);
// n random changes of the other keys follow.
func (sc *diffScript) loseHistory(n int) {
	// Those three must exist first (their creation goes through the watch).
	for _, k := range diffKeys {
		if len(sc.existing()) >= 3 {
			break
		}
		if !sc.exists(k.ns, k.name) {
			sc.create(k.ns, k.name)
		}
	}
	keys := sc.existing()
	sc.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	gone, again, kept := splitKey(keys[0]), splitKey(keys[1]), splitKey(keys[2])

	sc.each((*fakeLW).muteWatches)
	sc.remove(gone.ns, gone.name)
	sc.remove(again.ns, again.name)
	sc.create(again.ns, again.name)
	var others []diffKey
	for _, k := range diffKeys {
		if k != kept {
			others = append(others, k)
		}
	}
	for range n {
		sc.change(others)
	}
	sc.each((*fakeLW).compact)
	sc.each((*fakeLW).expireWatches)
}

func splitKey(key string) diffKey {
	ns, name, _ := strings.Cut(key, "/")
	return diffKey{ns, name}
}

// diffSubject is one informer under test, with its own fakeLW.
type diffSubject struct {
	name string
	lw   *fakeLW
	inf  cache.SharedIndexInformer

	early            *diffRecorder
	lateBeforeRelist *diffRecorder
	lateAfterRelist  *diffRecorder
}

func (s *diffSubject) handlers() []*diffRecorder {
	return []*diffRecorder{s.early, s.lateBeforeRelist, s.lateAfterRelist}
}

// addHandler adds a recording handler and waits until it has been handed
// what the informer holds, when the informer has started.
func (s *diffSubject) addHandler(t *testing.T, name string) *diffRecorder {
	t.Helper()
	h := &diffRecorder{name: name, byKey: map[string][]diffNote{}, rvs: map[string]bool{}}
	reg, err := s.inf.AddEventHandler(h)
	if err != nil {
		t.Fatalf("%s: AddEventHandler: %v", s.name, err)
	}
	if s.inf.HasSynced() {
		waitDone(t, s.name+" "+name+" handler sync", reg.HasSyncedChecker())
	}
	return h
}

// run runs the informer until the test ends.
func (s *diffSubject) run(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// finalStateMismatch says how s differs from the API server's state, or
// returns "" if its store holds the server's objects and each handler's
// last notification of every key reports the server's state of it (after
// the handler was told of the newest change, so of every change).
func (s *diffSubject) finalStateMismatch() string {
	want := s.lw.resourceVersions()
	for _, h := range s.handlers() {
		if m := s.toldMismatch(h, want); m != "" {
			return m
		}
	}
	got := map[string]string{}
	for _, obj := range s.inf.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		got[keyOf(cm)] = cm.ResourceVersion
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return "store (-server +informer):\n" + diff
	}
	return ""
}

// toldMismatch says how what h was told differs from the server's state
// want (key -> resourceVersion), or returns "" if h was told of the newest
// change and its last notification of every key reports the server's
// state of it. Told of the newest change alone is not enough where the
// queue groups changes per key (DeltaFIFO): the newest change's key may be
// handed out before older changes of other keys.
func (s *diffSubject) toldMismatch(h *diffRecorder, want map[string]string) string {
	current := s.lw.currentRV()
	if !h.told(current) {
		return fmt.Sprintf("%s handler not told of the newest change (resourceVersion %s)", h.name, current)
	}
	for key, notes := range h.notes() {
		last := notes[len(notes)-1]
		rv, exists := want[key]
		switch {
		case exists && (last.Kind == "delete" || last.RV != rv):
			return fmt.Sprintf("%s handler: last notification of %s is %+v, want the object at resourceVersion %s", h.name, key, last, rv)
		case !exists && last.Kind != "delete":
			return fmt.Sprintf("%s handler: last notification of %s is %+v, want a delete", h.name, key, last)
		}
	}
	for key := range want {
		if _, ok := h.notes()[key]; !ok {
			return fmt.Sprintf("%s handler never told of %s", h.name, key)
		}
	}
	return ""
}

// resourceVersions returns key -> resourceVersion for every object of f.
func (f *fakeLW) resourceVersions() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, cm := range f.objs {
		out[k] = cm.ResourceVersion
	}
	return out
}

// diffNote is one notification of a key, reduced to what identifies it.
type diffNote struct {
	Kind string // add, update, delete
	// RV and UID are those of the new object (add, update) or of the
	// deleted one, the one in the tombstone included (delete).
	RV, UID       string
	OldRV, OldUID string // update: the old object
	Initial       bool   // add: isInInitialList
	Tomb          bool   // delete: a cache.DeletedFinalStateUnknown
}

// diffRecorder records the notifications of each key in order.
type diffRecorder struct {
	name  string
	mu    sync.Mutex
	byKey map[string][]diffNote
	rvs   map[string]bool // resourceVersions of every object notified
}

func (r *diffRecorder) record(key string, n diffNote) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKey[key] = append(r.byKey[key], n)
	r.rvs[n.RV] = true
}

func rvAndUID(obj interface{}) (rv, uid string) {
	cm := cmOf(obj)
	if cm == nil {
		return "<no object>", "<no object>"
	}
	return cm.ResourceVersion, string(cm.UID)
}

func (r *diffRecorder) OnAdd(obj interface{}, isInInitialList bool) {
	rv, uid := rvAndUID(obj)
	r.record(keyOf(obj), diffNote{Kind: "add", RV: rv, UID: uid, Initial: isInInitialList})
}

func (r *diffRecorder) OnUpdate(oldObj, newObj interface{}) {
	rv, uid := rvAndUID(newObj)
	oldRV, oldUID := rvAndUID(oldObj)
	r.record(keyOf(newObj), diffNote{Kind: "update", RV: rv, UID: uid, OldRV: oldRV, OldUID: oldUID})
}

func (r *diffRecorder) OnDelete(obj interface{}) {
	_, tomb := obj.(cache.DeletedFinalStateUnknown)
	rv, uid := rvAndUID(obj)
	r.record(keyOf(obj), diffNote{Kind: "delete", RV: rv, UID: uid, Tomb: tomb})
}

// notes returns a copy of the notifications so far, by key.
func (r *diffRecorder) notes() map[string][]diffNote {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]diffNote, len(r.byKey))
	for k, ns := range r.byKey {
		out[k] = append([]diffNote(nil), ns...)
	}
	return out
}

// told reports whether a notification carried an object at rv.
func (r *diffRecorder) told(rv string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rvs[rv]
}

// waitToldOfCurrent waits until the handlers picked of every subject have
// been told of the newest change, which the watch delivers, and of the
// server's state of every key (see toldMismatch): the informer then has
// nothing left to deliver.
func waitToldOfCurrent(t *testing.T, subjects []*diffSubject, pick func(*diffSubject) []*diffRecorder) {
	t.Helper()
	for _, s := range subjects {
		want := s.lw.resourceVersions()
		for _, h := range pick(s) {
			pollUntil(t, s.name+" "+h.name+" handler told of the server's state", func() string {
				return s.toldMismatch(h, want)
			})
		}
	}
}

// waitListedAndWatching waits until s's informer has made its lists-th
// full list and opened a watch from it. The API server does not change
// meanwhile, so the list and the watch are at its current
// resourceVersion. A list more than expected fails the test at once: the
// per-key comparison would then only report its consequences.
func waitListedAndWatching(t *testing.T, s *diffSubject, lists int) {
	t.Helper()
	pollUntil(t, fmt.Sprintf("%s list %d and watch", s.name, lists), func() string {
		lw := s.lw
		lw.mu.Lock()
		defer lw.mu.Unlock()
		n := lw.fullListsLocked()
		if n > lists {
			t.Fatalf("%s made %d full lists, want %d", s.name, n, lists)
		}
		if n < lists {
			return fmt.Sprintf("%d full lists, want %d", n, lists)
		}
		if len(lw.watches) == 0 || lw.watches[len(lw.watches)-1].ResourceVersion != lw.fmtRV(lw.rv) || len(lw.watchers) == 0 {
			return "no watch open from resourceVersion " + lw.fmtRV(lw.rv)
		}
		return ""
	})
}

// checkScriptCoverage checks that client-go's handlers were told each kind
// of notification the script is there to compare, so that a change to the
// script cannot quietly make the comparison weaker. A late handler's adds
// are in its initial list: client-go hands it the existing objects with
// isInInitialList=true (tools/cache/shared_informer.go,
// AddEventHandlerWithOptions).
func checkScriptCoverage(t *testing.T, ref *diffSubject) {
	t.Helper()
	seen := map[string]bool{}
	for _, h := range ref.handlers() {
		for _, notes := range h.notes() {
			for _, n := range notes {
				switch {
				case n.Kind == "add" && n.Initial && h == ref.early:
					seen["initial-list add"] = true
				case n.Kind == "add" && n.Initial:
					seen["late handler add"] = true
				case n.Kind == "add":
					seen["add"] = true
				case n.Kind == "update" && n.UID != n.OldUID:
					seen["relist update to a re-created object"] = true
				case n.Kind == "update" && n.RV == n.OldRV:
					seen["relist update of an unchanged object"] = true
				case n.Kind == "update":
					seen["update"] = true
				case n.Kind == "delete" && n.Tomb:
					seen["tombstone delete"] = true
				case n.Kind == "delete":
					seen["delete"] = true
				}
			}
		}
	}
	for _, want := range []string{
		"initial-list add", "late handler add", "add", "relist update of an unchanged object",
		"update", "tombstone delete", "delete", "relist update to a re-created object",
	} {
		if !seen[want] {
			t.Errorf("client-go's handlers got no %s: the script does not cover it", want)
		}
	}
}
