package deltafifo_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// Both queues are stores client-go's own Reflector can feed, bookmarks
// included, as in the seed walkthrough (a Reflector feeding a DeltaFIFO).
var (
	_ cache.ReflectorStore         = (*deltafifo.FIFO)(nil)
	_ cache.ReflectorStore         = (*deltafifo.DeltaFIFO)(nil)
	_ cache.ReflectorBookmarkStore = (*deltafifo.FIFO)(nil)
	_ cache.ReflectorBookmarkStore = (*deltafifo.DeltaFIFO)(nil)
	_ cache.KeyListerGetter        = (*deltafifo.DeltaFIFO)(nil)
)

// noWatchList makes client-go's Reflector list then watch, as it does
// against servers without streaming lists: the fake watch sends no initial
// events.
type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestClientGoReflectorFeedsQueues(t *testing.T) {
	a10, b10 := cm("a", "5", "a1"), cm("b", "6", "b1")
	c11, a12, b13 := cm("c", "11", "c1"), cm("a", "12", "a2"), cm("b", "13", "b1")
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			k := newKnown()
			q := impl.new(deltafifo.Options{KnownObjects: k, EmitDeltaTypeReplaced: true})
			fw := watch.NewFakeWithChanSize(8, false)
			lw := noWatchList{&cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					return &v1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []v1.ConfigMap{*a10, *b10}}, nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil },
			}}
			r := cache.NewReflector(lw, &v1.ConfigMap{}, q, 0)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.RunWithContext(ctx)
			}()
			fw.Add(c11)
			fw.Modify(a12)
			fw.Delete(b13)
			fw.Action(watch.Bookmark, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "14"}})

			// The queue is popped while the Reflector writes, so a Pop may
			// wait for it; the watchdog turns a resume point 14 that never
			// comes into a failure instead of a hang.
			popCtx := watchdog(t)
			var batches []deltafifo.Batch
			for len(batches) == 0 || batches[len(batches)-1].ResourceVersion != "14" {
				err := q.Pop(popCtx, func(_ context.Context, b deltafifo.Batch) error {
					k.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
					batches = append(batches, b)
					return nil
				})
				if err != nil {
					cancel()
					<-done
					t.Fatalf("waiting for the batch with resume point 14: %v; batches so far: %+v", err, batches)
				}
			}
			cancel()
			<-done
			// A DeltaFIFO may report 14 before its bookmark entry pops: the
			// bookmark holds nothing back. Hand out what is left.
			for _, b := range drain(t, q) {
				k.apply(t, cache.DeletionHandlingMetaNamespaceKeyFunc, b)
				batches = append(batches, b)
			}

			// Batch boundaries depend on timing; per-key order does not.
			perKey := map[string]cache.Deltas{}
			for _, b := range batches {
				for _, dl := range b.Deltas {
					key := "bookmark"
					if dl.Type != cache.Bookmark {
						key, _ = cache.DeletionHandlingMetaNamespaceKeyFunc(dl.Object)
					}
					perKey[key] = append(perKey[key], dl)
				}
			}
			// a10 and b10 reach the queue as copies of the list items.
			diff(t, "deltas per key", map[string]cache.Deltas{
				"ns/a":     deltas(d(cache.Replaced, a10), d(cache.Updated, a12)),
				"ns/b":     deltas(d(cache.Replaced, b10), d(cache.Deleted, b13)),
				"ns/c":     deltas(d(cache.Added, c11)),
				"bookmark": deltas(d(cache.Bookmark, cache.BookmarkInfo{ResourceVersion: "14"})),
			}, perKey)
			diff(t, "known keys", []string{"ns/a", "ns/c"}, k.ListKeys())
			diff(t, "HasSynced", true, q.HasSynced())
		})
	}
}
