package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// TestDeltaFIFOMatchesClientGo feeds the same random operations to this
// DeltaFIFO and to client-go's, each with its own known objects updated by
// its own pops, and requires the same pops: same deltas, same order, same
// isInInitialList, same HasSynced. Bookmarks are left out (client-go's
// DeltaFIFO has none), and so are the bookmark entries an empty relist
// queues here.
func TestDeltaFIFOMatchesClientGo(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			emit := seed%2 == 0
			kOurs, kTheirs := newKnown(), newKnown()
			ours := deltafifo.NewDeltaFIFO(deltafifo.Options{KnownObjects: kOurs, EmitDeltaTypeReplaced: emit})
			theirs := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: kTheirs, EmitDeltaTypeReplaced: emit})

			type popped struct {
				Deltas        cache.Deltas
				InInitialList bool
			}
			popOurs := func() (popped, bool) {
				for len(ours.ListKeys()) > 0 {
					var p popped
					must(t, ours.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
						p = popped{b.Deltas, b.InInitialList}
						kOurs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
						return nil
					}))
					if p.Deltas[0].Type != cache.Bookmark {
						return p, true
					}
				}
				return popped{}, false
			}
			popTheirs := func() (popped, error) {
				var p popped
				_, err := theirs.Pop(func(obj interface{}, initial bool) error {
					p = popped{obj.(cache.Deltas), initial}
					kTheirs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, deltafifo.Batch{Deltas: p.Deltas})
					return nil
				})
				return p, err
			}

			rv := 0
			var trace []string
			for i, o := range randomOps(rng, 300) {
				if o.kind == opBookmark {
					continue
				}
				trace = append(trace, o.String())
				rv++
				obj := cm(o.key, fmt.Sprint(rv), fmt.Sprintf("ev%d", i))
				var errOurs, errTheirs error
				switch o.kind {
				case opAdd:
					errOurs, errTheirs = ours.Add(obj), theirs.Add(obj)
				case opUpdate:
					errOurs, errTheirs = ours.Update(obj), theirs.Update(obj)
				case opDelete:
					errOurs, errTheirs = ours.Delete(obj), theirs.Delete(obj)
				case opReplace:
					var list []interface{}
					for _, name := range o.list {
						list = append(list, cm(name, fmt.Sprint(rv), fmt.Sprintf("ev%d", i)))
					}
					errOurs, errTheirs = ours.Replace(list, fmt.Sprint(rv)), theirs.Replace(list, fmt.Sprint(rv))
				case opResync:
					errOurs, errTheirs = ours.Resync(), theirs.Resync()
				case opPop:
					p, ok := popOurs()
					if !ok {
						continue // both empty, or the drain below tells
					}
					q, err := popTheirs()
					must(t, err)
					if d := cmp.Diff(q, p); d != "" {
						t.Fatalf("pop differs from client-go (-client-go +ours):\n%s\ntrace: %v", d, trace)
					}
				}
				if errOurs != nil || errTheirs != nil {
					t.Fatalf("%v: ours %v, client-go %v", o, errOurs, errTheirs)
				}
				if ours.HasSynced() != theirs.HasSynced() {
					t.Fatalf("after %v: HasSynced ours %v, client-go %v\ntrace: %v", o, ours.HasSynced(), theirs.HasSynced(), trace)
				}
			}

			ours.Close()
			theirs.Close()
			for {
				p, ok := popOurs()
				q, err := popTheirs()
				if !ok || errors.Is(err, cache.ErrFIFOClosed) {
					if ok || err == nil {
						t.Fatalf("drain: ours has more: %v, client-go has more: %v\ntrace: %v", ok, err == nil, trace)
					}
					break
				}
				must(t, err)
				if d := cmp.Diff(q, p); d != "" {
					t.Fatalf("drained pop differs from client-go (-client-go +ours):\n%s\ntrace: %v", d, trace)
				}
			}
		})
	}
}

// TestFIFOMatchesClientGoRealFIFO feeds the same random operations to this
// FIFO and to client-go's RealFIFO (non-atomic, its informer default), and
// requires the same stream of deltas. Each pop drains both queues, so that
// their known objects stay equal; the batching itself differs by design
// (RealFIFO closes a batch on a repeated key, this FIFO does not).
func TestFIFOMatchesClientGoRealFIFO(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			kOurs, kTheirs := newKnown(), newKnown()
			// RealFIFO always emits Replaced.
			ours := deltafifo.New(deltafifo.Options{KnownObjects: kOurs, EmitDeltaTypeReplaced: true, MaxBatch: 1 + int(seed%5)})
			theirs := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: kTheirs})

			drainBoth := func(trace []string) {
				var got, want cache.Deltas
				for ours.Len() > 0 {
					must(t, ours.Pop(t.Context(), func(_ context.Context, b deltafifo.Batch) error {
						kOurs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
						got = append(got, b.Deltas...)
						return nil
					}))
				}
				// RealFIFO cannot say how much it holds: pop up to a sentinel,
				// so that a queue holding less than ours fails, not hangs.
				sentinel := cm("sentinel", "", "sentinel")
				must(t, theirs.Add(sentinel))
				for done := false; !done; {
					_, err := theirs.Pop(func(obj interface{}, _ bool) error {
						ds := obj.(cache.Deltas)
						if ds[0].Object == sentinel {
							done = true
							return nil
						}
						kTheirs.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, deltafifo.Batch{Deltas: ds})
						want = append(want, ds...)
						return nil
					})
					must(t, err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("delta stream differs from client-go (-client-go +ours):\n%s\ntrace: %v", d, trace)
				}
			}

			rv := 0
			var trace []string
			for i, o := range randomOps(rng, 300) {
				if o.kind == opBookmark {
					continue
				}
				trace = append(trace, o.String())
				rv++
				obj := cm(o.key, fmt.Sprint(rv), fmt.Sprintf("ev%d", i))
				var errOurs, errTheirs error
				switch o.kind {
				case opAdd:
					errOurs, errTheirs = ours.Add(obj), theirs.Add(obj)
				case opUpdate:
					errOurs, errTheirs = ours.Update(obj), theirs.Update(obj)
				case opDelete:
					errOurs, errTheirs = ours.Delete(obj), theirs.Delete(obj)
				case opReplace:
					var list []interface{}
					for _, name := range o.list {
						list = append(list, cm(name, fmt.Sprint(rv), fmt.Sprintf("ev%d", i)))
					}
					errOurs, errTheirs = ours.Replace(list, fmt.Sprint(rv)), theirs.Replace(list, fmt.Sprint(rv))
				case opResync:
					errOurs, errTheirs = ours.Resync(), theirs.Resync()
				case opPop:
					drainBoth(trace)
				}
				if errOurs != nil || errTheirs != nil {
					t.Fatalf("%v: ours %v, client-go %v", o, errOurs, errTheirs)
				}
			}
			drainBoth(trace)
			theirs.Close()
			if _, err := theirs.Pop(func(interface{}, bool) error { return nil }); !errors.Is(err, cache.ErrFIFOClosed) {
				t.Fatalf("client-go's RealFIFO has deltas left that ours did not queue (Pop: %v)\ntrace: %v", err, trace)
			}
		})
	}
}
