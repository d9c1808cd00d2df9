package badger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/recsum"
	"github.com/informerdb/informerdb/store/storetest"
)

// rawState is what a closed store holds: its meta record as stored, the
// index entries of its current generation, the entries its value records
// imply, and the number of index entry keys in any generation.
type rawState struct {
	meta      metaRecord
	entries   map[string]bool // "index\x00value\x00key"
	implied   map[string]bool
	entryKeys int
}

func triple(index, value, key string) string { return index + "\x00" + value + "\x00" + key }

func rawURL(dir string) *url.URL { return &url.URL{Scheme: Scheme, Path: dir} }

// readRaw reads the raw state of the store name in dir, which no store of
// this process may hold open with another durability.
func readRaw(t *testing.T, dir, name string) rawState {
	t.Helper()
	st := rawState{entries: map[string]bool{}, implied: map[string]bool{}}
	err := withDB(t.Context(), "test read", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.View(func(txn *badger.Txn) error {
			k := newKeys(name, 0)
			raw, err := metaBytes(txn, k)
			if err != nil {
				return err
			}
			if st.meta, _, err = decodeMeta(k.meta(), raw); err != nil {
				return err
			}
			k = k.withGen(st.meta.Generation)
			err = eachStoredEntry(t.Context(), txn, k, func(index, value, key string) error {
				st.entries[triple(index, value, key)] = true
				return nil
			})
			if err != nil {
				return err
			}
			err = eachImpliedEntry(t.Context(), txn, k, st.meta.Indexes, func(index, value, key string) error {
				st.implied[triple(index, value, key)] = true
				return nil
			})
			if err != nil {
				return err
			}
			// Index entry keys of every generation: store 'g' gen(8) 'i'.
			genTag := append(append([]byte(nil), k.store...), tagGen)
			return eachUnder(t.Context(), txn, genTag, func(_ *badger.Item, suffix []byte) error {
				if len(suffix) > 8 && suffix[8] == tagIndex {
					st.entryKeys++
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("read the raw state of %s: %v", name, err)
	}
	return st
}

// editRaw runs fn in a read-write transaction on the database in dir, with
// the keys of the current generation of name and its meta record, which fn
// may change (it is written back).
func editRaw(t *testing.T, dir, name string, fn func(txn *badger.Txn, k keys, m *metaRecord) error) {
	t.Helper()
	err := withDB(t.Context(), "test edit", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.Update(func(txn *badger.Txn) error {
			k := newKeys(name, 0)
			raw, err := metaBytes(txn, k)
			if err != nil {
				return err
			}
			m, _, err := decodeMeta(k.meta(), raw)
			if err != nil {
				return err
			}
			if err := fn(txn, k.withGen(m.Generation), &m); err != nil {
				return err
			}
			return txn.Set(k.meta(), encodeMeta(k.meta(), m))
		})
	})
	if err != nil {
		t.Fatalf("edit %s: %v", name, err)
	}
}

// objectTriples returns the (index, value, key) triples the objects of s
// yield under its index functions.
func objectTriples(t *testing.T, s store.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eachIndexed(t, s, func(name, v, key string) { out[triple(name, v, key)] = true })
	return out
}

// checkAllIndexReads checks IndexKeys and ListIndexFuncValues (checkIndexes)
// and ByIndex against the objects of s.
func checkAllIndexReads(t *testing.T, s store.Store) {
	t.Helper()
	checkIndexes(t, s)
	for name := range s.GetIndexers() {
		for _, v := range s.ListIndexFuncValues(name) {
			want, err := s.IndexKeys(name, v)
			mustOK(t, "IndexKeys", err)
			objs, err := s.ByIndex(name, v)
			mustOK(t, "ByIndex", err)
			var got []string
			for _, obj := range objs {
				key, err := cache.MetaNamespaceKeyFunc(obj)
				mustOK(t, "key", err)
				got = append(got, key)
			}
			sort.Strings(want)
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ByIndex(%q, %q) disagrees with IndexKeys (-want +got):\n%s", name, v, diff)
			}
		}
	}
}

// mutate changes s in phase p: it adds 20 Pods, moves 20 existing ones to
// another app (an index value change) and deletes 5.
func mutate(t *testing.T, s store.Store, p int) {
	t.Helper()
	var ops []store.Op
	for i := p * 20; i < p*20+40; i++ {
		ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(i, fmt.Sprint(p), fmt.Sprintf("app-%d", (i+p)%3))})
	}
	for i := p*20 - 20; i < p*20-15; i++ {
		if i >= 0 {
			ops = append(ops, store.Op{Type: store.OpDelete, Key: fmt.Sprintf("ns-%d/pod-%06d", i%10, i)})
		}
	}
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: fmt.Sprint(100 + p)}))
}

// openMode opens the store "pods" in dir, bounded or not.
func openMode(t *testing.T, dir string, bounded bool) store.Store {
	t.Helper()
	size := 0
	if bounded {
		size = 3
	}
	s, err := open(t.Context(), dir, podOptions(t, "pods", size), smallConfig())
	if err != nil {
		t.Fatalf("open (bounded=%v): %v", bounded, err)
	}
	return s
}

// checkRaw checks the invariant of metaRecord.Entries on the closed store:
// when the flag is set, the entries are exactly those the value records
// imply; wantFlag is the flag the last open mode sets; the default mode
// leaves no entry keys at all.
func checkRaw(t *testing.T, dir string, wantFlag bool) rawState {
	t.Helper()
	st := readRaw(t, dir, "pods")
	if st.meta.FormatVersion != FormatVersion {
		t.Errorf("format version %d, want %d", st.meta.FormatVersion, FormatVersion)
	}
	if st.meta.Entries != wantFlag {
		t.Errorf("meta record Entries = %v, want %v", st.meta.Entries, wantFlag)
	}
	if st.meta.Entries {
		if diff := cmp.Diff(st.implied, st.entries); diff != "" {
			t.Errorf("Entries is set but the entries differ from the value records (-implied +stored):\n%s", diff)
		}
	} else if st.entryKeys != 0 {
		t.Errorf("the default mode left %d index entry keys", st.entryKeys)
	}
	return st
}

// TestModeSwitches writes a store in the default mode and reopens it
// bounded, then default, then bounded again, changing it in each phase:
// every bounded phase must serve its index reads from entries that agree
// with the objects, though the default mode wrote none.
func TestModeSwitches(t *testing.T) {
	dir := t.TempDir()
	for p, bounded := range []bool{false, true, false, true, false} {
		s := openMode(t, dir, bounded)
		checkAllIndexReads(t, s)
		mutate(t, s, p)
		checkAllIndexReads(t, s)
		if len(s.List()) == 0 {
			t.Fatal("no objects")
		}
		want := objectTriples(t, s)
		mustOK(t, "Close", s.Close())
		st := checkRaw(t, dir, bounded)
		if diff := cmp.Diff(want, st.implied); diff != "" {
			t.Errorf("phase %d: value records disagree with the objects (-objects +records):\n%s", p, diff)
		}
	}
	// And the other way round: a store created bounded.
	dir = t.TempDir()
	for p, bounded := range []bool{true, false, true} {
		changePhase(t, dir, bounded, p)
	}
}

// changePhase opens the store in dir in a mode, checks its index reads
// before and after changing it (mutate's phase p), and checks the raw
// database after closing it.
func changePhase(t *testing.T, dir string, bounded bool, p int) {
	t.Helper()
	s := openMode(t, dir, bounded)
	checkAllIndexReads(t, s)
	mutate(t, s, p)
	checkAllIndexReads(t, s)
	mustOK(t, "Close", s.Close())
	checkRaw(t, dir, bounded)
}

// TestDefaultModeWritesNoEntries: commits, large commits (a new generation),
// Replace and AddIndexers of the default mode write no index entry.
func TestDefaultModeWritesNoEntries(t *testing.T) {
	dir := t.TempDir()
	s := openMode(t, dir, false)
	mutate(t, s, 0)
	var big []store.Op
	for i := range 2000 { // more than one transaction with smallConfig
		big = append(big, store.Op{Type: store.OpPut, Object: newPod(i, "7", fmt.Sprintf("app-%d", i%7))})
	}
	gen := generationsOf(t, s)
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{Ops: big, ResourceVersion: "7"}))
	if cmp.Equal(gen, generationsOf(t, s)) {
		t.Fatal("the large commit did not take the new-generation path")
	}
	// AddIndexers copies the whole store, megabytes over smallConfig's
	// 1 MiB value-log files, into a new generation.
	mutate(t, s, 1)
	mustOK(t, "AddIndexers", s.AddIndexers(cache.Indexers{"node": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}))
	checkAllIndexReads(t, s)
	mustOK(t, "Close", s.Close())
	checkRaw(t, dir, false)

	// The index set changed (no "node"): the default mode rebuilds its
	// values records, still without entries; then bounded builds them.
	s = openMode(t, dir, false)
	mutate(t, s, 2)
	mustOK(t, "Close", s.Close())
	checkRaw(t, dir, false)
	s = openMode(t, dir, true)
	checkAllIndexReads(t, s)
	mustOK(t, "Close", s.Close())
	if st := checkRaw(t, dir, true); len(st.entries) == 0 {
		t.Error("the bounded mode built no entries")
	}
}

// TestEntriesSwitchCrash stops the drop (default mode opening a store with
// entries) and the build (bounded mode opening one without) after each of
// their steps, as a crash would, and checks that the flag never says
// current over wrong entries, and that every later open in either mode
// reads right.
func TestEntriesSwitchCrash(t *testing.T) {
	crash := errors.New("simulated crash")
	for _, tc := range []struct {
		step    string
		from    bool // the mode that wrote the store
		to      bool // the mode whose open is stopped
		garbage bool // add wrong entries behind the flag first
	}{
		{"drop: flag cleared", true, false, false},
		{"build: cleared", false, true, true},
		{"build: written", false, true, true},
	} {
		t.Run(strings.ReplaceAll(tc.step, ":", ""), func(t *testing.T) {
			for _, then := range [][]bool{{true, false}, {false, true}} {
				dir := t.TempDir()
				s := openMode(t, dir, tc.from)
				mutate(t, s, 0)
				mutate(t, s, 1)
				mustOK(t, "Close", s.Close())
				if tc.garbage {
					// What a crashed drop leaves, made wrong by later
					// writes: entries naming deleted objects and values
					// objects no longer have.
					editRaw(t, dir, "pods", func(txn *badger.Txn, k keys, m *metaRecord) error {
						if err := txn.Set(sealedPair(k.entry("app", "app-9", "ns-0/pod-000000"))); err != nil {
							return err
						}
						return txn.Set(sealedPair(k.entry(cache.NamespaceIndex, "ns-3", "ns-3/gone")))
					})
				}
				steps := 0
				testHookEntries = func(step string) error {
					if step == tc.step {
						steps++
						return crash
					}
					return nil
				}
				_, err := open(t.Context(), dir, podOptions(t, "pods", map[bool]int{true: 3}[tc.to]), smallConfig())
				testHookEntries = nil
				if !errors.Is(err, crash) || steps != 1 {
					t.Fatalf("open stopped at %q: %v (%d stops)", tc.step, err, steps)
				}
				st := readRaw(t, dir, "pods")
				if st.meta.Entries {
					t.Errorf("after a stop at %q the flag says the entries are current", tc.step)
				}
				// The order of the steps: the drop clears the flag before
				// it deletes an entry, the build writes every entry
				// before it sets the flag.
				switch tc.step {
				case "drop: flag cleared":
					if len(st.entries) == 0 {
						t.Errorf("the drop deleted entries before it cleared the flag")
					}
				case "build: written":
					if diff := cmp.Diff(st.implied, st.entries); diff != "" {
						t.Errorf("the build stopped before its flag has wrong entries (-implied +stored):\n%s", diff)
					}
				}
				// Then reopen in either order of modes, changing the
				// store each time.
				for p, bounded := range then {
					changePhase(t, dir, bounded, 2+p)
				}
			}
		})
	}
}

// TestWrongEntriesBehindClearFlag: entries left behind a false flag (a
// crashed drop, a crashed build) may be anything; the bounded mode's build
// must not keep any of them.
func TestWrongEntriesBehindClearFlag(t *testing.T) {
	dir := t.TempDir()
	s := openMode(t, dir, false)
	mutate(t, s, 0)
	mustOK(t, "Close", s.Close())
	editRaw(t, dir, "pods", func(txn *badger.Txn, k keys, m *metaRecord) error {
		if m.Entries {
			return errors.New("the default mode left the flag set")
		}
		for _, e := range [][2]string{{"app-1", "ns-0/pod-000000"}, {"app-7", "ns-1/pod-000001"}, {"app-0", "ns-5/nothing"}} {
			if err := txn.Set(sealedPair(k.entry("app", e[0], e[1]))); err != nil {
				return err
			}
		}
		return nil
	})
	s = openMode(t, dir, true)
	checkAllIndexReads(t, s)
	mustOK(t, "Close", s.Close())
	checkRaw(t, dir, true)
}

// setFormat rewrites the store "pods" in dir as format version (1 or 2)
// wrote it: that formatVersion and no value frames, the meta record's
// included; version 1 also had no "entries" field in its meta record.
func setFormat(t *testing.T, dir string, version int) {
	t.Helper()
	err := withDB(t.Context(), "test edit", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.Update(func(txn *badger.Txn) error {
			k := newKeys("pods", 0)
			raw, err := metaBytes(txn, k)
			if err != nil {
				return err
			}
			raw, ok := recsum.Open(k.meta(), raw)
			if !ok {
				return errors.New("meta record: bad frame")
			}
			if err := unsealAll(txn, k); err != nil {
				return err
			}
			var m map[string]interface{}
			if err := json.Unmarshal(raw, &m); err != nil {
				return err
			}
			if version == formatV1 {
				if _, ok := m["entries"]; !ok {
					return errors.New(`no "entries" field to remove`)
				}
				delete(m, "entries")
			}
			m["formatVersion"] = version
			raw, err = json.Marshal(m)
			if err != nil {
				return err
			}
			return txn.Set(k.meta(), raw)
		})
	})
	if err != nil {
		t.Fatalf("write a format %d store: %v", version, err)
	}
}

// TestFormat1Upgrade opens a format 1 store (which always kept its index
// entries, no value frames) in each mode: it is upgraded to the current
// format, not refused, and reads right; a store of a later format is
// refused.
func TestFormat1Upgrade(t *testing.T) {
	for _, bounded := range []bool{false, true} {
		t.Run(fmt.Sprintf("bounded=%v", bounded), func(t *testing.T) {
			dir := t.TempDir()
			s := openMode(t, dir, true)
			mutate(t, s, 0)
			mutate(t, s, 1)
			mustOK(t, "Close", s.Close())
			setFormat(t, dir, formatV1)

			// The raw driver does not read a store without value
			// frames: it could not tell damage from data.
			if _, err := Raw().Stores(t.Context(), rawURL(dir)); !errors.Is(err, store.ErrIncompatible) || !errors.Is(err, errUnsealed) {
				t.Fatalf("Stores of a format 1 store: %v, want ErrIncompatible saying to open it once", err)
			}

			s = openMode(t, dir, bounded)
			if got := s.Info().FormatVersion; got != FormatVersion {
				t.Errorf("Info().FormatVersion = %d, want %d", got, FormatVersion)
			}
			checkAllIndexReads(t, s)
			if got := s.ResourceVersion(); got != "101" {
				t.Errorf("ResourceVersion = %q, want 101", got)
			}
			mutate(t, s, 2)
			checkAllIndexReads(t, s)
			mustOK(t, "Close", s.Close())
			checkRaw(t, dir, bounded)
			// And in the other mode.
			s = openMode(t, dir, !bounded)
			checkAllIndexReads(t, s)
			mustOK(t, "Close", s.Close())
			checkRaw(t, dir, !bounded)
		})
	}
	t.Run("a later format is refused", func(t *testing.T) {
		dir := t.TempDir()
		s := openMode(t, dir, false)
		mustOK(t, "Close", s.Close())
		editRaw(t, dir, "pods", func(_ *badger.Txn, _ keys, m *metaRecord) error {
			m.FormatVersion = FormatVersion + 1
			return nil
		})
		for _, bounded := range []bool{false, true} {
			size := map[bool]int{true: 3}[bounded]
			if _, err := open(t.Context(), dir, podOptions(t, "pods", size), smallConfig()); !errors.Is(err, store.ErrIncompatible) {
				t.Errorf("open (bounded=%v) of a format %d store: %v, want ErrIncompatible", bounded, FormatVersion+1, err)
			}
		}
		if _, err := Raw().Stores(t.Context(), rawURL(dir)); !errors.Is(err, store.ErrIncompatible) {
			t.Errorf("Stores of a format %d store: %v, want ErrIncompatible", FormatVersion+1, err)
		}
	})
}

// TestIndexEntriesWithoutEntries: for a store of the default mode,
// IndexEntries reports the entries the value records imply, so that the
// snapshot tool's verify still has something to check.
func TestIndexEntriesWithoutEntries(t *testing.T) {
	dir := t.TempDir()
	s := openMode(t, dir, false)
	mutate(t, s, 0)
	mutate(t, s, 1)
	// A key longer than maxInline is hashed in the value record's key.
	long := newPod(999, "5", "app-long")
	long.Name = strings.Repeat("n", maxInline+10)
	mustOK(t, "Add", s.Add(long))
	want := objectTriples(t, s)
	mustOK(t, "Close", s.Close())
	if st := checkRaw(t, dir, false); st.entryKeys != 0 {
		t.Fatalf("%d entry keys", st.entryKeys)
	}
	got := map[string]bool{}
	mustOK(t, "IndexEntries", IndexEntries(context.Background(), rawURL(dir), "pods", func(index, value, key string) error {
		got[triple(index, value, key)] = true
		return nil
	}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("IndexEntries without entries (-objects +reported):\n%s", diff)
	}
	// The bounded mode builds the hashed key's entries too.
	s = openMode(t, dir, true)
	keys, err := s.IndexKeys("app", "app-long")
	mustOK(t, "IndexKeys", err)
	if len(keys) != 1 || keys[0] != long.Namespace+"/"+long.Name {
		t.Errorf("IndexKeys(app, app-long) = %.80q", keys)
	}
	checkAllIndexReads(t, s)
	mustOK(t, "Close", s.Close())
	checkRaw(t, dir, true)
}

// sealedPair returns the key k and the framed value v: a record as this
// build writes it, for txn.Set.
func sealedPair(k, v []byte) ([]byte, []byte) { return k, seal(k, v) }

// unsealAll strips the frame of every value of the store of k but its
// meta record, as format versions 2 and older stored them.
func unsealAll(txn *badger.Txn, k keys) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: k.store, PrefetchValues: false})
	var ks, vs [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if bytes.Equal(item.Key(), k.meta()) {
			continue
		}
		v, err := valueCopy(item)
		if err != nil {
			it.Close()
			return err
		}
		ks, vs = append(ks, item.KeyCopy(nil)), append(vs, v)
	}
	it.Close()
	for i := range ks {
		if err := txn.Set(ks[i], vs[i]); err != nil {
			return err
		}
	}
	return nil
}

// metaBytes returns a copy of the meta record of the store of k, read in txn.
func metaBytes(txn *badger.Txn, k keys) ([]byte, error) {
	item, err := txn.Get(k.meta())
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// TestUnreadableStoreKeepsEntries opens, in the default mode, a store the
// bounded mode wrote (it keeps index entries) in which one object does not
// decode: the open fails with ErrCorrupt, and the store keeps its entries
// and its flag, for the bounded mode or a snapshot to read.
func TestUnreadableStoreKeepsEntries(t *testing.T) {
	dir := t.TempDir()
	s := openMode(t, dir, true)
	mutate(t, s, 0)
	mustOK(t, "Close", s.Close())
	editRaw(t, dir, "pods", func(txn *badger.Txn, k keys, _ *metaRecord) error {
		return setSealed(txn, k.obj("ns-3/pod-000013"), []byte("not a protobuf object"))
	})
	before := readRaw(t, dir, "pods")
	if !before.meta.Entries || len(before.entries) == 0 {
		t.Fatalf("the bounded mode left no entries: flag %v, %d entries", before.meta.Entries, len(before.entries))
	}

	s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
	if err == nil {
		s.Close()
		t.Fatal("default-mode open of a store with an object that does not decode: no error")
	}
	if !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("open: %v, want ErrCorrupt", err)
	}
	after := readRaw(t, dir, "pods")
	if diff := cmp.Diff(before, after, cmp.AllowUnexported(rawState{})); diff != "" {
		t.Errorf("the failed open changed the store (-before +after):\n%s", diff)
	}
}

// TestListStoresNamesUnreadable checks that a store of another format
// version, and one with a damaged meta record, are listed by name with
// their errors beside the readable store (storetest.CheckUnreadableListed),
// in name order, which is not badger's key order: keys start with the
// name's length.
func TestListStoresNamesUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c-damaged", "a-readable-store", "b-newer"} {
		s, err := open(t.Context(), dir, podOptions(t, name, 0), smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustOK(t, "Add", s.Add(newPod(1, "1", "app")))
		mustOK(t, "Close", s.Close())
	}
	editRaw(t, dir, "b-newer", func(_ *badger.Txn, _ keys, m *metaRecord) error {
		m.FormatVersion = 99
		return nil
	})
	err := withDB(t.Context(), "test edit", rawURL(dir), "", false, func(sh *sharedDB) error {
		return sh.db.Update(func(txn *badger.Txn) error {
			return txn.Set(newKeys("c-damaged", 0).meta(), []byte("{not json"))
		})
	})
	mustOK(t, "damage a meta record", err)

	storetest.CheckUnreadableListed(t, rawURL(dir).String(), "a-readable-store", "b-newer", "c-damaged")
}

// TestChangedIndexFunctionStored opens, in the default mode, a store whose
// app index function computes something else under the same name: the
// store serves the new values and stores them, so that the bounded mode,
// which reads the stored values, serves the same afterwards.
func TestChangedIndexFunctionStored(t *testing.T) {
	dir := t.TempDir()
	s := openMode(t, dir, false)
	mutate(t, s, 0)
	mustOK(t, "Close", s.Close())
	v2 := func(cacheSize int) *store.Options {
		o := podOptions(t, "pods", cacheSize)
		o.Indexers["app"] = func(obj interface{}) ([]string, error) {
			return []string{"v2-" + obj.(*corev1.Pod).Labels["app"]}, nil
		}
		return o
	}
	s, err := open(t.Context(), dir, v2(0), smallConfig())
	mustOK(t, "open with the new function", err)
	checkAllIndexReads(t, s)
	if keys, err := s.IndexKeys("app", "v2-app-1"); err != nil || len(keys) == 0 {
		t.Errorf("default mode: IndexKeys(app, v2-app-1) = %q, %v; want the objects under the new function", keys, err)
	}
	mustOK(t, "Close", s.Close())
	if st := readRaw(t, dir, "pods"); !st.implied[triple("app", "v2-app-1", "ns-1/pod-000001")] {
		t.Error("the stored value records do not hold the new function's values")
	}
	s, err = open(t.Context(), dir, v2(3), smallConfig())
	mustOK(t, "open bounded with the new function", err)
	defer s.Close()
	checkAllIndexReads(t, s)
}
