package storetest

import (
	"testing"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Codec/AnotherType", contract: "an object of another type than the codec's (what a transform may return): backends that encode objects refuse it with ErrInvalid wrapping indexer.ErrWrongType, naming the type the codec wants and the one given; the others keep it as given", fn: testAnotherType},
)

func testAnotherType(t *testing.T, h *harness) {
	// No index: index functions would refuse the string before the codec.
	s := h.open(t, h.url(t), &store.Options{Name: "pods", Codec: podCodec(t)})
	err := s.Commit(t.Context(), store.Batch{ResourceVersion: "5", Ops: []store.Op{{Type: store.OpPut, Key: "ns/a", Object: "a string"}}})
	if !h.b.Persistent {
		// memory:// and memdb:// keep objects without encoding them.
		mustOK(t, "Commit of a string", err)
		if got, ok, err := s.GetByKey("ns/a"); err != nil || !ok || got != "a string" {
			t.Errorf("GetByKey = %v, %v, %v; want the string as given", got, ok, err)
		}
		return
	}
	wantErr(t, "Commit of a string", err, store.ErrInvalid)
	wantErr(t, "Commit of a string", err, indexer.ErrWrongType, "got string", "want *k8s.io/api/core/v1.Pod")
	checkRV(t, s, "")
	if _, ok, _ := s.GetByKey("ns/a"); ok {
		t.Error("the refused object is stored")
	}
}
