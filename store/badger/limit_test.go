package badger

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestMaxBatchOps checks that a Commit of MaxBatchOps operations, each as
// costly for badger's transaction limits as the estimate allows (objects
// just under the value-log threshold, every index value changed), is one
// badger transaction and not a rewrite of the store as a new generation,
// in both modes and for several index counts; and that a few times more
// is not (so the check can fail).
func TestMaxBatchOps(t *testing.T) {
	for _, nindexes := range []int{0, 1, 4, 12} {
		for _, cacheSize := range []int{0, 10} {
			t.Run(fmt.Sprintf("indexes=%d/cache=%d", nindexes, cacheSize), func(t *testing.T) {
				ix := cache.Indexers{}
				for i := range nindexes {
					ix["l"+strconv.Itoa(i)] = indexer.LabelIndexFunc("l" + strconv.Itoa(i))
				}
				s, err := Open(t.Context(), t.TempDir(), &store.Options{Name: "pods", Codec: podCodec(t), Indexers: ix, CacheSize: cacheSize})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				lim, ok := s.(store.BatchLimiter)
				if !ok {
					t.Fatalf("%T does not implement store.BatchLimiter", s)
				}
				n := lim.MaxBatchOps()
				if n < 100 {
					t.Fatalf("MaxBatchOps = %d with %d indexes: too small to be useful", n, nindexes)
				}
				sp := spaceOf(t, s)
				codec := podCodec(t)
				// objects of round r: every index value depends on r, so
				// an update moves every index entry.
				objects := func(first, count, r int) []store.Op {
					ops := make([]store.Op, count)
					for i := range ops {
						p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
							Namespace: "ns", Name: fmt.Sprintf("pod-%07d", first+i),
							Labels: map[string]string{}, Annotations: map[string]string{"pad": ""},
						}}
						for j := range nindexes {
							p.Labels["l"+strconv.Itoa(j)] = fmt.Sprintf("%d-%d", r, i%50)
						}
						data, err := codec.Encode(p)
						if err != nil {
							t.Fatal(err)
						}
						pad := valueThreshold - len(data) - 8
						if pad < 0 {
							t.Fatalf("a Pod with %d labels encodes to %d bytes, past the value-log threshold (%d): not the worst case", nindexes, len(data), valueThreshold)
						}
						p.Annotations["pad"] = strings.Repeat("x", pad)
						ops[i] = store.Op{Type: store.OpPut, Object: p}
					}
					return ops
				}
				gen := func() []byte { k, _, _ := sp.snapshot(); return bytes.Clone(k.gen) }
				before := gen()
				for r, ops := range [][]store.Op{objects(0, n, 0), objects(0, n, 1)} {
					if err := s.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(r + 1)}); err != nil {
						t.Fatal(err)
					}
					if g := gen(); !bytes.Equal(g, before) {
						t.Fatalf("commit %d of MaxBatchOps = %d operations was written as a new generation", r, n)
					}
				}
				if err := s.Commit(t.Context(), store.Batch{Ops: objects(0, 4*n, 2), ResourceVersion: "3"}); err != nil {
					t.Fatal(err)
				}
				if g := gen(); bytes.Equal(g, before) {
					t.Errorf("a commit of 4 x MaxBatchOps = %d operations fit one transaction: the estimate is far too low", 4*n)
				}
			})
		}
	}
}
