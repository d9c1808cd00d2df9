package deltafifo_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// The benchmarks run client-go's equivalent in the same function, as
// sub-benchmarks impl=informerdb and impl=client-go, so that
//
//	go test -run '^$' -bench . -count 10 ./deltafifo/ > new.txt
//	benchstat -col /impl new.txt
//
// reports the ratio on the same machine in the same run. One op is one
// event: added, then popped (in chunks of benchChunk distinct keys, so that
// client-go's RealFIFO.PopBatch also hands out full batches).

const benchChunk = 1000

func benchObjects() []*v1.ConfigMap {
	objs := make([]*v1.ConfigMap, benchChunk)
	for i := range objs {
		objs[i] = cm(fmt.Sprintf("cm-%d", i), fmt.Sprint(i+1), "v")
	}
	return objs
}

// benchAddPop adds b.N events in chunks and pops each chunk with pop, which
// returns the number of deltas it consumed.
func benchAddPop(b *testing.B, add func(interface{}) error, pop func() int) {
	objs := benchObjects()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(benchChunk, b.N-done)
		for i := range n {
			if err := add(objs[i]); err != nil {
				b.Fatal(err)
			}
		}
		for left := n; left > 0; {
			left -= pop()
		}
		done += n
	}
}

func BenchmarkFIFOAddPop(b *testing.B) {
	b.Run("impl=informerdb", func(b *testing.B) {
		q := deltafifo.New(&deltafifo.Options{KnownObjects: cache.NewStore(cache.MetaNamespaceKeyFunc)})
		ctx := context.Background()
		benchAddPop(b, q.Add, func() int {
			var n int
			if err := q.Pop(ctx, func(_ context.Context, batch deltafifo.Batch) error {
				n = len(batch.Deltas)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			return n
		})
	})
	b.Run("impl=client-go", func(b *testing.B) {
		q := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: cache.NewStore(cache.MetaNamespaceKeyFunc)})
		benchAddPop(b, q.Add, func() int {
			var n int
			if err := q.PopBatch(
				func(deltas []cache.Delta, _ bool) error { n = len(deltas); return nil },
				func(interface{}, bool) error { n = 1; return nil },
			); err != nil {
				b.Fatal(err)
			}
			return n
		})
	})
}

func BenchmarkDeltaFIFOAddPop(b *testing.B) {
	b.Run("impl=informerdb", func(b *testing.B) {
		q := deltafifo.NewDeltaFIFO(&deltafifo.Options{KnownObjects: cache.NewStore(cache.MetaNamespaceKeyFunc)})
		ctx := context.Background()
		benchAddPop(b, q.Add, func() int {
			var n int
			if err := q.Pop(ctx, func(_ context.Context, batch deltafifo.Batch) error {
				n = len(batch.Deltas)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			return n
		})
	})
	b.Run("impl=client-go", func(b *testing.B) {
		q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: cache.NewStore(cache.MetaNamespaceKeyFunc)})
		benchAddPop(b, q.Add, func() int {
			var n int
			if _, err := q.Pop(func(obj interface{}, _ bool) error {
				n = len(obj.(cache.Deltas))
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			return n
		})
	})
}

// benchRelist measures one relist of n objects against n known objects, half
// of which are gone (tombstones), popped until empty. One op is one relist.
func benchRelist(b *testing.B, replace func(list []interface{}) error, popAll func()) {
	const n = 10000
	list := make([]interface{}, n)
	for i := range list {
		list[i] = cm(fmt.Sprintf("cm-%d", i+n/2), fmt.Sprint(i+1), "v")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := replace(list); err != nil {
			b.Fatal(err)
		}
		popAll()
	}
}

func relistKnown() cache.Store {
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for i := range 10000 {
		if err := s.Add(cm(fmt.Sprintf("cm-%d", i), "1", "v")); err != nil {
			panic(err)
		}
	}
	return s
}

func BenchmarkFIFORelist(b *testing.B) {
	b.Run("impl=informerdb", func(b *testing.B) {
		q := deltafifo.New(&deltafifo.Options{KnownObjects: relistKnown(), EmitDeltaTypeReplaced: true})
		ctx := context.Background()
		benchRelist(b, func(l []interface{}) error { return q.Replace(l, "100") }, func() {
			for q.Len() > 0 {
				if err := q.Pop(ctx, func(context.Context, deltafifo.Batch) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("impl=client-go", func(b *testing.B) {
		q := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: relistKnown()})
		benchRelist(b, func(l []interface{}) error { return q.Replace(l, "100") }, func() {
			// RealFIFO has no length; its relist queues n + n/2 deltas.
			for left := 15000; left > 0; {
				if err := q.PopBatch(func(d []cache.Delta, _ bool) error { left -= len(d); return nil },
					func(interface{}, bool) error { left--; return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

func BenchmarkDeltaFIFORelist(b *testing.B) {
	b.Run("impl=informerdb", func(b *testing.B) {
		q := deltafifo.NewDeltaFIFO(&deltafifo.Options{KnownObjects: relistKnown(), EmitDeltaTypeReplaced: true})
		ctx := context.Background()
		benchRelist(b, func(l []interface{}) error { return q.Replace(l, "100") }, func() {
			for q.Len() > 0 {
				if err := q.Pop(ctx, func(context.Context, deltafifo.Batch) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("impl=client-go", func(b *testing.B) {
		q := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: relistKnown(), EmitDeltaTypeReplaced: true})
		benchRelist(b, func(l []interface{}) error { return q.Replace(l, "100") }, func() {
			for range 15000 {
				if _, err := q.Pop(func(interface{}, bool) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
