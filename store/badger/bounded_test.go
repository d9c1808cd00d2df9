package badger

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/store"
)

// TestBoundedKeepsAtMostN reads more objects than the cache holds and
// checks the LRU stays bounded while every read is right.
func TestBoundedKeepsAtMostN(t *testing.T) {
	const n, size = 200, 10
	s, err := Open(t.Context(), t.TempDir(), podOptions(t, "pods", size))
	mustOK(t, "Open", err)
	defer s.Close()
	list := make([]interface{}, n)
	for i := range list {
		list[i] = newPod(i, "1", fmt.Sprintf("app-%d", i%4))
	}
	mustOK(t, "Replace", s.Replace(list, "1"))
	b := s.(*bounded)
	for i := range n {
		p := newPod(i, "1", "")
		obj, ok, err := s.Get(p)
		if err != nil || !ok || obj.(*corev1.Pod).Name != p.Name {
			t.Fatalf("Get %s: %v, %v, %v", p.Name, obj, ok, err)
		}
	}
	objs, err := s.ByIndex("app", "app-1")
	mustOK(t, "ByIndex", err)
	if len(objs) != n/4 {
		t.Errorf("ByIndex app-1: %d objects, want %d", len(objs), n/4)
	}
	got := b.CacheLen()
	if got > size {
		t.Errorf("LRU holds %d objects, want at most %d", got, size)
	}
}

// TestBoundedMatchesDefault runs the same writes on a default and a bounded
// store of one directory and compares every read.
func TestBoundedMatchesDefault(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	d, err := Open(ctx, dir, podOptions(t, "default", 0))
	mustOK(t, "Open default", err)
	defer d.Close()
	b, err := Open(ctx, dir, podOptions(t, "bounded", 3))
	mustOK(t, "Open bounded", err)
	defer b.Close()
	for r := range 5 {
		var ops []store.Op
		for i := range 40 {
			switch (i + r) % 4 {
			case 0:
				ops = append(ops, store.Op{Type: store.OpDelete, Object: newPod(i, "", "")})
			default:
				ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(i, fmt.Sprint(r), fmt.Sprintf("app-%d", (i*r)%5))})
			}
		}
		for _, s := range []store.Store{d, b} {
			mustOK(t, "Commit", s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(r)}))
		}
		if diff := cmp.Diff(contents(t, d), contents(t, b)); diff != "" {
			t.Errorf("round %d: contents (-default +bounded):\n%s", r, diff)
		}
		for _, idx := range []string{"app", "namespace"} {
			dv, bv := d.ListIndexFuncValues(idx), b.ListIndexFuncValues(idx)
			sort.Strings(dv)
			sort.Strings(bv)
			if diff := cmp.Diff(dv, bv); diff != "" {
				t.Errorf("round %d: ListIndexFuncValues(%s) (-default +bounded):\n%s", r, idx, diff)
			}
			for _, v := range dv {
				dk, err := d.IndexKeys(idx, v)
				mustOK(t, "IndexKeys", err)
				bk, err := b.IndexKeys(idx, v)
				mustOK(t, "IndexKeys", err)
				if diff := cmp.Diff(dk, bk); diff != "" {
					t.Errorf("round %d: IndexKeys(%s, %s) (-default +bounded):\n%s", r, idx, v, diff)
				}
				do, err := d.Index(idx, newPod(0, "", v))
				mustOK(t, "Index", err)
				bo, err := b.Index(idx, newPod(0, "", v))
				mustOK(t, "Index", err)
				if len(do) != len(bo) {
					t.Errorf("round %d: Index(%s, %s): default %d objects, bounded %d", r, idx, v, len(do), len(bo))
				}
			}
		}
		checkIndexes(t, b)
	}
}

// TestBoundedConcurrentReadsNeverStale has readers fill the LRU while a
// writer updates the same keys; after the writer is done, every read must
// see the last write (a decode that raced a write must not be cached).
func TestBoundedConcurrentReadsNeverStale(t *testing.T) {
	const keys, rounds = 8, 60
	s, err := Open(t.Context(), t.TempDir(), podOptions(t, "pods", keys))
	mustOK(t, "Open", err)
	defer s.Close()
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
					if _, _, err := s.GetByKey(fmt.Sprintf("ns-%d/pod-%06d", i%10, i)); err != nil {
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
		mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(r)}))
	}
	close(stop)
	wg.Wait()
	for i := range keys {
		obj, ok, err := s.GetByKey(fmt.Sprintf("ns-%d/pod-%06d", i%10, i))
		if err != nil || !ok {
			t.Fatalf("GetByKey %d: %v %v", i, ok, err)
		}
		if got := obj.(*corev1.Pod).ResourceVersion; got != fmt.Sprint(rounds) {
			t.Errorf("key %d: read version %s after the last write %d", i, got, rounds)
		}
	}
}

// TestBoundedReadRacingWrite makes a write commit between a reader's badger
// read and its caching of the object: the stale object must not be cached.
func TestBoundedReadRacingWrite(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), podOptions(t, "pods", 4))
	mustOK(t, "Open", err)
	defer s.Close()
	mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
	b := s.(*bounded)
	// The Add cached its object: make the read decode it.
	b.ClearCache()
	b.SetTestHooks(nil, func(key string) {
		b.SetTestHooks(nil, nil)
		mustOK(t, "Update", s.Update(newPod(1, "2", "x")))
	})
	obj, ok, err := s.GetByKey("ns-1/pod-000001")
	if err != nil || !ok || obj.(*corev1.Pod).ResourceVersion != "1" {
		t.Fatalf("GetByKey during the write: %v %v %v; want the snapshot it read (version 1)", obj, ok, err)
	}
	obj, _, err = s.GetByKey("ns-1/pod-000001")
	mustOK(t, "GetByKey", err)
	if got := obj.(*corev1.Pod).ResourceVersion; got != "2" {
		t.Errorf("GetByKey after the write: version %s, want 2 (a stale decode was cached)", got)
	}
}

// TestBoundedSnapshotBeforeEpochNotCached makes a write commit after a
// reader's transaction opened but before the reader's next cache lookup:
// ByIndex reads pod 1, and the write of the uncached pod 2 lands before it
// reads pod 2 from its (older) snapshot. That stale decode must not be
// cached over what the writer cached.
func TestBoundedSnapshotBeforeEpochNotCached(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), podOptions(t, "pods", 8))
	mustOK(t, "Open", err)
	defer s.Close()
	mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
	mustOK(t, "Add", s.Add(newPod(2, "1", "x")))
	b := s.(*bounded)
	b.ClearCache()
	b.SetTestHooks(nil, func(key string) {
		b.SetTestHooks(nil, nil)
		mustOK(t, "Update", s.Update(newPod(2, "2", "x")))
	})
	if _, err := s.ByIndex("app", "x"); err != nil {
		t.Fatalf("ByIndex: %v", err)
	}
	obj, ok, err := s.GetByKey("ns-2/pod-000002")
	if err != nil || !ok {
		t.Fatalf("GetByKey: %v %v", ok, err)
	}
	if got := obj.(*corev1.Pod).ResourceVersion; got != "2" {
		t.Errorf("GetByKey after the Update returned: version %s, want 2 (a stale decode was cached)", got)
	}
}

// TestBoundedByIndexNotTornByCommit runs one Commit, moving pods 1 and 2
// from app=x to app=y, while a ByIndex("app", "x") reads: it has read the
// index entries (and pod 1) from its snapshot, and pod 2 is cached, so the
// commit refreshes it. ByIndex must return the state of its snapshot, not
// pod 1 before the commit and pod 2 after it (an object with app=y).
func TestBoundedByIndexNotTornByCommit(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), podOptions(t, "pods", 8))
	mustOK(t, "Open", err)
	defer s.Close()
	mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
	mustOK(t, "Add", s.Add(newPod(2, "1", "x")))
	b := s.(*bounded)
	b.ClearCache()
	// Pod 2 cached, pod 1 not.
	_, _, err = s.GetByKey("ns-2/pod-000002")
	mustOK(t, "GetByKey", err)
	b.SetTestHooks(nil, func(key string) {
		b.SetTestHooks(nil, nil)
		mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: []store.Op{
			{Type: store.OpPut, Object: newPod(1, "2", "y")},
			{Type: store.OpPut, Object: newPod(2, "2", "y")},
		}, ResourceVersion: "2"}))
	})
	objs, err := s.ByIndex("app", "x")
	mustOK(t, "ByIndex", err)
	var got []string
	for _, o := range objs {
		p := o.(*corev1.Pod)
		got = append(got, p.Name+"@"+p.ResourceVersion+"/app="+p.Labels["app"])
	}
	for _, o := range objs {
		if app := o.(*corev1.Pod).Labels["app"]; app != "x" {
			t.Errorf("ByIndex(app, x) = %v: mixes the states before and after one Commit (an object with app=%s)", got, app)
			break
		}
	}
}

// TestBoundedCloseUnderReaders closes a bounded store while readers iterate
// it: they must get empty results or ErrClosed, never a crash (badger
// unmaps its files on close).
func TestBoundedCloseUnderReaders(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), podOptions(t, "pods", 2))
	mustOK(t, "Open", err)
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
}
