package storetest

import (
	"errors"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Keys/EmptyRefused", contract: "Store: a write or Commit op whose key is \"\" fails with ErrInvalid saying \"empty key\" (a batch's error names the op by position and type), deletes included, and leaves the store unchanged; Get and GetByKey of \"\" find nothing without error, as in client-go", fn: testEmptyKey},
	rule{name: "Keys/NamespaceWithoutNameRefused", contract: "Store: a write or Commit op of an object with a namespace and no name (key \"ns/\", no object the API server serves) fails with ErrInvalid naming the key, and leaves the store unchanged", fn: testNoNameKey},
	rule{name: "Keys/EmptyRefusedByImport", persistent: true, contract: "store.Import: a record with an empty key fails the import with ErrInvalid saying \"empty key\" and naming the record, and the store keeps its previous contents", fn: testEmptyKeyImport},
)

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
