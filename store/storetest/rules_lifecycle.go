package storetest

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Close/ErrClosed", contract: "Store.Close: every method with an error result returns ErrClosed afterwards; the others return empty values; Close is idempotent", fn: testClosed},
	rule{name: "Info/Fields", contract: "Store.Info: backend scheme, name, format version, codec, type, key function, scope, sorted index names and resume point", fn: testInfo},
	rule{name: "Open/UnknownParameter", contract: "store.Open: an unknown URL parameter is rejected with ErrInvalid naming it", fn: testUnknownParameter},
	rule{name: "Open/BadOptions", contract: "store.Open: invalid options (custom key function without a name, negative durations) are rejected with ErrInvalid", fn: testBadOptions},
	rule{name: "Keys/Unusual", contract: "keys and index values with unicode, '/', empty namespace (cluster-scoped), 64 KiB strings and NUL bytes are stored, found and indexed exactly", fn: testUnusualKeys},
	rule{name: "Keys/EmptyRefused", contract: "Store: a write or Commit op whose key is \"\" fails with ErrInvalid saying \"empty key\" (a batch's error names the op by position and type), deletes included, and leaves the store unchanged; Get and GetByKey of \"\" find nothing without error, as in client-go", fn: testEmptyKey},
	rule{name: "Keys/NamespaceWithoutNameRefused", contract: "Store: a write or Commit op of an object with a namespace and no name (key \"ns/\", no object the API server serves) fails with ErrInvalid naming the key, and leaves the store unchanged", fn: testNoNameKey},
	rule{name: "Keys/EmptyRefusedByImport", persistent: true, contract: "store.Import: a record with an empty key fails the import with ErrInvalid saying \"empty key\" and naming the record, and the store keeps its previous contents", fn: testEmptyKeyImport},
	rule{name: "Objects/Large", contract: "objects of 1 MiB are stored and returned intact", fn: testLargeObjects},
	rule{name: "Concurrency/WritersAndReaders", contract: "Store: concurrent writers and readers (run with -race) end with every write applied and indexes consistent", fn: testConcurrency},
	rule{name: "Concurrency/AddIndexersDuringWrites", contract: "cache.Indexer: AddIndexers while writers run leaves the new index consistent with every object", fn: testAddIndexersDuringWrites},
)

func testClosed(t *testing.T, h *harness) {
	s := h.openPods(t)
	seed(t, s)
	indexers := slices.Sorted(maps.Keys(s.GetIndexers()))
	closeStore(t, s)
	// The store's configuration outlives it, as its data does not.
	if got := slices.Sorted(maps.Keys(s.GetIndexers())); !slices.Equal(got, indexers) {
		t.Errorf("GetIndexers after Close = %q; want the indexers it had, %q", got, indexers)
	}
	p := newPod("ns", "a", "1")
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Add", func() error { return s.Add(p) }},
		{"Update", func() error { return s.Update(p) }},
		{"Delete", func() error { return s.Delete(p) }},
		{"Replace", func() error { return s.Replace([]interface{}{p}, "9") }},
		{"Resync", s.Resync},
		{"Commit", func() error { return s.Commit(t.Context(), store.Batch{ResourceVersion: "9"}) }},
		{"Get", func() error { _, _, err := s.Get(p); return err }},
		{"GetByKey", func() error { _, _, err := s.GetByKey("ns/a"); return err }},
		{"Index", func() error { _, err := s.Index(idxApp, p); return err }},
		{"IndexKeys", func() error { _, err := s.IndexKeys(idxApp, "web"); return err }},
		{"ByIndex", func() error { _, err := s.ByIndex(idxApp, "web"); return err }},
		{"AddIndexers", func() error { return s.AddIndexers(cache.Indexers{"zone": labelIndex("zone")}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.name+" after Close", tc.call(), store.ErrClosed)
		})
	}
	for what, n := range map[string]int{"List": len(s.List()), "ListKeys": len(s.ListKeys()), "ListIndexFuncValues": len(s.ListIndexFuncValues(idxApp))} {
		if n != 0 {
			t.Errorf("%s after Close returned %d items; want none", what, n)
		}
	}
	s.Bookmark("77") // must not panic
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v; want nil (Close is idempotent)", err)
	}
}

func testInfo(t *testing.T, h *harness) {
	u := h.url(t)
	opts := podOptions(t, "info-pods")
	opts.Scope = "cluster-1/v1/pods"
	s := h.open(t, u, opts)
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "42"}))
	pu, err := url.Parse(u)
	mustOK(t, "parse URL", err)
	got := s.Info()
	if got.FormatVersion <= 0 {
		t.Errorf("Info().FormatVersion = %d; want > 0", got.FormatVersion)
	}
	got.FormatVersion = 0
	want := store.Info{
		Backend:         pu.Scheme,
		Name:            "info-pods",
		Codec:           opts.Codec.Name(),
		Type:            opts.Codec.Type(),
		KeyFunc:         "namespace/name",
		Scope:           "cluster-1/v1/pods",
		Indexes:         []string{idxApp, idxGuard, idxLabels, idxNamespace},
		ResourceVersion: "42",
	}
	checkDiff(t, want, got, "Info()")
}

func testUnknownParameter(t *testing.T, h *harness) {
	u := withParam(h.url(t), "informerdb_no_such_parameter=1")
	openFails(t, "Open with an unknown parameter", u, podOptions(t, "pods"), store.ErrInvalid, "informerdb_no_such_parameter")
}

func testBadOptions(t *testing.T, h *harness) {
	for _, tc := range []struct {
		name string
		opts *store.Options
	}{
		{"custom key function without a name", &store.Options{Codec: podCodec(t), KeyFunc: cache.MetaNamespaceKeyFunc}},
		{"negative lock timeout", &store.Options{Codec: podCodec(t), LockTimeout: -1}},
		{"unknown durability", &store.Options{Codec: podCodec(t), Durability: "sometimes"}},
		{"nil index function", &store.Options{Codec: podCodec(t), Indexers: cache.Indexers{"x": nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			openFails(t, "Open", h.url(t), tc.opts, store.ErrInvalid)
		})
	}
}

// unusualStrings are names, namespaces and label values that stress key and
// index encodings.
func unusualStrings() map[string]string {
	return map[string]string{
		"unicode":   "ünïcødé-名前-🙂",
		"slash":     "a/b/c",
		"nul":       "nul\x00byte",
		"long":      strings.Repeat("x", 64<<10),
		"separator": "ns/name:\xff", // a byte that is not valid UTF-8 in a key
		"space":     " leading and trailing ",
	}
}

func testUnusualKeys(t *testing.T, h *harness) {
	s := h.openPods(t)
	var objs []interface{}
	for label, v := range unusualStrings() {
		t.Run(label, func(t *testing.T) {
			for _, p := range []interface{}{
				newPod("ns", v, "1", "app="+v), // name and index value
				newPod(v, "n", "1", "app="+v),  // namespace
				newPod("", v, "1", "app="+v),   // cluster-scoped
			} {
				mustOK(t, "Add", s.Add(p))
				objs = append(objs, p)
				k := keyOf(t, p)
				got, ok, err := s.GetByKey(k)
				if err != nil || !ok {
					t.Fatalf("GetByKey(%q) = _, %v, %v", short(k), ok, err)
				}
				if fingerprint(t, got) != fingerprint(t, p) {
					t.Errorf("GetByKey(%q) returned another object", short(k))
				}
			}
			keys := indexKeys(t, s, idxApp, v)
			if len(keys) != 3 {
				t.Errorf("IndexKeys(app, %q) = %d keys; want 3", short(v), len(keys))
			}
		})
	}
	checkContents(t, s, want(t, objs...))
	CheckIndexes(t, s)
	// Deleting them empties the indexes: no prefix confusion between "a/b/c"
	// and other keys.
	for _, o := range objs {
		mustOK(t, "Delete", s.Delete(o))
	}
	checkContents(t, s, map[string]string{})
	checkDiff(t, none, s.ListIndexFuncValues(idxApp), "ListIndexFuncValues(app) after deleting everything")
}

func testLargeObjects(t *testing.T, h *harness) {
	s := h.openPods(t)
	var objs []interface{}
	for i := range 3 {
		p := newPod("ns", fmt.Sprintf("big-%d", i), "1", "app=big")
		p.Annotations = map[string]string{"payload": strings.Repeat(string(rune('a'+i)), 1<<20)}
		objs = append(objs, p)
	}
	mustOK(t, "Add", s.Add(objs[0]))
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "2", Ops: []store.Op{
		{Type: store.OpPut, Object: objs[1]}, {Type: store.OpPut, Object: objs[2]},
	}}))
	checkContents(t, s, want(t, objs...))
	mustOK(t, "Delete", s.Delete(objs[1]))
	checkContents(t, s, want(t, objs[0], objs[2]))
	CheckIndexes(t, s)
}

func testConcurrency(t *testing.T, h *harness) {
	s := h.openPods(t)
	const writers, perWriter, readers = 4, 40, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	stop := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				p := newPod(fmt.Sprintf("ns-%d", w), fmt.Sprintf("p-%d", i), fmt.Sprint(i), fmt.Sprintf("app=a%d", i%5))
				var err error
				switch i % 4 {
				case 0:
					err = s.Add(p)
				case 1:
					err = s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: p}}, ResourceVersion: fmt.Sprint(i)})
				case 2:
					err = s.Update(p)
				case 3:
					if err = s.Add(p); err == nil {
						err = s.Delete(p)
					}
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d op %d: %w", w, i, err)
					return
				}
			}
		})
	}
	var rg sync.WaitGroup
	for r := range readers {
		rg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.List()
				s.ListKeys()
				s.ListIndexFuncValues(idxApp)
				if _, _, err := s.GetByKey(fmt.Sprintf("ns-%d/p-1", r)); err != nil {
					errs <- err
					return
				}
				if _, err := s.ByIndex(idxApp, "a1"); err != nil {
					errs <- err
					return
				}
				s.ResourceVersion()
				s.Info()
				// Pace the readers: spinning ones starve writers that wait
				// for fsync under -race on small machines.
				time.Sleep(200 * time.Microsecond)
			}
		})
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var wantObjs []interface{}
	for w := range writers {
		for i := range perWriter {
			if i%4 != 3 {
				wantObjs = append(wantObjs, newPod(fmt.Sprintf("ns-%d", w), fmt.Sprintf("p-%d", i), fmt.Sprint(i), fmt.Sprintf("app=a%d", i%5)))
			}
		}
	}
	checkContents(t, s, want(t, wantObjs...))
	CheckIndexes(t, s)
	if rv := s.ResourceVersion(); rv == "" {
		t.Error("ResourceVersion after concurrent commits is empty")
	}
}

func testAddIndexersDuringWrites(t *testing.T, h *harness) {
	s := h.openPods(t)
	const writers, perWriter = 3, 80
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				p := newPod("ns", fmt.Sprintf("w%d-%d", w, i%20), fmt.Sprint(i), fmt.Sprintf("zone=z%d", i%3))
				if err := s.Update(p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		if err := s.AddIndexers(cache.Indexers{"zone": labelIndex("zone")}); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, ok := s.GetIndexers()["zone"]; !ok {
		t.Fatal("the index added during writes is missing")
	}
	CheckIndexes(t, s)
}

// unnamed returns a cluster-scoped pod without a name: the default key
// function gives it the empty key. (A namespaced pod without a name has
// the key "ns/".)
func unnamed() interface{} { return newPod("", "", "1", "app=web") }

func testEmptyKey(t *testing.T, h *harness) {
	s := h.openPods(t)
	objs := seed(t, s)
	tombstone := cache.DeletedFinalStateUnknown{Key: "", Obj: unnamed()}
	good := store.Op{Type: store.OpPut, Object: newPod("ns", "new", "9", "app=web")}
	checkRefused(t, s, []refusal{
		{"Add", func() error { return s.Add(unnamed()) }, []string{"empty key", "add"}},
		{"Update", func() error { return s.Update(unnamed()) }, []string{"empty key", "update"}},
		{"Delete", func() error { return s.Delete(unnamed()) }, []string{"empty key", "delete"}},
		{"Delete tombstone", func() error { return s.Delete(tombstone) }, []string{"empty key", "delete"}},
		{"Replace", func() error { return s.Replace([]interface{}{newPod("ns", "r", "1"), unnamed()}, "99") }, []string{"empty key", "replace", "op 1 of 2 (put"}},
		{"Commit put", func() error {
			return s.Commit(t.Context(), store.Batch{ResourceVersion: "99", Ops: []store.Op{good, {Type: store.OpPut, Object: unnamed()}, good}})
		}, []string{"empty key", "commit", "op 1 of 3 (put"}},
		{"Commit delete", func() error {
			return s.Commit(t.Context(), store.Batch{ResourceVersion: "99", Ops: []store.Op{good, {Type: store.OpDelete, Object: unnamed()}}})
		}, []string{"empty key", "commit", "op 1 of 2 (delete"}},
		{"Commit delete tombstone", func() error {
			return s.Commit(t.Context(), store.Batch{ResourceVersion: "99", Ops: []store.Op{{Type: store.OpDelete, Object: tombstone}, good}})
		}, []string{"empty key", "commit", "op 0 of 2 (delete"}},
		{"Prepare", func() error {
			p, err := store.Prepare(s, store.Batch{ResourceVersion: "99", Ops: []store.Op{good, {Type: store.OpPut, Object: unnamed()}}})
			if err == nil {
				// Stores without store.BatchPreparer validate when committing.
				err = p.Commit(t.Context())
			}
			return err
		}, []string{"empty key", "op 1 of 2 (put"}},
	})
	if obj, ok, err := s.GetByKey(""); obj != nil || ok || err != nil {
		t.Errorf("GetByKey(\"\") = %v, %v, %v; want nil, false, nil", obj, ok, err)
	}
	if obj, ok, err := s.Get(unnamed()); obj != nil || ok || err != nil {
		t.Errorf("Get of an object whose key is \"\" = %v, %v, %v; want nil, false, nil", obj, ok, err)
	}
	checkContents(t, s, want(t, objs...))
	CheckIndexes(t, s)
}

func testEmptyKeyImport(t *testing.T, h *harness) {
	u := h.url(t)
	opts := podOptions(t, "pods")
	s := h.open(t, u, opts)
	objs := seed(t, s)
	// Closed: an import refuses a store open in this process.
	closeStore(t, s)
	d, err := export(t, u, "pods")
	if errors.Is(err, store.ErrInvalid) {
		t.Skipf("the backend cannot export this URL record by record: %v", err)
	}
	mustOK(t, "Export", err)
	if len(d.Records) == 0 {
		t.Fatal("Export of a seeded store returned no records")
	}
	// A valid record first, so that the refusal comes mid-stream, after
	// the backend has started writing.
	bad := d.Records[0]
	bad.Key = ""
	err = store.Import(t.Context(), u, d.Info, Records(d.Records[0], bad))
	wantErr(t, "Import of a record with an empty key", err, store.ErrInvalid, "empty key", "record 2", "import")
	h.checkSeeded(t, u, objs)
}

func testNoNameKey(t *testing.T, h *harness) {
	s := h.openPods(t)
	objs := seed(t, s)
	noName := newPod("ns", "", "1", "app=web")
	good := store.Op{Type: store.OpPut, Object: newPod("ns", "new", "9", "app=web")}
	says := []string{`"ns/"`}
	checkRefused(t, s, []refusal{
		{"Add", func() error { return s.Add(noName) }, says},
		{"Update", func() error { return s.Update(noName) }, says},
		{"Commit put", func() error {
			return s.Commit(t.Context(), store.Batch{ResourceVersion: "99", Ops: []store.Op{good, {Type: store.OpPut, Object: noName}}})
		}, says},
	})
	checkContents(t, s, want(t, objs...))
}
