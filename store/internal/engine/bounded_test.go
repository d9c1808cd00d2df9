package engine_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/badger"
	"github.com/informerdb/informerdb/store/bolt"
)

// These tests pin the consistency protocol of the bounded store (Store.seq)
// on every engine, reaching into the windows it guards with its test hooks.
// The contract of the mode's reads and writes is storetest's, which every
// backend runs in bounded mode too.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// badger v4.9.6 leaves these running after a failed Open; the
		// backend's own tests say more.
		goleak.IgnoreTopFunction("github.com/dgraph-io/badger/v4.(*DB).monitorCache"),
		goleak.IgnoreTopFunction("github.com/dgraph-io/ristretto/v2/z.(*AllocatorPool).freeupAllocators"),
	)
}

// hooked is a bounded-mode store with the shared store's test methods.
type hooked interface {
	store.Store
	store.ReadFailer
	SetTestHooks(afterCommit func(), afterRead func(key string))
	CacheLen() int
	Cached(key string) bool
	ClearCache()
}

// forEachEngine runs fn on a new, empty bounded store of cacheSize objects
// of every backend.
func forEachEngine(t *testing.T, cacheSize int, fn func(t *testing.T, s hooked)) {
	for _, b := range []struct {
		name string
		open func(t *testing.T, o *store.Options) (store.Store, error)
	}{
		{"bolt", func(t *testing.T, o *store.Options) (store.Store, error) {
			o.Durability = store.DurabilityNoSync
			return bolt.Open(t.Context(), filepath.Join(t.TempDir(), "pods.db"), o)
		}},
		{"badger", func(t *testing.T, o *store.Options) (store.Store, error) {
			return badger.Open(t.Context(), t.TempDir(), o)
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			codec, err := indexer.NewCodec(&corev1.Pod{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := b.open(t, &store.Options{Name: "pods", Codec: codec, CacheSize: cacheSize,
				Indexers: cache.Indexers{"app": indexer.LabelIndexFunc("app")}})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			h, ok := s.(hooked)
			if !ok {
				t.Fatalf("the bounded store of %s is a %T, without the shared store's test methods", b.name, s)
			}
			fn(t, h)
		})
	}
}

func newPod(i int, rv, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("pod-%06d", i),
		ResourceVersion: rv, Labels: map[string]string{"app": app},
	}}
}

func keyOf(i int) string { return fmt.Sprintf("ns-%d/pod-%06d", i%10, i) }

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestKeepsAtMostN reads more objects than the cache holds and checks that
// it stays bounded while every read is right.
func TestKeepsAtMostN(t *testing.T) {
	const n, size = 200, 10
	forEachEngine(t, size, func(t *testing.T, s hooked) {
		list := make([]interface{}, n)
		for i := range list {
			list[i] = newPod(i, "1", fmt.Sprintf("app-%d", i%4))
		}
		mustOK(t, "Replace", s.Replace(list, "1"))
		for i := range n {
			obj, ok, err := s.GetByKey(keyOf(i))
			if err != nil || !ok || obj.(*corev1.Pod).Name != newPod(i, "", "").Name {
				t.Fatalf("GetByKey(%s) = %v, %v, %v", keyOf(i), obj, ok, err)
			}
		}
		objs, err := s.ByIndex("app", "app-1")
		mustOK(t, "ByIndex", err)
		if len(objs) != n/4 {
			t.Errorf("ByIndex(app, app-1): %d objects, want %d", len(objs), n/4)
		}
		if got := s.CacheLen(); got > size {
			t.Errorf("the cache holds %d objects, want at most %d", got, size)
		}
	})
}

// TestWritesCache checks that writes cache what they put and forget what
// they delete, that Get caches what it decoded, and that List and ByIndex
// cache nothing.
func TestWritesCache(t *testing.T) {
	forEachEngine(t, 10, func(t *testing.T, s hooked) {
		mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
		mustOK(t, "Add", s.Add(newPod(2, "1", "x")))
		if !s.Cached(keyOf(1)) || !s.Cached(keyOf(2)) {
			t.Errorf("objects added are not cached")
		}
		mustOK(t, "Delete", s.Delete(newPod(1, "", "")))
		if s.Cached(keyOf(1)) {
			t.Errorf("a deleted object is still cached")
		}
		s.ClearCache()
		if n := len(s.List()); n != 1 {
			t.Fatalf("List = %d objects; want 1", n)
		}
		if n := s.CacheLen(); n != 0 {
			t.Errorf("the cache holds %d objects after a List; want 0", n)
		}
		if objs, err := s.ByIndex("app", "x"); err != nil || len(objs) != 1 {
			t.Fatalf("ByIndex(app, x) = %d objects, %v; want 1", len(objs), err)
		}
		if n := s.CacheLen(); n != 0 {
			t.Errorf("the cache holds %d objects after a ByIndex; want 0", n)
		}
		if _, ok, err := s.GetByKey(keyOf(2)); !ok || err != nil {
			t.Fatalf("GetByKey = %v, %v", ok, err)
		}
		if !s.Cached(keyOf(2)) {
			t.Errorf("GetByKey did not cache what it decoded")
		}
	})
}

// TestReadRacingWrite makes a write commit between a reader's read of an
// object from its transaction and its caching: the stale object must not
// be cached.
func TestReadRacingWrite(t *testing.T) {
	forEachEngine(t, 4, func(t *testing.T, s hooked) {
		mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
		s.ClearCache() // so that the read decodes
		s.SetTestHooks(nil, func(key string) {
			s.SetTestHooks(nil, nil)
			mustOK(t, "Update", s.Update(newPod(1, "2", "x")))
		})
		obj, ok, err := s.GetByKey(keyOf(1))
		if err != nil || !ok || obj.(*corev1.Pod).ResourceVersion != "1" {
			t.Fatalf("GetByKey during the write = %v, %v, %v; want the snapshot it read (version 1)", obj, ok, err)
		}
		obj, _, err = s.GetByKey(keyOf(1))
		mustOK(t, "GetByKey", err)
		if got := obj.(*corev1.Pod).ResourceVersion; got != "2" {
			t.Errorf("GetByKey after the write: version %s, want 2 (a stale decode was cached)", got)
		}
	})
}

// TestSnapshotBeforeWriteNotCached makes a write commit after a reader's
// transaction opened but before the reader's next cache lookup: ByIndex
// reads pod 1, and the write of pod 2 lands before it reads pod 2 from its
// (older) snapshot. That stale decode must not be cached.
func TestSnapshotBeforeWriteNotCached(t *testing.T) {
	forEachEngine(t, 8, func(t *testing.T, s hooked) {
		mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
		mustOK(t, "Add", s.Add(newPod(2, "1", "x")))
		s.ClearCache()
		s.SetTestHooks(nil, func(key string) {
			s.SetTestHooks(nil, nil)
			mustOK(t, "Update", s.Update(newPod(2, "2", "x")))
		})
		if _, err := s.ByIndex("app", "x"); err != nil {
			t.Fatalf("ByIndex: %v", err)
		}
		obj, ok, err := s.GetByKey(keyOf(2))
		if err != nil || !ok {
			t.Fatalf("GetByKey = %v, %v", ok, err)
		}
		if got := obj.(*corev1.Pod).ResourceVersion; got != "2" {
			t.Errorf("GetByKey after the Update returned: version %s, want 2 (a stale decode was cached)", got)
		}
	})
}

// TestByIndexNotTornByCommit runs one Commit, moving pods 1 and 2 from
// app=x to app=y, while a ByIndex(app, x) reads: it has read the index
// entries (and one pod) from its snapshot, and the other pod is cached, so
// the commit refreshes it. ByIndex must return the state of its snapshot,
// not one pod before the commit and the other after it (app=y).
func TestByIndexNotTornByCommit(t *testing.T) {
	forEachEngine(t, 8, func(t *testing.T, s hooked) {
		mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
		mustOK(t, "Add", s.Add(newPod(2, "1", "x")))
		s.ClearCache()
		// Pod 2 cached, pod 1 not.
		_, _, err := s.GetByKey(keyOf(2))
		mustOK(t, "GetByKey", err)
		ran := false
		s.SetTestHooks(nil, func(key string) {
			s.SetTestHooks(nil, nil)
			ran = true
			mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: []store.Op{
				{Type: store.OpPut, Object: newPod(1, "2", "y")},
				{Type: store.OpPut, Object: newPod(2, "2", "y")},
			}, ResourceVersion: "2"}))
		})
		objs, err := s.ByIndex("app", "x")
		mustOK(t, "ByIndex", err)
		if !ran {
			t.Fatal("ByIndex decoded nothing: the commit did not run during it")
		}
		if len(objs) != 2 {
			t.Errorf("ByIndex(app, x) = %d objects; want the 2 of its snapshot", len(objs))
		}
		for _, o := range objs {
			if p := o.(*corev1.Pod); p.Labels["app"] != "x" {
				t.Errorf("ByIndex(app, x) returned %s at version %s with app=%s: it mixes the states before and after one Commit",
					p.Name, p.ResourceVersion, p.Labels["app"])
			}
		}
	})
}

// TestReadsBetweenCommitAndCacheUpdate reads while a write has committed
// but not yet updated the cache (afterCommit runs in that window, with no
// lock held). A read opening its transaction then sees the new snapshot; an
// object taken from the cache there is the one the commit replaced, so
// ByIndex would return an object whose index value is no longer the one
// asked for (DESIGN invariant 7), and the other reads an old version next
// to the new snapshot's keys and entries.
func TestReadsBetweenCommitAndCacheUpdate(t *testing.T) {
	forEachEngine(t, 10, func(t *testing.T, s hooked) {
		p := newPod(1, "1", "old")
		mustOK(t, "Add", s.Add(p))
		// Cached by the Add: the reads below would hit it.
		if !s.Cached(keyOf(1)) {
			t.Fatal("the object is not cached after its Add")
		}
		want := func(what string, obj interface{}) {
			t.Helper()
			p, ok := obj.(*corev1.Pod)
			if !ok {
				t.Errorf("%s returned %T; want *v1.Pod", what, obj)
				return
			}
			if p.ResourceVersion != "2" || p.Labels["app"] != "new" {
				t.Errorf("%s returned version %s with app=%s; want 2 with app=new (the commit landed)",
					what, p.ResourceVersion, p.Labels["app"])
			}
		}
		ran := false
		s.SetTestHooks(func() {
			ran = true
			list, err := s.ByIndex("app", "new")
			if err != nil || len(list) != 1 {
				t.Errorf("ByIndex(app, new) = %d objects, %v; want 1", len(list), err)
			} else {
				want("ByIndex(app, new)", list[0])
			}
			list, err = s.Index("app", newPod(9, "1", "new"))
			if err != nil || len(list) != 1 {
				t.Errorf("Index(app, app=new) = %d objects, %v; want 1", len(list), err)
			} else {
				want("Index(app, app=new)", list[0])
			}
			if list := s.List(); len(list) != 1 {
				t.Errorf("List = %d objects; want 1", len(list))
			} else {
				want("List", list[0])
			}
			obj, ok, err := s.GetByKey(keyOf(1))
			if err != nil || !ok {
				t.Errorf("GetByKey = %v, %v", ok, err)
			} else {
				want("GetByKey", obj)
			}
		}, nil)
		mustOK(t, "Update", s.Update(newPod(1, "2", "new")))
		s.SetTestHooks(nil, nil)
		if !ran {
			t.Fatal("afterCommit did not run")
		}
		// Once the write returned, the cache has its object.
		obj, ok, err := s.GetByKey(keyOf(1))
		if err != nil || !ok {
			t.Fatalf("GetByKey after the write = %v, %v", ok, err)
		}
		want("GetByKey after the write", obj)
	})
}

// TestConcurrentReadsNeverStale has readers fill the cache while a writer
// updates the same keys; once the writer is done, every read must see the
// last write (a decode that raced a write must not be cached).
func TestConcurrentReadsNeverStale(t *testing.T) {
	const keys, rounds = 8, 60
	forEachEngine(t, keys, func(t *testing.T, s hooked) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for i := range keys {
						if _, _, err := s.GetByKey(keyOf(i)); err != nil {
							t.Errorf("GetByKey: %v", err)
							return
						}
					}
					if _, err := s.ByIndex("app", "x"); err != nil {
						t.Errorf("ByIndex: %v", err)
						return
					}
				}
			}()
		}
		for r := 1; r <= rounds; r++ {
			ops := make([]store.Op, keys)
			for i := range ops {
				ops[i] = store.Op{Type: store.OpPut, Object: newPod(i, fmt.Sprint(r), "x")}
			}
			if r%2 == 0 {
				// Refill through reads, not writes.
				s.ClearCache()
			}
			mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(r)}))
		}
		close(stop)
		wg.Wait()
		for i := range keys {
			obj, ok, err := s.GetByKey(keyOf(i))
			if err != nil || !ok {
				t.Fatalf("GetByKey(%s) = %v, %v", keyOf(i), ok, err)
			}
			if got := obj.(*corev1.Pod).ResourceVersion; got != fmt.Sprint(rounds) {
				t.Errorf("%s: read version %s after the last write %d", keyOf(i), got, rounds)
			}
		}
	})
}

// TestCloseUnderReaders closes a store while readers iterate it: they must
// get empty results or ErrClosed, never a crash (badger unmaps its files on
// close).
func TestCloseUnderReaders(t *testing.T) {
	forEachEngine(t, 2, func(t *testing.T, s hooked) {
		list := make([]interface{}, 300)
		for i := range list {
			list[i] = newPod(i, "1", "x")
		}
		mustOK(t, "Replace", s.Replace(list, "1"))
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				started <- struct{}{}
				for {
					objs := s.List()
					if _, err := s.ByIndex("app", "x"); err != nil {
						if !errors.Is(err, store.ErrClosed) {
							t.Errorf("ByIndex during Close: %v, want ErrClosed", err)
						}
						return
					}
					if objs == nil {
						return
					}
				}
			}()
		}
		for range 4 {
			<-started
		}
		mustOK(t, "Close", s.Close())
		wg.Wait()
		if err := s.ReadErr(); err != nil {
			t.Errorf("reads racing Close recorded a read failure: %v", err)
		}
	})
}
