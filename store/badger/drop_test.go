package badger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

// dropObjects is how many Pods the store to drop holds: with smallConfig,
// more keys than one badger transaction takes, so that deleting them takes
// several and a crash can fall between them.
const dropObjects = 1500

// keysUnder counts the keys of the database in dir under the prefix of the
// store name, and returns its meta record (nil without one).
func keysUnder(t *testing.T, dir, name string) (int, *metaRecord) {
	t.Helper()
	n := 0
	var m *metaRecord
	err := withDB(t.Context(), "test count", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.View(func(txn *badger.Txn) error {
			k := newKeys(name, 0)
			if raw, err := metaBytes(txn, k); err == nil {
				rec, _, err := decodeMeta(k.meta(), raw)
				if err != nil {
					return err
				}
				m = &rec
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			return eachUnder(t.Context(), txn, k.store, func(*badger.Item, []byte) error {
				n++
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("count the keys of %s: %v", name, err)
	}
	return n, m
}

// genKeys counts the keys of generation gen of the store name in dir.
func genKeys(t *testing.T, dir, name string, gen uint64) int {
	t.Helper()
	n := 0
	err := withDB(t.Context(), "test count", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.View(func(txn *badger.Txn) error {
			return eachUnder(t.Context(), txn, newKeys(name, gen).gen, func(*badger.Item, []byte) error {
				n++
				return nil
			})
		})
	})
	mustOK(t, "count a generation's keys", err)
	return n
}

// exportOf returns the records and Info of the store name in dir, sorted
// by key as badger exports them.
func exportOf(t *testing.T, dir, name string) ([]store.Record, store.Info, error) {
	t.Helper()
	var recs []store.Record
	info, err := Raw().Export(t.Context(), rawURL(dir), name, func(r store.Record) error {
		r.Data = slices.Clone(r.Data)
		recs = append(recs, r)
		return nil
	})
	return recs, info, err
}

// dropFixture fills dir with the store "pods" (dropObjects Pods, in a
// bounded-mode open so that it has index entries too, then a Replace into
// a new generation) and the store "keep", which it returns open with
// smallConfig: the drops of the tests share its database and its small
// transactions.
func dropFixture(t *testing.T, dir string) store.Store {
	t.Helper()
	s, err := open(t.Context(), dir, podOptions(t, "pods", 3), smallConfig())
	mustOK(t, "open pods", err)
	list := make([]interface{}, dropObjects)
	for i := range list {
		list[i] = newPod(i, "1", fmt.Sprintf("app-%d", i%3))
	}
	mustOK(t, "Replace", s.Replace(list, "1"))
	mustOK(t, "Replace again", s.Replace(list[:dropObjects-10], "2"))
	mustOK(t, "Close pods", s.Close())
	keep, err := open(t.Context(), dir, podOptions(t, "keep", 0), smallConfig())
	mustOK(t, "open keep", err)
	mustOK(t, "Commit keep", keep.Commit(t.Context(), store.Batch{ResourceVersion: "40", Ops: []store.Op{
		{Type: store.OpPut, Object: newPod(1, "40", "kept")},
		{Type: store.OpPut, Object: newPod(2, "40", "kept")},
	}}))
	return keep
}

// TestDropCrash stops Drop after each of its steps, as a crash would, and
// checks that the store is gone from the first one on (not listed, not
// exported, opened empty), that what an older build would read of its
// meta record is an empty store without a resume point, and that each
// way on (an Open, a Drop, an Import of the name) leaves no key of the
// dropped store behind and the other store as it was.
func TestDropCrash(t *testing.T) {
	crash := errors.New("simulated crash")
	for _, step := range []string{"marked", "generations deleted"} {
		for _, then := range []string{"open", "drop", "import"} {
			t.Run(step+"/then "+then, func(t *testing.T) {
				dir := t.TempDir()
				keep := dropFixture(t, dir)
				defer func() { mustOK(t, "Close keep", keep.Close()) }()
				keepRecs, keepInfo, err := exportOf(t, dir, "keep")
				mustOK(t, "Export keep", err)
				before, m := keysUnder(t, dir, "pods")
				if m == nil || before < 2*dropObjects {
					t.Fatalf("the store to drop has %d keys and meta record %+v; want a store", before, m)
				}

				steps := 0
				testHookDrop = func(s string) error {
					if s == step {
						steps++
						return crash
					}
					return nil
				}
				err = Raw().Drop(t.Context(), rawURL(dir), "pods")
				testHookDrop = nil
				if !errors.Is(err, crash) || steps != 1 {
					t.Fatalf("Drop stopped at %q: %v (%d stops)", step, err, steps)
				}

				n, m := keysUnder(t, dir, "pods")
				if m == nil || !m.Dropped {
					t.Fatalf("after a stop at %q the meta record is %+v; want the drop marker", step, m)
				}
				// What a build that does not know the marker reads: a
				// store whose generation has no keys and no resume point.
				if m.ResourceVersion != "" || genKeys(t, dir, "pods", m.Generation) != 0 {
					t.Errorf("the marker names generation %d (%d keys) at resume point %q; want one without keys, and none",
						m.Generation, genKeys(t, dir, "pods", m.Generation), m.ResourceVersion)
				}
				switch step {
				case "marked":
					// The marker comes before any delete.
					if n != before {
						t.Errorf("%d keys after the marker, %d before: the drop deleted keys before it marked the store", n, before)
					}
				case "generations deleted":
					if n != 1 {
						t.Errorf("%d keys left after the generations were deleted; want the meta record alone", n)
					}
				}

				// Gone, whatever is left.
				infos, err := Raw().Stores(t.Context(), rawURL(dir))
				mustOK(t, "Stores", err)
				if len(infos) != 1 || infos[0].Name != "keep" {
					t.Errorf("Stores after the interrupted drop = %+v; want keep alone", infos)
				}
				if _, _, err := exportOf(t, dir, "pods"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Export of the half-dropped store = %v; want ErrNotFound", err)
				}
				err = IndexEntries(t.Context(), rawURL(dir), "pods", func(string, string, string) error { return nil })
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("IndexEntries of the half-dropped store = %v; want ErrNotFound", err)
				}

				switch then {
				case "open":
					for _, bounded := range []int{0, 3} {
						s, err := open(t.Context(), dir, podOptions(t, "pods", bounded), smallConfig())
						mustOK(t, "Open of the half-dropped store", err)
						if got := len(s.List()); got != 0 || s.ResourceVersion() != "" || s.Info().Reset != "" {
							t.Errorf("Open (cache %d) of the half-dropped store: %d objects, resume point %q, reset %q; want a new, empty store",
								bounded, got, s.ResourceVersion(), s.Info().Reset)
						}
						checkIndexes(t, s)
						mustOK(t, "Close", s.Close())
					}
					if n, m := keysUnder(t, dir, "pods"); n != 1 || m == nil || m.Dropped {
						t.Errorf("after Open: %d keys, meta record %+v; want the new store's meta record alone", n, m)
					}
				case "drop":
					mustOK(t, "Drop of the half-dropped store", Raw().Drop(t.Context(), rawURL(dir), "pods"))
					if n, m := keysUnder(t, dir, "pods"); n != 0 || m != nil {
						t.Errorf("after the second Drop: %d keys, meta record %+v; want none", n, m)
					}
					err := Raw().Drop(t.Context(), rawURL(dir), "pods")
					if !errors.Is(err, store.ErrNotFound) {
						t.Errorf("a third Drop = %v; want ErrNotFound", err)
					}
				case "import":
					info := store.Info{Name: "pods", Codec: keepInfo.Codec, Type: keepInfo.Type, KeyFunc: keepInfo.KeyFunc, Indexes: keepInfo.Indexes, ResourceVersion: "50"}
					mustOK(t, "Import into the half-dropped store", Raw().Import(t.Context(), rawURL(dir), info, storetest.Records(keepRecs...)))
					recs, got, err := exportOf(t, dir, "pods")
					mustOK(t, "Export after Import", err)
					if len(recs) != len(keepRecs) || got.ResourceVersion != "50" {
						t.Errorf("after Import: %d records at %q; want %d at 50", len(recs), got.ResourceVersion, len(keepRecs))
					}
					s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
					mustOK(t, "Open after Import", err)
					if diff := cmp.Diff(map[string]string{"ns-1/pod-000001": "40/kept", "ns-2/pod-000002": "40/kept"}, contents(t, s)); diff != "" {
						t.Errorf("the imported store (-want +got):\n%s", diff)
					}
					mustOK(t, "Close", s.Close())
					// The open deleted the dropped store's leftovers.
					if n, _ := keysUnder(t, dir, "pods"); n != 1+2*len(keepRecs) {
						t.Errorf("%d keys under the imported store; want its meta record and %d objects with their values", n, len(keepRecs))
					}
				}

				recs, info, err := exportOf(t, dir, "keep")
				mustOK(t, "Export keep", err)
				if diff := cmp.Diff(keepRecs, recs); diff != "" {
					t.Errorf("the interrupted drop changed store keep (-before +after):\n%s", diff)
				}
				if diff := cmp.Diff(keepInfo, info); diff != "" {
					t.Errorf("the interrupted drop changed the Info of store keep (-before +after):\n%s", diff)
				}
				if diff := cmp.Diff(map[string]string{"ns-1/pod-000001": "40/kept", "ns-2/pod-000002": "40/kept"}, contents(t, keep)); diff != "" {
					t.Errorf("the open store keep (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestOpenIgnoresOrphanGenerations checks that an Open of a name without a
// meta record does not take over keys left under it (an Import of a new
// store that crashed before its switch writes generation 1 before any
// meta record): they used to become the new store's objects.
func TestOpenIgnoresOrphanGenerations(t *testing.T) {
	dir := t.TempDir()
	keep, err := open(t.Context(), dir, podOptions(t, "keep", 0), smallConfig())
	mustOK(t, "open keep", err)
	defer func() { mustOK(t, "Close keep", keep.Close()) }()
	mustOK(t, "write the orphans", keep.(*defaultStore).sp.sh.db.Update(func(txn *badger.Txn) error {
		for _, gen := range []uint64{1, 3} {
			k := newKeys("pods", gen)
			data, err := podCodec(t).Encode(newPod(int(gen), "9", "orphan"))
			if err != nil {
				return err
			}
			if err := setSealed(txn, k.obj(fmt.Sprintf("ns-%d/pod-%06d", gen, gen)), data); err != nil {
				return err
			}
		}
		return nil
	}))
	s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
	mustOK(t, "Open", err)
	defer s.Close()
	if got := contents(t, s); len(got) != 0 {
		t.Errorf("a new store took over orphan keys: %v", got)
	}
	if gen := spaceOf(t, s).rec.Generation; gen != 4 {
		t.Errorf("the new store's generation is %d; want 4, past the orphans'", gen)
	}
	if gens := generationsOf(t, s); len(gens) != 0 {
		t.Errorf("generations with keys after Open: %v; want none (the orphans deleted)", gens)
	}
}

// TestDropOfOpenDatabase checks that a store drops while other stores of
// its database are open in this process, and refuses while it is open
// itself, its name reserved meanwhile: neither a half-dropped store nor a
// second store of the name is ever served.
func TestDropOfOpenDatabase(t *testing.T) {
	dir := t.TempDir()
	keep := dropFixture(t, dir)
	defer func() { mustOK(t, "Close keep", keep.Close()) }()
	s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
	mustOK(t, "open pods", err)
	err = Raw().Drop(t.Context(), rawURL(dir), "pods")
	if !errors.Is(err, store.ErrInUse) {
		t.Errorf("Drop of an open store = %v; want ErrInUse", err)
	}
	if n := len(s.List()); n != dropObjects-10 {
		t.Errorf("the store refused to drop holds %d objects; want %d", n, dropObjects-10)
	}
	mustOK(t, "Close pods", s.Close())
	// An Open of the name while the drop runs waits for nothing: it is
	// refused (the name is reserved) or comes after.
	testHookDrop = func(step string) error {
		_, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
		if !errors.Is(err, store.ErrInUse) {
			t.Errorf("Open during the drop (after %q) = %v; want ErrInUse", step, err)
		}
		return nil
	}
	err = Raw().Drop(t.Context(), rawURL(dir), "pods")
	testHookDrop = nil
	mustOK(t, "Drop beside an open store", err)
	if n, m := keysUnder(t, dir, "pods"); n != 0 || m != nil {
		t.Errorf("after Drop: %d keys, meta record %+v; want none", n, m)
	}
	if diff := cmp.Diff(map[string]string{"ns-1/pod-000001": "40/kept", "ns-2/pod-000002": "40/kept"}, contents(t, keep)); diff != "" {
		t.Errorf("the open store keep (-want +got):\n%s", diff)
	}
}

// TestDropLockedByAnotherProcess re-executes the test binary as a child
// that holds the directory open: Drop waits lock_timeout and fails with
// ErrLocked, stops waiting when its context ends, and drops once the child
// lets go.
func TestDropLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	keep := dropFixture(t, dir)
	mustOK(t, "Close keep", keep.Close())
	release := holdDir(t, dir)

	u := rawURL(dir)
	u.RawQuery = "lock_timeout=300ms"
	err := Raw().Drop(t.Context(), u, "pods")
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "drop pods") {
		t.Errorf("Drop from a directory another process holds = %v; want ErrLocked naming the drop and the directory", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	u.RawQuery = "lock_timeout=1m"
	err = Raw().Drop(ctx, u, "pods")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Drop with an expiring context = %v; want the context's error", err)
	}

	release()
	mustOK(t, "Drop once the child exited", Raw().Drop(t.Context(), rawURL(dir), "pods"))
	infos, err := Raw().Stores(t.Context(), rawURL(dir))
	mustOK(t, "Stores", err)
	var names []string
	for _, info := range infos {
		names = append(names, info.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"child", "keep"}, names); diff != "" {
		t.Errorf("Stores after the Drop (-want +got):\n%s", diff)
	}
}

// TestHalfDroppedStoreListed checks a Drop interrupted once the store is
// marked dropped (a crash, or the error "the store is dropped; a later Drop
// of the name deletes the rest"): every key of the store is still there,
// and ListStores must name it, as gone, so that `snapshot drop --store
// pods`, which checks each name against ListStores first, runs the Drop
// that finishes the job. Stores, and so every tool that reads stores, must
// leave it out.
func TestHalfDroppedStoreListed(t *testing.T) {
	dir := t.TempDir()
	keep := dropFixture(t, dir)
	mustOK(t, "Close keep", keep.Close())
	crash := errors.New("simulated crash")
	testHookDrop = func(s string) error {
		if s == "marked" {
			return crash
		}
		return nil
	}
	err := Raw().Drop(t.Context(), rawURL(dir), "pods")
	testHookDrop = nil
	if !errors.Is(err, crash) {
		t.Fatalf("Drop = %v", err)
	}
	n, _ := keysUnder(t, dir, "pods")
	entries, err := Raw().ListStores(t.Context(), rawURL(dir))
	mustOK(t, "ListStores", err)
	listed := false
	for _, e := range entries {
		if e.Info.Name != "pods" {
			continue
		}
		listed = true
		if !e.Gone() || !strings.Contains(e.Err.Error(), "drop it again") {
			t.Errorf("ListStores lists the half-dropped store with error %v; want one wrapping store.ErrNotFound that says to drop it again", e.Err)
		}
	}
	if !listed && n > 1 {
		t.Errorf("the half-dropped store keeps %d keys, but ListStores (what `snapshot drop --store pods` checks first) does not name it: the command refuses the Drop that would finish the job", n)
	}
	infos, err := Raw().Stores(t.Context(), rawURL(dir))
	mustOK(t, "Stores", err)
	for _, info := range infos {
		if info.Name == "pods" {
			t.Errorf("Stores lists the dropped store: %+v", info)
		}
	}
	mustOK(t, "second Drop", Raw().Drop(t.Context(), rawURL(dir), "pods"))
	if n, m := keysUnder(t, dir, "pods"); n != 0 || m != nil {
		t.Errorf("after the second Drop, %d keys of the store are left (meta %+v)", n, m)
	}
	entries, err = Raw().ListStores(t.Context(), rawURL(dir))
	mustOK(t, "ListStores", err)
	for _, e := range entries {
		if e.Info.Name == "pods" {
			t.Errorf("ListStores lists the store after the Drop finished: %+v", e)
		}
	}
}
