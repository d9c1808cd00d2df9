package memdb_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/memdb"
)

// benchN is the number of objects the benchmarks keep: a mid-sized cluster's
// Pods.
const benchN = 10000

var benchPods, benchPodsV2 []*corev1.Pod

func pods() (v1, v2 []*corev1.Pod) {
	if benchPods == nil {
		for i := 0; i < benchN; i++ {
			benchPods = append(benchPods, realisticPod(i))
			p := realisticPod(i)
			p.ResourceVersion = fmt.Sprint(100000 + i)
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			benchPodsV2 = append(benchPodsV2, p)
		}
	}
	return benchPods, benchPodsV2
}

func benchIndexers() cache.Indexers {
	return cache.Indexers{
		indexer.NamespaceIndex: indexer.NamespaceIndexFunc,
		indexer.OwnerUIDIndex:  indexer.OwnerUIDIndexFunc,
		"app":                  indexer.LabelIndexFunc("app"),
	}
}

// impls are what every benchmark compares: this backend and client-go's
// indexer, in the same run, because absolute times on shared machines drift.
var impls = []struct {
	name string
	new  func(tb testing.TB) cache.Indexer
}{
	{"memdb", func(tb testing.TB) cache.Indexer {
		s, err := memdb.New(&store.Options{Indexers: benchIndexers()})
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}},
	{"client-go", func(testing.TB) cache.Indexer {
		return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, benchIndexers())
	}},
}

func closeIndexer(tb testing.TB, i cache.Indexer) {
	if s, ok := i.(store.Store); ok {
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
	}
}

func loaded(tb testing.TB, newIndexer func(testing.TB) cache.Indexer) cache.Indexer {
	i := newIndexer(tb)
	v1, _ := pods()
	for _, p := range v1 {
		if err := i.Add(p); err != nil {
			tb.Fatal(err)
		}
	}
	return i
}

// compare runs fn as sub-benchmarks impl=memdb and impl=client-go and logs
// how many times slower memdb was.
func compare(b *testing.B, fn func(b *testing.B, i cache.Indexer), fresh bool) {
	pods()
	nsPerOp := map[string]float64{}
	for _, impl := range impls {
		var shared cache.Indexer
		if !fresh {
			shared = loaded(b, impl.new)
		}
		b.Run("impl="+impl.name, func(b *testing.B) {
			i := shared
			if fresh {
				i = impl.new(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			fn(b, i)
			b.StopTimer()
			nsPerOp[impl.name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if fresh {
				closeIndexer(b, i)
			}
		})
		if shared != nil {
			closeIndexer(b, shared)
		}
	}
	if nsPerOp["client-go"] > 0 {
		b.Logf("time ratio memdb/client-go: %.2f", nsPerOp["memdb"]/nsPerOp["client-go"])
	}
}

func BenchmarkAdd(b *testing.B) {
	compare(b, func(b *testing.B, i cache.Indexer) {
		v1, _ := pods()
		for n := 0; n < b.N; n++ {
			if err := i.Add(v1[n%benchN]); err != nil {
				b.Fatal(err)
			}
		}
	}, true)
}

func BenchmarkUpdate(b *testing.B) {
	compare(b, func(b *testing.B, i cache.Indexer) {
		v1, v2 := pods()
		for n := 0; n < b.N; n++ {
			p := v2[n%benchN]
			if n/benchN%2 == 1 {
				p = v1[n%benchN]
			}
			if err := i.Update(p); err != nil {
				b.Fatal(err)
			}
		}
	}, false)
}

func BenchmarkGet(b *testing.B) {
	keys := make([]string, benchN)
	v1, _ := pods()
	for n, p := range v1 {
		keys[n] = p.Namespace + "/" + p.Name
	}
	compare(b, func(b *testing.B, i cache.Indexer) {
		for n := 0; n < b.N; n++ {
			if _, ok, err := i.GetByKey(keys[n%benchN]); !ok || err != nil {
				b.Fatalf("GetByKey(%q) = %v, %v", keys[n%benchN], ok, err)
			}
		}
	}, false)
}

// BenchmarkByIndex looks up one namespace's Pods (500 of the 10,000).
func BenchmarkByIndex(b *testing.B) {
	compare(b, func(b *testing.B, i cache.Indexer) {
		for n := 0; n < b.N; n++ {
			objs, err := i.ByIndex(indexer.NamespaceIndex, fmt.Sprintf("team-%02d", n%20))
			if err != nil || len(objs) != benchN/20 {
				b.Fatalf("ByIndex = %d objects, %v; want %d", len(objs), err, benchN/20)
			}
		}
	}, false)
}

func BenchmarkList(b *testing.B) {
	compare(b, func(b *testing.B, i cache.Indexer) {
		for n := 0; n < b.N; n++ {
			if objs := i.List(); len(objs) != benchN {
				b.Fatalf("List = %d objects; want %d", len(objs), benchN)
			}
		}
	}, false)
}

// TestBenchPodsAreRealistic pins what the benchmarks claim about their
// objects: 2-4 KiB each in protobuf, and deterministic.
func TestBenchPodsAreRealistic(t *testing.T) {
	for i := 0; i < benchN; i += 97 {
		data, err := realisticPod(i).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2048 || len(data) > 4096 {
			t.Errorf("realisticPod(%d) is %d bytes in protobuf; want 2-4 KiB", i, len(data))
		}
		again, err := realisticPod(i).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(data) {
			t.Errorf("realisticPod(%d) is not deterministic", i)
		}
	}
}

// BenchmarkCommit measures the informer's write path: batches of 100 Pod
// updates in one Commit (memdb) against 100 Updates (client-go, which has no
// batch). One op is one object.
func BenchmarkCommit(b *testing.B) {
	const batch = 100
	compare(b, func(b *testing.B, i cache.Indexer) {
		v1, v2 := pods()
		s, isStore := i.(store.Store)
		ops := make([]store.Op, 0, batch)
		for n := 0; n < b.N; n++ {
			p := v2[n%benchN]
			if n/benchN%2 == 1 {
				p = v1[n%benchN]
			}
			if !isStore {
				if err := i.Update(p); err != nil {
					b.Fatal(err)
				}
				continue
			}
			ops = append(ops, store.Op{Type: store.OpPut, Object: p})
			if len(ops) == batch || n == b.N-1 {
				if err := s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: p.ResourceVersion}); err != nil {
					b.Fatal(err)
				}
				ops = ops[:0]
			}
		}
	}, false)
}
