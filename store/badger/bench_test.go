package badger

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// Benchmarks run client-go's indexer in the same run (impl=client-go) and
// log the ratio, since absolute times on shared machines drift. Run e.g.
//
//	go test -run '^$' -bench . -benchtime 3x ./store/badger/
//	INFORMERDB_BENCH_PODS=100000 go test -run '^$' -bench 'Open' -benchtime 1x ./store/badger/

// benchPods is the number of Pods of the open and read benchmarks:
// $INFORMERDB_BENCH_PODS, default 10,000.
func benchPods(b *testing.B) int {
	if v := os.Getenv("INFORMERDB_BENCH_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("INFORMERDB_BENCH_PODS=%q: want a positive integer", v)
		}
		return n
	}
	return 10000
}

func benchOptions(b *testing.B, name string, cacheSize int) *store.Options {
	return &store.Options{Name: name, Codec: podCodec(b), Indexers: podIndexers(), CacheSize: cacheSize}
}

func newIndexer() cache.Indexer {
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, podIndexers())
}

// ratio records ns/op of the sub-benchmarks of one benchmark to log
// informerdb's time over client-go's.
type ratio map[string]float64

func (r ratio) record(b *testing.B, name string) {
	if b.N > 0 {
		r[name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	}
}

func (r ratio) log(b *testing.B, impl string) {
	if cg, ok := r["client-go"]; ok && cg > 0 {
		b.Logf("%s/client-go time ratio: %.2f", impl, r[impl]/cg)
	}
}

// BenchmarkCommit measures group-committed writes: 1,000 Pods per Commit,
// each round new keys interleaving with the earlier ones. client-go's
// indexer adds the same Pods in memory.
func BenchmarkCommit(b *testing.B) {
	const perCommit = 1000
	pods := make([]*corev1.Pod, perCommit)
	for i := range pods {
		pods[i] = newPod(i, "1", fmt.Sprintf("app-%d", i%20))
	}
	round := func(r int) []store.Op {
		ops := make([]store.Op, len(pods))
		for i, p := range pods {
			c := p.DeepCopy()
			c.Name = fmt.Sprintf("%s-%d", p.Name, r)
			ops[i] = store.Op{Type: store.OpPut, Object: c}
		}
		return ops
	}
	r := ratio{}
	for _, dur := range []store.Durability{store.DurabilitySync, store.DurabilityNoSync} {
		name := "badger-" + string(dur)
		b.Run("impl="+name, func(b *testing.B) {
			o := benchOptions(b, "pods", 0)
			o.Durability = dur
			s, err := Open(b.Context(), b.TempDir(), o)
			mustOK(b, "Open", err)
			defer s.Close()
			n := 0
			for b.Loop() {
				b.StopTimer()
				ops := round(n)
				b.StartTimer()
				mustOK(b, "Commit", s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(n)}))
				n++
			}
			b.ReportMetric(float64(perCommit*b.N)/b.Elapsed().Seconds(), "objects/s")
			r.record(b, name)
		})
	}
	b.Run("impl=client-go", func(b *testing.B) {
		idx := newIndexer()
		n := 0
		for b.Loop() {
			b.StopTimer()
			ops := round(n)
			b.StartTimer()
			for _, op := range ops {
				mustOK(b, "Add", idx.Add(op.Object))
			}
			n++
		}
		b.ReportMetric(float64(perCommit*b.N)/b.Elapsed().Seconds(), "objects/s")
		r.record(b, "client-go")
	})
	r.log(b, "badger-sync")
	r.log(b, "badger-nosync")
}

// fill writes n Pods into the store name in dir, 1,000 per commit. It
// writes through a bounded store so the process does not keep the Pods, and
// the memory measured afterwards is the open's.
func fill(b *testing.B, dir, name string, n int) []string {
	b.Helper()
	s, err := Open(b.Context(), dir, benchOptions(b, name, 1))
	mustOK(b, "Open", err)
	defer s.Close()
	keys := make([]string, 0, n)
	for start := 0; start < n; start += 1000 {
		ops := make([]store.Op, 0, 1000)
		for i := start; i < min(n, start+1000); i++ {
			p := newPod(i, "1", fmt.Sprintf("app-%d", i%50))
			ops = append(ops, store.Op{Type: store.OpPut, Object: p})
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
		mustOK(b, "Commit", s.Commit(b.Context(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(start)}))
	}
	return keys
}

// BenchmarkOpen measures a resume: open a store of n Pods and have them all
// readable. client-go's equivalent decodes the same protobuf and fills an
// indexer (what a relist costs once the bytes have arrived). It reports the
// heap in use, the process RSS and the directory size after the open.
func BenchmarkOpen(b *testing.B) {
	n := benchPods(b)
	dir := b.TempDir()
	keys := fill(b, dir, "pods", n)
	last := keys[len(keys)-1]
	r := ratio{}
	for _, tc := range []struct {
		name      string
		cacheSize int
	}{{"badger", 0}, {"badger-bounded", 1000}} {
		b.Run(fmt.Sprintf("impl=%s/pods=%d", tc.name, n), func(b *testing.B) {
			var s store.Store
			for b.Loop() {
				if s != nil {
					mustOK(b, "Close", s.Close())
				}
				var err error
				s, err = Open(b.Context(), dir, benchOptions(b, "pods", tc.cacheSize))
				mustOK(b, "Open", err)
				if _, ok, err := s.GetByKey(last); !ok || err != nil {
					b.Fatalf("GetByKey(%q) = %v, %v after open", last, ok, err)
				}
			}
			r.record(b, tc.name)
			reportMemory(b, dir)
			mustOK(b, "Close", s.Close())
		})
	}
	encoded := make([][]byte, n)
	for i := range encoded {
		var err error
		encoded[i], err = newPod(i, "1", fmt.Sprintf("app-%d", i%50)).Marshal()
		mustOK(b, "Marshal", err)
	}
	b.Run(fmt.Sprintf("impl=client-go/pods=%d", n), func(b *testing.B) {
		codec := podCodec(b)
		var idx cache.Indexer
		for b.Loop() {
			idx = newIndexer()
			list := make([]interface{}, len(encoded))
			for i, data := range encoded {
				obj, err := codec.Decode(data)
				mustOK(b, "Decode", err)
				list[i] = obj
			}
			mustOK(b, "Replace", idx.Replace(list, "1"))
		}
		r.record(b, "client-go")
		reportMemory(b, "")
		runtime.KeepAlive(idx)
	})
	r.log(b, "badger")
	r.log(b, "badger-bounded")
}

// BenchmarkModeSwitch measures what reopening a store in the other mode
// costs over reopening it in the same mode: each iteration opens the
// store of n Pods bounded (building its index entries from the value
// records), then in the default mode (dropping them), each from a store
// last written by the other mode. It reports the time of each open; the
// same-mode opens are BenchmarkOpen's.
func BenchmarkModeSwitch(b *testing.B) {
	n := benchPods(b)
	dir := b.TempDir()
	fill(b, dir, "pods", n)
	var build, drop float64
	for b.Loop() {
		for _, cacheSize := range []int{0, 1000} {
			start := time.Now()
			s, err := Open(b.Context(), dir, benchOptions(b, "pods", cacheSize))
			mustOK(b, "Open", err)
			d := time.Since(start).Seconds()
			if cacheSize > 0 {
				build += d
			} else {
				drop += d
			}
			mustOK(b, "Close", s.Close())
		}
	}
	b.ReportMetric(1000*drop/float64(b.N), "ms/default-open-dropping")
	b.ReportMetric(1000*build/float64(b.N), "ms/bounded-open-building")
}

// reportMemory reports the live heap (after a GC), the process RSS and, if
// dir is set, the directory's apparent size and its allocated blocks.
func reportMemory(b *testing.B, dir string) {
	b.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	if rss, ok := vmRSS(); ok {
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	}
	if dir != "" {
		b.ReportMetric(float64(dirSize(b, dir))/(1<<20), "disk-MiB")
		if out, err := exec.Command("du", "-sk", dir).Output(); err == nil {
			if kb, err := strconv.Atoi(strings.Fields(string(out))[0]); err == nil {
				b.ReportMetric(float64(kb)/1024, "du-MiB")
			}
		}
	}
}

// vmRSS reads the process's resident set size from /proc.
func vmRSS() (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// BenchmarkRead measures Get, ByIndex (one app label: n/50 Pods) and List on a
// default and a bounded (cache=1000) store against client-go's indexer
// holding the same Pods. Keys are drawn uniformly, so the bounded store
// mostly misses its cache: the worst case.
func BenchmarkRead(b *testing.B) {
	n := benchPods(b)
	dir := b.TempDir()
	keys := fill(b, dir, "pods", n)
	fill(b, dir, "pods-bounded", n)
	def, err := Open(b.Context(), dir, benchOptions(b, "pods", 0))
	mustOK(b, "Open", err)
	defer def.Close()
	bnd, err := Open(b.Context(), dir, benchOptions(b, "pods-bounded", 1000))
	mustOK(b, "Open", err)
	defer bnd.Close()
	idx := newIndexer()
	mustOK(b, "Replace", idx.Replace(def.List(), "1"))

	impls := []struct {
		name string
		s    cache.Indexer
	}{{"badger", def}, {"badger-bounded", bnd}, {"client-go", idx}}
	rg, ri := ratio{}, ratio{}
	for _, impl := range impls {
		b.Run("op=Get/impl="+impl.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				if _, ok, err := impl.s.GetByKey(keys[rng.IntN(len(keys))]); !ok || err != nil {
					b.Fatalf("GetByKey: %v %v", ok, err)
				}
			}
			rg.record(b, impl.name)
		})
	}
	for _, impl := range impls {
		b.Run("op=ByIndex/impl="+impl.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				objs, err := impl.s.ByIndex("app", fmt.Sprintf("app-%d", rng.IntN(50)))
				if err != nil || len(objs) == 0 {
					b.Fatalf("ByIndex: %d, %v", len(objs), err)
				}
			}
			ri.record(b, impl.name)
		})
	}
	rl := ratio{}
	for _, impl := range impls {
		b.Run("op=List/impl="+impl.name, func(b *testing.B) {
			for b.Loop() {
				if got := len(impl.s.List()); got != n {
					b.Fatalf("List = %d objects; want %d", got, n)
				}
			}
			rl.record(b, impl.name)
		})
	}
	b.Logf("Get:")
	rg.log(b, "badger")
	rg.log(b, "badger-bounded")
	b.Logf("ByIndex:")
	ri.log(b, "badger")
	ri.log(b, "badger-bounded")
	b.Logf("List:")
	rl.log(b, "badger")
	rl.log(b, "badger-bounded")
}

// BenchmarkBoundedHeap compares the live heap of a bounded store
// (cache=1000) after every Pod was read once with client-go's indexer
// holding the same Pods.
func BenchmarkBoundedHeap(b *testing.B) {
	n := benchPods(b)
	dir := b.TempDir()
	keys := fill(b, dir, "pods", n)
	heap := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapInuse) / (1 << 20)
	}
	var bndHeap, cgHeap float64
	b.Run("impl=badger-bounded", func(b *testing.B) {
		for b.Loop() {
			base := heap()
			s, err := Open(b.Context(), dir, benchOptions(b, "pods", 1000))
			mustOK(b, "Open", err)
			for _, k := range keys {
				if _, ok, err := s.GetByKey(k); !ok || err != nil {
					b.Fatalf("GetByKey: %v %v", ok, err)
				}
			}
			bndHeap = heap() - base
			mustOK(b, "Close", s.Close())
		}
		b.ReportMetric(bndHeap, "heap-MiB")
	})
	b.Run("impl=client-go", func(b *testing.B) {
		for b.Loop() {
			base := heap()
			idx := newIndexer()
			for i := range keys {
				mustOK(b, "Add", idx.Add(newPod(i, "1", fmt.Sprintf("app-%d", i%50))))
			}
			cgHeap = heap() - base
			runtime.KeepAlive(idx)
		}
		b.ReportMetric(cgHeap, "heap-MiB")
	})
	if cgHeap > 0 {
		b.Logf("bounded/client-go heap ratio: %.2f", bndHeap/cgHeap)
	}
}
