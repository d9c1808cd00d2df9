package memdb_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// TestRandomOpsAgainstClientGo applies a deterministic random sequence of
// writes (Add, Update, Delete, Replace, Commit batches touching a key more
// than once, AddIndexers) to a memdb store and to client-go's indexer, and
// compares every read after each step.
func TestRandomOpsAgainstClientGo(t *testing.T) {
	const steps, keys = 400, 25
	rng := rand.New(rand.NewPCG(1, 2))
	s := open(t, testIndexers())
	ref := cache.NewIndexer(cache.MetaNamespaceKeyFunc, testIndexers())
	rv := 0
	randomPod := func() *corev1.Pod {
		rv++
		var labels []string
		if app := rng.IntN(4); app < 3 {
			labels = append(labels, "app="+string(rune('a'+app)))
		}
		if n := rng.IntN(4); n > 0 {
			tags := make([]string, n)
			for i := range tags {
				tags[i] = "t" + strconv.Itoa(rng.IntN(5)) // repeats happen
			}
			labels = append(labels, "tags="+strings.Join(tags, ","))
		}
		if rng.IntN(3) == 0 {
			labels = append(labels, "extra=x"+strconv.Itoa(rng.IntN(3)))
		}
		k := rng.IntN(keys)
		return newPod("ns"+strconv.Itoa(k%3), "p"+strconv.Itoa(k), strconv.Itoa(rv), labels...)
	}
	var probes []interface{}
	for i := 0; i < 4; i++ {
		probes = append(probes, randomPod())
	}
	added := 0
	for step := 0; step < steps; step++ {
		var desc string
		var do func(cache.Indexer) error
		switch r := rng.IntN(20); {
		case r < 8:
			p := randomPod()
			desc = "add " + p.Name
			do = func(i cache.Indexer) error { return i.Add(p) }
		case r < 11:
			p := randomPod()
			desc = "delete " + p.Name
			do = func(i cache.Indexer) error { return i.Delete(p) }
		case r < 12:
			list := make([]interface{}, rng.IntN(keys))
			for j := range list {
				list[j] = randomPod()
			}
			desc = fmt.Sprintf("replace with %d", len(list))
			do = func(i cache.Indexer) error { return i.Replace(list, strconv.Itoa(rv)) }
		case r < 13 && added < 3:
			name := "l" + strconv.Itoa(added)
			added++
			desc = "add indexer " + name
			do = func(i cache.Indexer) error {
				return i.AddIndexers(cache.Indexers{name: labelIndexFunc("extra")})
			}
		default:
			ops := make([]store.Op, 1+rng.IntN(6))
			for j := range ops {
				ops[j] = store.Op{Type: store.OpPut, Object: randomPod()}
				if rng.IntN(3) == 0 {
					ops[j].Type = store.OpDelete
				}
			}
			desc = fmt.Sprintf("commit of %d", len(ops))
			do = func(i cache.Indexer) error {
				st, ok := i.(store.Store)
				if ok {
					return st.Commit(t.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(rv)})
				}
				for _, op := range ops {
					var err error
					if op.Type == store.OpPut {
						err = i.Update(op.Object)
					} else {
						err = i.Delete(op.Object)
					}
					if err != nil {
						return err
					}
				}
				return nil
			}
		}
		if err := do(ref); err != nil {
			t.Fatalf("step %d (%s): client-go: %v", step, desc, err)
		}
		if err := do(s); err != nil {
			t.Fatalf("step %d (%s): memdb: %v", step, desc, err)
		}
		compareWithClientGo(t, s, ref, probes)
		if t.Failed() {
			t.Fatalf("step %d (%s) made memdb and client-go differ", step, desc)
		}
	}
}
