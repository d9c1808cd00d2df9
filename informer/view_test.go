package informer

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
	"github.com/informerdb/informerdb/store"
)

func viewCM(name, rv, uid string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, UID: k8stypes.UID(uid)}}
}

// commitDuringListKeys is a store whose ListKeys lets a commit land
// right after it took its snapshot of the keys: what the committer
// goroutine of popLoop does while the reflector's Replace (under the
// queue lock) reads the view. The commit is exactly the one a popped,
// not yet committed group makes: it puts the key the view holds pending.
type commitDuringListKeys struct {
	store.Store
	hook func()
}

func (s *commitDuringListKeys) ListKeys() []string {
	keys := s.Store.ListKeys()
	if h := s.hook; h != nil {
		s.hook = nil
		h()
	}
	return keys
}

// TestViewListKeysWhileCommitLands: view.ListKeys once read the store's
// keys, then, for each pending (popped, uncommitted) key, asked the store
// again whether it held it. If the group's commit landed between the two
// reads, a newly created key was in neither answer: ListKeys omitted it. The
// queue's Replace then emits no DeletedFinalStateUnknown for it, and an
// object deleted on the server while the watch was down stays in the store
// for good, never reported to handlers (DESIGN invariant 4).
func TestViewListKeysWhileCommitLands(t *testing.T) {
	base := openStore(t, "memory://")
	s := &commitDuringListKeys{Store: base}
	v := newView(s)
	obj := viewCM("new", "5", "u1")
	// prepare() of a group with a watch Added for ns/new:
	seq := v.set("ns/new", obj, true)
	// The committer commits that group while a Replace reads the view.
	s.hook = func() {
		ops := []store.Op{{Type: store.OpPut, Object: obj, Key: "ns/new"}}
		if err := base.Commit(context.Background(), store.Batch{Ops: ops, ResourceVersion: "5"}); err != nil {
			t.Fatalf("commit: %v", err)
		}
		// appliedLocked's view.committed waits for v.mu, held by ListKeys.
		go v.committed(ops, seq)
	}

	q := deltafifo.New(&deltafifo.Options{KnownObjects: v, EmitDeltaTypeReplaced: true})
	// Relist: ns/new was deleted on the server meanwhile.
	if err := q.Replace(nil, "9"); err != nil {
		t.Fatal(err)
	}
	var got cache.Deltas
	if err := q.Pop(context.Background(), func(_ context.Context, b deltafifo.Batch) error {
		got = b.Deltas
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := base.GetByKey("ns/new"); !ok {
		t.Fatal("setup: commit did not land")
	}
	for _, d := range got {
		if tomb, ok := d.Object.(cache.DeletedFinalStateUnknown); ok && tomb.Key == "ns/new" {
			return
		}
	}
	t.Fatalf("relist without ns/new produced no delete for it (deltas %v): the store keeps a deleted object forever", got)
}

// keyGatedStore holds back the commit that writes gateKey until
// release is closed, and runs onListKeys once, after ListKeys took its
// snapshot of the keys.
type keyGatedStore struct {
	store.Store
	mu         sync.Mutex
	gateKey    string
	entered    chan struct{} // closed when the gated commit starts
	release    chan struct{} // the gated commit proceeds once closed
	returned   chan struct{} // closed when the gated commit returned
	onListKeys func()
}

func (s *keyGatedStore) Commit(ctx context.Context, b store.Batch) error {
	s.mu.Lock()
	gated := false
	if s.gateKey != "" {
		for _, op := range b.Ops {
			if op.Key == s.gateKey {
				gated = true
			}
		}
	}
	if gated {
		s.gateKey = ""
	}
	s.mu.Unlock()
	if !gated {
		return s.Store.Commit(ctx, b)
	}
	close(s.entered)
	<-s.release
	err := s.Store.Commit(ctx, b)
	close(s.returned)
	return err
}

func (s *keyGatedStore) ListKeys() []string {
	keys := s.Store.ListKeys()
	s.mu.Lock()
	h := s.onListKeys
	s.onListKeys = nil
	s.mu.Unlock()
	if h != nil {
		h()
	}
	return keys
}

// TestRelistDuringCommitDeletesObject: end to end, with the
// real popLoop. An object is created (its group is popped, its commit is
// running), the watch then misses its deletion and expires (410), and the
// relist's Replace reads the view while that commit lands. The relist
// does not list the object, so the store must delete it and the handler
// hear OnDelete (DESIGN invariant 4); before the fix the store kept (and
// persisted, with the new resume point) an object the server deleted.
func TestRelistDuringCommitDeletesObject(t *testing.T) {
	lw := newFakeLW()
	s := &keyGatedStore{Store: openStore(t, "memory://")}
	inf := newInformer(t, lw, s, testOptions())
	rec := newRecorder()
	addHandler(t, inf, rec)
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())

	s.mu.Lock()
	s.gateKey = "ns/new"
	s.entered, s.release, s.returned = make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.mu.Unlock()
	lw.create("ns", "new", "1")
	<-s.entered // the group with ns/new is popped; its commit is running

	// The watch misses the deletion and expires; the reflector relists.
	lw.muteWatches()
	lw.remove("ns", "new")
	lw.compact()
	s.mu.Lock()
	s.onListKeys = func() {
		close(s.release)
		<-s.returned
	}
	s.mu.Unlock()
	lw.expireWatches()

	want := lw.currentRV()
	pollUntil(t, "the relist to be applied", func() string {
		if rv := inf.LastSyncResourceVersion(); rv != want {
			return "applied " + rv + ", want " + want
		}
		return ""
	})
	if _, ok, _ := inf.GetStore().GetByKey("ns/new"); ok {
		t.Errorf("store still holds ns/new at resume point %s, which the server deleted (server has %v)", want, lw.values())
	}
	pollUntil(t, "the handler to hear ns/new deleted", func() string {
		for _, e := range rec.all() {
			if e.Op == "delete" && e.Key == "ns/new" && e.Tomb {
				return ""
			}
		}
		return fmt.Sprintf("events %+v", rec.all())
	})
}

// TestViewRelistMapMadeAnew: a relist's keys are pending at once, and a Go
// map keeps its largest size: once they are committed, the view makes its
// map anew instead of holding a relist's worth of slots for the process's
// life. reserve sizes the map only while nothing is pending, and never
// drops a pending state.
func TestViewRelistMapMadeAnew(t *testing.T) {
	v := newView(openStore(t, "memory://"))
	small := v.set("ns/small", viewCM("small", "1", "u0"), true)
	v.reserve(bigPending) // something is pending: not a fresh map
	if _, ok, _ := v.GetByKey("ns/small"); !ok {
		t.Fatal("reserve with a key pending dropped it")
	}
	v.committed([]store.Op{{Key: "ns/small"}}, small)
	if v.grown {
		t.Fatal("a view that held one key counts as grown")
	}

	v.reserve(bigPending)
	ops := make([]store.Op, bigPending)
	var seq uint64
	for i := range ops {
		key := fmt.Sprintf("ns/cm-%d", i)
		ops[i] = store.Op{Key: key}
		seq = v.set(key, viewCM(key, "2", "u"), true)
	}
	before := reflect.ValueOf(v.pending).UnsafePointer()
	// A commit of half of them leaves the map as it is.
	v.committed(ops[:bigPending/2], seq)
	if got := reflect.ValueOf(v.pending).UnsafePointer(); got != before || v.pendingLen() != bigPending/2 {
		t.Fatalf("after half the keys committed: map replaced %v, %d pending, want the same map with %d", got != before, v.pendingLen(), bigPending/2)
	}
	v.committed(ops[bigPending/2:], seq)
	if got := reflect.ValueOf(v.pending).UnsafePointer(); got == before || v.grown {
		t.Errorf("drained relist map: made anew %v, grown %v; want a new map, not grown", got != before, v.grown)
	}
	if v.pendingLen() != 0 {
		t.Errorf("%d keys pending after every commit", v.pendingLen())
	}
	// The fresh map works as the old one did.
	later := v.set("ns/later", viewCM("later", "3", "u2"), true)
	if _, ok, _ := v.GetByKey("ns/later"); !ok {
		t.Error("a key set in the new map is not pending")
	}
	v.committed([]store.Op{{Key: "ns/later"}}, later)
}

// TestLargeFirstList: a first list of more than bigPending objects (the
// view sizes its map for it, the cache its maps) reaches the store and the
// handlers whole on every backend, the view forgets it once committed, and
// the watch goes on from it.
func TestLargeFirstList(t *testing.T) {
	const n = bigPending + 1000
	forEachBackend(t, func(t *testing.T, b backend) {
		lw := newFakeLW()
		for i := range n {
			lw.create("ns", fmt.Sprintf("cm-%d", i), "v1")
		}
		inf := newInformer(t, lw, b.open(t), testOptions())
		var adds atomic.Int64
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) { adds.Add(1) }}); err != nil {
			t.Fatal(err)
		}
		start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		if got := len(inf.GetStore().ListKeys()); got != n {
			t.Fatalf("store holds %d keys after the first list, want %d", got, n)
		}
		lw.update("ns", "cm-7", "v2")
		lw.create("ns", "after", "v1")
		pollUntil(t, "the watch after the list", func() string {
			if got, v := adds.Load(), storeValues(inf.GetStore())["ns/cm-7"]; got < n+1 || v != "v2" {
				return fmt.Sprintf("%d adds, cm-7 = %q; want %d adds and v2", got, v, n+1)
			}
			return ""
		})
		if diff := cmp.Diff(lw.values(), storeValues(inf.GetStore())); diff != "" {
			t.Errorf("store (-source +store):\n%s", diff)
		}
		inf.view.mu.Lock()
		pending, grown := len(inf.view.pending), inf.view.grown
		inf.view.mu.Unlock()
		if pending != 0 || grown {
			t.Errorf("view after the list is committed: %d pending, grown %v; want none pending and a map made anew", pending, grown)
		}
	})
}

// pendingLen returns the number of keys with an uncommitted state.
func (v *view) pendingLen() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.pending)
}
