package informer

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store/memory"
)

// benchKeys is the number of distinct ConfigMaps the benchmark updates.
const benchKeys = 1000

// benchLW lists benchKeys ConfigMaps at resourceVersion benchKeys and hands
// every watch the events the benchmark sends on events.
type benchLW struct {
	events   chan watch.Event
	watching chan struct{} // closed by the first watch
	once     sync.Once
}

func newBenchLW() *benchLW {
	return &benchLW{events: make(chan watch.Event, 1024), watching: make(chan struct{})}
}

func benchCM(i, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "bench", Name: "cm-" + strconv.Itoa(i%benchKeys), ResourceVersion: strconv.Itoa(rv),
	}}
}

func (l *benchLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *benchLW) ListWithContext(_ context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(benchKeys)}}
	for i := 0; i < benchKeys; i++ {
		list.Items = append(list.Items, *benchCM(i, i+1))
	}
	return list, nil
}

func (l *benchLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *benchLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		// Both informers then fall back to a paginated LIST.
		return nil, apierrors.NewBadRequest("benchLW: sendInitialEvents is not supported")
	}
	w := &benchWatcher{out: make(chan watch.Event), done: make(chan struct{})}
	go w.pump(ctx, l.events)
	l.once.Do(func() { close(l.watching) })
	return w, nil
}

type benchWatcher struct {
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func (w *benchWatcher) pump(ctx context.Context, in <-chan watch.Event) {
	defer close(w.out)
	for {
		select {
		case e := <-in:
			select {
			case w.out <- e:
			case <-w.done:
				return
			case <-ctx.Done():
				return
			}
		case <-w.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (w *benchWatcher) Stop()                          { w.once.Do(func() { close(w.done) }) }
func (w *benchWatcher) ResultChan() <-chan watch.Event { return w.out }

// countingHandler closes done once it has seen want updates.
type countingHandler struct {
	seen atomic.Int64
	want int64
	done chan struct{}
}

func (h *countingHandler) OnAdd(interface{}, bool) {}
func (h *countingHandler) OnDelete(interface{})    {}
func (h *countingHandler) OnUpdate(_, _ interface{}) {
	if h.seen.Add(1) == h.want {
		close(h.done)
	}
}

// benchPipeline measures one watch event's way to a handler: b.N MODIFIED
// events are sent after the informer synced; the clock stops when the
// handler has seen the last one.
func benchPipeline(b *testing.B, newInf func(lw *benchLW) (cache.SharedIndexInformer, error)) float64 {
	lw := newBenchLW()
	inf, err := newInf(lw)
	if err != nil {
		b.Fatal(err)
	}
	h := &countingHandler{want: int64(b.N), done: make(chan struct{})}
	if _, err := inf.AddEventHandler(h); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("informer did not sync")
	}
	<-lw.watching
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() {
		for i := 0; i < b.N; i++ {
			select {
			case lw.events <- watch.Event{Type: watch.Modified, Object: benchCM(i, benchKeys+1+i)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	<-h.done
	elapsed := time.Since(start)
	b.StopTimer()
	perSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "events/s")
	return perSec
}

// BenchmarkPipeline compares informerdb with the memory backend against
// client-go's SharedIndexInformer in the same run. client-go runs first; each
// informerdb sub-benchmark then also reports its throughput relative to it
// as "x-client-go" (above 1 means informerdb is faster).
//
//	go test -run '^$' -bench BenchmarkPipeline -benchtime 200000x ./informer/
func BenchmarkPipeline(b *testing.B) {
	var clientGo float64
	b.Run("impl=client-go", func(b *testing.B) {
		clientGo = benchPipeline(b, func(lw *benchLW) (cache.SharedIndexInformer, error) {
			return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}), nil
		})
	})
	for _, v := range []struct {
		name  string
		delay time.Duration
	}{
		{"impl=informerdb", 0},                    // default group commit delay
		{"impl=informerdb-nodelay", NoBatchDelay}, // commit every pop
	} {
		b.Run(v.name, func(b *testing.B) {
			rate := benchPipeline(b, func(lw *benchLW) (cache.SharedIndexInformer, error) {
				s, err := memory.New(nil)
				if err != nil {
					return nil, err
				}
				return New(lw, &corev1.ConfigMap{}, s, Options{MaxBatchDelay: v.delay})
			})
			if clientGo > 0 {
				b.ReportMetric(rate/clientGo, "x-client-go")
			}
		})
	}
}
