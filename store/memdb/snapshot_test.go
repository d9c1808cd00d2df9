package memdb_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/memdb"
	"github.com/informerdb/informerdb/store/storetest"
)

func genOf(t testing.TB, obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Errorf("listed a non-object %T", obj)
		return ""
	}
	return m.GetLabels()["gen"]
}

// TestSnapshotReads checks that every read sees exactly one committed state
// while commits stream in: each commit (or Replace) gives all objects the
// same new "gen" label and sets the resume point to it, so a read that mixed
// two commits would see two generations, a wrong count, or a resume point
// that disagrees with the objects.
func TestSnapshotReads(t *testing.T) {
	const (
		objects  = 100
		commits  = 60
		minReads = 60 // per reader, so reads overlap many commits
	)
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memdb.New(&store.Options{Indexers: cache.Indexers{"gen": labelIndexFunc("gen")}, Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	generation := func(g int) []store.Op {
		ops := make([]store.Op, objects)
		for i := range ops {
			ops[i] = store.Op{Type: store.OpPut, Object: newPod("ns", fmt.Sprintf("pod-%03d", i), strconv.Itoa(g), "gen="+strconv.Itoa(g))}
		}
		return ops
	}
	if err := s.Commit(t.Context(), store.Batch{Ops: generation(0), ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}

	var done atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	readers := []func(){
		func() { // List: one generation, all objects.
			objs := s.List()
			if len(objs) != objects {
				t.Errorf("List returned %d objects; want %d", len(objs), objects)
				return
			}
			g := genOf(t, objs[0])
			for _, o := range objs {
				if got := genOf(t, o); got != g {
					t.Errorf("List mixed generations %s and %s", g, got)
					return
				}
			}
		},
		func() { // Index entries: one value, with all objects or none.
			vals := s.ListIndexFuncValues("gen")
			if len(vals) != 1 {
				t.Errorf("ListIndexFuncValues(gen) = %q; want exactly one generation", vals)
				return
			}
			objs, err := s.ByIndex("gen", vals[0])
			if err != nil {
				t.Errorf("ByIndex: %v", err)
				return
			}
			if len(objs) != objects && len(objs) != 0 {
				t.Errorf("ByIndex(gen, %s) returned %d objects; want %d, or 0 after a newer commit", vals[0], len(objs), objects)
			}
			for _, o := range objs {
				if got := genOf(t, o); got != vals[0] {
					t.Errorf("ByIndex(gen, %s) returned an object of generation %s", vals[0], got)
					return
				}
			}
		},
		func() { // Export: records, index values and resume point of one state.
			var gens []string
			info, err := s.(store.Exporter).Export(t.Context(), func(r store.Record) error {
				obj, err := codec.Decode(r.Data)
				if err != nil {
					return err
				}
				g := genOf(t, obj)
				if len(r.Values) != 1 || len(r.Values[0]) != 1 || r.Values[0][0] != g {
					return fmt.Errorf("record %s of generation %s has index values %q", r.Key, g, r.Values)
				}
				gens = append(gens, g)
				return nil
			})
			if err != nil {
				t.Errorf("Export: %v", err)
				return
			}
			if len(gens) != objects {
				t.Errorf("Export handed out %d records; want %d", len(gens), objects)
			}
			for _, g := range gens {
				if g != info.ResourceVersion {
					t.Errorf("Export handed out a record of generation %s with resume point %s", g, info.ResourceVersion)
					return
				}
			}
		},
		func() { // Objects and resume point of one snapshot agree.
			keys, objs, rv, count, ok := memdb.SnapshotForTest(s)
			if !ok || len(keys) != objects || count != objects {
				t.Errorf("snapshot: %d keys, recorded count %d, ok %v; want %d keys", len(keys), count, ok, objects)
				return
			}
			for _, o := range objs {
				if got := genOf(t, o); got != rv {
					t.Errorf("snapshot holds an object of generation %s with resume point %s", got, rv)
					return
				}
			}
		},
	}
	for _, read := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !done.Load() || n < minReads; n++ {
				read()
				reads.Add(1)
			}
		}()
	}
	for g := 1; g <= commits || reads.Load() < int64(len(readers)*minReads); g++ {
		var err error
		if g%5 == 0 {
			ops := generation(g)
			list := make([]interface{}, len(ops))
			for i := range ops {
				list[i] = ops[i].Object
			}
			err = s.Replace(list, strconv.Itoa(g))
		} else {
			err = s.Commit(t.Context(), store.Batch{Ops: generation(g), ResourceVersion: strconv.Itoa(g)})
		}
		if err != nil {
			t.Errorf("commit %d: %v", g, err)
			break
		}
	}
	done.Store(true)
	wg.Wait()
}

// TestAddIndexersDuringWrites adds indexes while writers commit: a write
// prepared against the old index set must be prepared again, so that every
// object ends up with entries in every index (checked by
// storetest.CheckIndexes).
func TestAddIndexersDuringWrites(t *testing.T) {
	s := open(t, cache.Indexers{"app": labelIndexFunc("app")})
	const writers, perWriter, added = 2, 150, 6
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				p := newPod("ns", fmt.Sprintf("w%d-%d", w, i%40), strconv.Itoa(i), "app=a"+strconv.Itoa(i%3), fmt.Sprintf("l%d=v%d", i%added, i%5))
				var err error
				if i%7 == 6 {
					err = s.Delete(p)
				} else {
					err = s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: p}}, ResourceVersion: strconv.Itoa(i)})
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	for l := 0; l < added; l++ {
		if err := s.AddIndexers(cache.Indexers{"l" + strconv.Itoa(l): labelIndexFunc("l" + strconv.Itoa(l))}); err != nil {
			t.Errorf("AddIndexers l%d: %v", l, err)
		}
	}
	wg.Wait()
	if got := len(s.GetIndexers()); got != added+1 {
		t.Errorf("%d indexes; want %d", got, added+1)
	}
	storetest.CheckIndexes(t, s)
}

// TestCloseDuringUse closes a store (twice, concurrently) while writers and
// readers run: every call either works or reports ErrClosed, and nothing
// panics or races.
func TestCloseDuringUse(t *testing.T) {
	s, err := memdb.New(&store.Options{Indexers: cache.Indexers{"app": labelIndexFunc("app")}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, 3)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i == 10 {
					started <- struct{}{}
				}
				err := s.Add(newPod("ns", fmt.Sprintf("w%d-%d", w, i%50), "1", "app=a"))
				if _, rerr := s.ByIndex("app", "a"); rerr != nil && !errors.Is(rerr, store.ErrClosed) {
					t.Errorf("ByIndex: %v", rerr)
				}
				if err != nil {
					if !errors.Is(err, store.ErrClosed) {
						t.Errorf("Add: %v", err)
					}
					return
				}
			}
		}()
	}
	for i := 0; i < 3; i++ {
		<-started
	}
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- s.Close() }()
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	wg.Wait()
	if err := s.Add(newPod("ns", "late", "1")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Add after Close: %v; want ErrClosed", err)
	}
}
