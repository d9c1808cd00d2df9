package reflector

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/deltafifo"
)

// Both FIFOs of package deltafifo are Queues.
var (
	_ Queue = (*deltafifo.FIFO)(nil)
	_ Queue = (*deltafifo.DeltaFIFO)(nil)
	_ Queue = deltafifo.Queue(nil)
)

// TestRelistThroughFIFOTurnsGoneObjectsIntoTombstones runs the resume → 410 →
// relist path into the real in-order FIFO, whose KnownObjects is what an
// informer persisted: an object deleted while the process was down must come
// out as a DeletedFinalStateUnknown carrying the persisted object (DESIGN
// invariant 4), in the same batch as the relisted objects.
func TestRelistThroughFIFOTurnsGoneObjectsIntoTombstones(t *testing.T) {
	persisted := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, o := range []interface{}{cm("a", "90"), cm("gone", "95")} {
		if err := persisted.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	fifo := deltafifo.New(&deltafifo.Options{KnownObjects: persisted, EmitDeltaTypeReplaced: true})
	t.Cleanup(fifo.Close)

	n := newNotifier()
	lw := &fakeLW{n: n, minTimeout: DefaultMinWatchTimeout,
		lists: []listResult{
			{obj: cmList("150", "")},
			{obj: cmList("160", "", cm("a", "140"), cm("b", "155"))},
		},
		watches: []watchResult{{w: watcher(true, errEvent(expiredErr()))}},
	}
	off := false
	r, err := New(lw, fifo, &Options{ResumeFrom: "100", WatchList: &off,
		WatchErrorHandler: func(context.Context, *cache.Reflector, error) {}})

	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()

	popCtx, popCancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer popCancel()
	var b deltafifo.Batch
	if err := fifo.Pop(popCtx, func(_ context.Context, got deltafifo.Batch) error {
		b = got
		return nil
	}); err != nil {
		t.Fatalf("Pop: %v", err)
	}

	type delta struct {
		Type cache.DeltaType
		Key  string
		RV   string // of the object, or of the tombstone's Obj
	}
	var got []delta
	for _, d := range b.Deltas {
		switch o := d.Object.(type) {
		case cache.DeletedFinalStateUnknown:
			m, err := meta.Accessor(o.Obj)
			if err != nil {
				t.Fatalf("tombstone %q carries %T, want the persisted object", o.Key, o.Obj)
			}
			got = append(got, delta{d.Type, o.Key, m.GetResourceVersion()})
		default:
			m, err := meta.Accessor(o)
			if err != nil {
				t.Fatalf("delta object %T: %v", o, err)
			}
			got = append(got, delta{d.Type, m.GetNamespace() + "/" + m.GetName(), m.GetResourceVersion()})
		}
	}
	// The FIFO chooses the order inside a relist batch; compare by key.
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	want := []delta{
		{cache.Replaced, "ns/a", "140"},
		{cache.Replaced, "ns/b", "155"},
		{cache.Deleted, "ns/gone", "95"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("relist batch deltas (-want +got):\n%s", d)
	}
	if !b.Replace || b.ResourceVersion != "160" {
		t.Errorf("batch Replace=%v ResourceVersion=%q, want a Replace batch at 160", b.Replace, b.ResourceVersion)
	}
}
