package bolt

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/writeback"
)

// TestWritebackOnlyForDurableWrites checks which files writeback runs for
// during commits: those of durable stores, not those opened with durability=nosync
// (nothing waits for their pages), and a durable store's commits still
// work with it.
func TestWritebackOnlyForDurableWrites(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		durability store.Durability
		want       bool
	}{
		{store.DurabilitySync, writeback.Supported},
		{store.DurabilityNoSync, false},
	} {
		t.Run(string(tc.durability), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			s, err := Open(t.Context(), path, &store.Options{Name: "pods", Codec: codec, Durability: tc.durability})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			f, _, _ := files.Lookup(path)
			got := f.writeback != nil
			if got != tc.want {
				t.Errorf("file has a writeback handle: %v; want %v", got, tc.want)
			}
			if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: pod("ns", "p", "x", "2")}}, ResourceVersion: "2"}); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if _, ok, err := s.GetByKey("ns/p"); err != nil || !ok {
				t.Fatalf("GetByKey(ns/p) after the commit: found %v, %v", ok, err)
			}
		})
	}
}
