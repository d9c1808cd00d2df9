package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Drop/OneOfThree", persistent: true, contract: "store.Drop: the dropped store is gone (not in Stores, Export finds nothing, Open finds it empty without a resume point, and the name then works as a new store); the other stores, one named by a prefix of its name and one by an extension, are untouched, record for record", fn: testDropOneOfThree},
	rule{name: "Drop/Missing", persistent: true, contract: "store.Drop: a name the database does not hold, or a database that does not exist, fails with ErrNotFound naming the store, changes nothing and creates nothing", fn: testDropMissing},
	rule{name: "Drop/InUse", persistent: true, contract: "store.Drop: a store open in this process is refused with ErrInUse and keeps working; once closed it drops", fn: testDropInUse},
	rule{name: "Drop/Canceled", persistent: true, contract: "store.Drop: a canceled context fails the drop with the context's error and leaves the store whole", fn: testDropCanceled},
	rule{name: "Drop/Concurrent", persistent: true, contract: "store.Drop: concurrent drops of different stores of one database (run with -race), beside readers of the database, all succeed and leave exactly the other stores", fn: testDropConcurrent},
	rule{name: "Drop/BadInput", contract: "store.Drop: an empty name, an unknown URL parameter, and for a backend without a file any name, fail with ErrInvalid and never panic", fn: testDropBadInput},
)

// dump is what store.Export hands out of one store, records sorted by key.
type dump struct {
	Info    store.Info
	Records []store.Record
}

// export reads the store name of the database at u.
func export(t testing.TB, u, name string) (dump, error) {
	t.Helper()
	var d dump
	info, err := store.Export(t.Context(), u, name, func(r store.Record) error {
		r.Data = bytes.Clone(r.Data)
		d.Records = append(d.Records, r)
		return nil
	})
	d.Info = info
	slices.SortFunc(d.Records, func(a, b store.Record) int { return strings.Compare(a.Key, b.Key) })
	return d, err
}

// mustExport is export that fails the test on error.
func mustExport(t testing.TB, u, name string) dump {
	t.Helper()
	d, err := export(t, u, name)
	mustOK(t, "Export "+name, err)
	return d
}

// storeNames returns the sorted names of the stores of the database at u.
func storeNames(t testing.TB, u string) []string {
	t.Helper()
	infos, err := store.Stores(t.Context(), u)
	mustOK(t, "Stores", err)
	names := make([]string, 0, len(infos))
	for _, info := range infos {
		names = append(names, info.Name)
	}
	slices.Sort(names)
	return names
}

// drop calls store.Drop, and skips the test when the backend has no
// RawDriver (the bundled backends all have one).
func drop(t testing.TB, ctx context.Context, u, name string) error {
	t.Helper()
	err := store.Drop(ctx, u, name)
	if errors.Is(err, store.ErrInvalid) && strings.Contains(err.Error(), "cannot drop a store") {
		t.Skipf("the backend cannot drop a store: %v", err)
	}
	return err
}

// checkDroppedGone checks that the store name is gone from the database
// at u: not listed, not exported, and opened with opts a new store.
func checkDroppedGone(t *testing.T, h *harness, u, name string, opts *store.Options) store.Store {
	t.Helper()
	if slices.Contains(storeNames(t, u), name) {
		t.Errorf("Stores after Drop still lists %q", name)
	}
	_, err := export(t, u, name)
	wantErr(t, "Export of a dropped store", err, store.ErrNotFound, name)
	s := h.open(t, u, opts)
	checkContents(t, s, map[string]string{})
	checkRV(t, s, "")
	checkReset(t, s, false, "of a dropped store opened again (a new store)")
	CheckIndexes(t, s)
	return s
}

func testDropOneOfThree(t *testing.T, h *harness) {
	u := h.url(t)
	// Names where one is a prefix of another: a backend that finds a
	// store's data by prefix must not take its neighbours' along.
	const gone, longer, shorter = "v1/pods", "v1/pods@ns=a", "v1/pod"
	opts := podOptions(t, gone)
	s := h.open(t, u, opts)
	objs := seed(t, s)
	// The store to drop has been through a restart and a Replace (badger:
	// a new generation, bolt: new sequence numbers).
	s = h.reopen(t, s, u, opts)
	mustOK(t, "Replace", s.Replace(append(objs, newPod("ns", "d", "6", "app=db")), "6"))
	closeStore(t, s)

	l := h.open(t, u, podOptions(t, longer))
	lobjs := seed(t, l)
	l.Bookmark("15")
	closeStore(t, l)
	sh := h.open(t, u, widgetOptions(t, shorter))
	w := widget{Name: "w1", Size: 3, Tags: []string{"x", "y"}}
	mustOK(t, "Commit widget", sh.Commit(t.Context(), store.Batch{ResourceVersion: "20", Ops: []store.Op{{Type: store.OpPut, Object: w}}}))
	closeStore(t, sh)

	if diff := cmp.Diff([]string{shorter, gone, longer}, storeNames(t, u)); diff != "" {
		t.Fatalf("Stores before Drop (-want +got):\n%s", diff)
	}
	before := map[string]dump{longer: mustExport(t, u, longer), shorter: mustExport(t, u, shorter)}
	if n := len(mustExport(t, u, gone).Records); n != 4 {
		t.Fatalf("the store to drop exports %d records; want 4", n)
	}

	mustOK(t, "Drop", drop(t, t.Context(), u, gone))

	checkDiff(t, []string{shorter, longer}, storeNames(t, u), "Stores after Drop")
	for name, d := range before {
		checkDiff(t, d, mustExport(t, u, name), "Drop changed store %q", name)
	}
	// A second drop of the name finds nothing.
	wantErr(t, "second Drop", drop(t, t.Context(), u, gone), store.ErrNotFound, gone)

	// The name works as a new store, and what it writes now is all a
	// restart finds: nothing of the dropped store comes back.
	s = checkDroppedGone(t, h, u, gone, opts)
	e := newPod("ns", "e", "7", "app=web")
	mustOK(t, "Commit after Drop", s.Commit(t.Context(), store.Batch{ResourceVersion: "7", Ops: []store.Op{{Type: store.OpPut, Object: e}}}))
	s = h.reopen(t, s, u, opts)
	checkContents(t, s, want(t, e))
	checkRV(t, s, "7")
	CheckIndexes(t, s)
	closeStore(t, s)
	// And a store that was dropped once drops again.
	mustOK(t, "Drop of the name used again", drop(t, t.Context(), u, gone))
	closeStore(t, checkDroppedGone(t, h, u, gone, opts))
	mustOK(t, "Drop of the store made by opening the name", drop(t, t.Context(), u, gone))

	// The others open as they were.
	l = h.open(t, u, podOptions(t, longer))
	checkContents(t, l, want(t, lobjs...))
	checkRV(t, l, "15")
	CheckIndexes(t, l)
	sh = h.open(t, u, widgetOptions(t, shorter))
	checkDiff(t, map[string]widget{w.Name: w}, widgetContents(t, sh), "store %q after Drop of %q", shorter, gone)
	checkRV(t, sh, "20")
	CheckIndexes(t, sh)
}

// pathState describes the file or directory a database URL names, or the
// nearest existing directory above it, with the bytes of every file.
func pathState(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	mustOK(t, "parse URL", err)
	p := pu.Path
	for {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) && filepath.Dir(p) != p {
			p = filepath.Dir(p)
			continue
		}
		mustOK(t, "stat", err)
		if fi.IsDir() {
			return fmt.Sprint(DirListing(t, p))
		}
		data, err := os.ReadFile(p)
		mustOK(t, "read", err)
		return "file " + string(data)
	}
}

func testDropMissing(t *testing.T, h *harness) {
	u := h.url(t)
	fresh := pathState(t, u)
	wantErr(t, "Drop from a database that does not exist", drop(t, t.Context(), u, "pods"), store.ErrNotFound, "pods")
	if got := pathState(t, u); got != fresh {
		t.Errorf("Drop from a database that does not exist changed %s: %.200s, was %.200s", u, got, fresh)
	}

	s := h.open(t, u, podOptions(t, "pods"))
	objs := seed(t, s)
	closeStore(t, s)
	before := mustExport(t, u, "pods")
	var file string
	if st := pathState(t, u); strings.HasPrefix(st, "file ") {
		// A file database must be left byte for byte: a refused drop
		// writes nothing. (A badger directory changes as badger opens it.)
		file = st
	}
	for _, name := range []string{"nope", "pod", "pods2", "pods\x00"} {
		wantErr(t, fmt.Sprintf("Drop of %q", name), drop(t, t.Context(), u, name), store.ErrNotFound, strings.TrimSuffix(name, "\x00"))
	}
	if file != "" && pathState(t, u) != file {
		t.Errorf("a Drop of a missing store changed the database file")
	}
	checkDiff(t, before, mustExport(t, u, "pods"), "a Drop of a missing store changed store pods")
	h.checkSeeded(t, u, objs)
}

func testDropInUse(t *testing.T, h *harness) {
	u := h.url(t)
	opts := podOptions(t, "pods")
	s := h.open(t, u, opts)
	objs := seed(t, s)
	wantErr(t, "Drop of an open store", drop(t, t.Context(), u, "pods"), store.ErrInUse, "pods")
	// The open store is whole and keeps working.
	checkContents(t, s, want(t, objs...))
	checkRV(t, s, "5")
	d := newPod("ns", "d", "6")
	mustOK(t, "Commit after a refused Drop", s.Commit(t.Context(), store.Batch{ResourceVersion: "6", Ops: []store.Op{{Type: store.OpPut, Object: d}}}))
	s = h.reopen(t, s, u, opts)
	checkContents(t, s, want(t, append(objs, d)...))
	checkRV(t, s, "6")
	closeStore(t, s)
	mustOK(t, "Drop once closed", drop(t, t.Context(), u, "pods"))
	checkDroppedGone(t, h, u, "pods", opts)
}

func testDropCanceled(t *testing.T, h *harness) {
	u := h.url(t)
	opts := podOptions(t, "pods")
	s := h.open(t, u, opts)
	objs := seed(t, s)
	closeStore(t, s)
	before := mustExport(t, u, "pods")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	wantErr(t, "Drop with a canceled context", drop(t, ctx, u, "pods"), context.Canceled)
	checkDiff(t, before, mustExport(t, u, "pods"), "a canceled Drop changed the store")
	h.checkSeeded(t, u, objs)
}

func testDropConcurrent(t *testing.T, h *harness) {
	u := h.url(t)
	const n = 6
	for i := range n {
		s := h.open(t, u, podOptions(t, fmt.Sprintf("s%d", i)))
		mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: fmt.Sprint(10 + i), Ops: []store.Op{
			{Type: store.OpPut, Object: newPod("ns", fmt.Sprintf("p%d", i), "1", "app=web")},
		}}))
		closeStore(t, s)
	}
	kept := map[string]dump{}
	for i := 1; i < n; i += 2 {
		name := fmt.Sprintf("s%d", i)
		kept[name] = mustExport(t, u, name)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i += 2 {
		wg.Go(func() {
			if err := store.Drop(t.Context(), u, fmt.Sprintf("s%d", i)); err != nil {
				errs <- err
			}
		})
	}
	// Readers of the database meanwhile see each store whole or gone.
	wg.Go(func() {
		for range 3 {
			infos, err := store.Stores(t.Context(), u)
			if err != nil {
				errs <- fmt.Errorf("store.Stores during the drops: %w", err)
				return
			}
			for _, info := range infos {
				var i int
				if _, err := fmt.Sscanf(info.Name, "s%d", &i); err != nil || info.ResourceVersion != fmt.Sprint(10+i) {
					errs <- fmt.Errorf("store.Stores during the drops lists %+v", info)
				}
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if strings.Contains(err.Error(), "cannot drop a store") {
			t.Skipf("the backend cannot drop a store: %v", err)
		}
		t.Error(err)
	}
	checkDiff(t, []string{"s1", "s3", "s5"}, storeNames(t, u), "Stores after the drops")
	for name, d := range kept {
		checkDiff(t, d, mustExport(t, u, name), "concurrent drops changed store %q", name)
	}
}

func testDropBadInput(t *testing.T, h *harness) {
	u := h.url(t)
	wantErr(t, "Drop of the empty name", drop(t, t.Context(), u, ""), store.ErrInvalid, "empty")
	wantErr(t, "Drop with an unknown URL parameter", drop(t, t.Context(), withParam(u, "no_such_param=1"), "pods"), store.ErrInvalid, "no_such_param")
	if !h.b.Persistent {
		// A store without a file lives only in its process.
		wantErr(t, "Drop from a database without a file", drop(t, t.Context(), u, "pods"), store.ErrInvalid)
	}
}
