package informer

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
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

// benchPipeline measures one watch event's way to a handler: n MODIFIED
// events are sent after the informer synced, and the time runs until the
// handler has seen the last one. It returns events per second. With timed,
// b's timer covers exactly that span; otherwise b's timer is left stopped.
func benchPipeline(b *testing.B, n int, timed bool, newInf func(b *testing.B, lw *benchLW) (cache.SharedIndexInformer, error)) float64 {
	lw := newBenchLW()
	inf, err := newInf(b, lw)
	if err != nil {
		b.Fatal(err)
	}
	h := &countingHandler{want: int64(n), done: make(chan struct{})}
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
	if timed {
		// Started as well: a run before this one may have stopped it.
		b.ResetTimer()
		b.StartTimer()
	}
	start := time.Now()
	go func() {
		for i := 0; i < n; i++ {
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
	return float64(n) / elapsed.Seconds()
}

func newClientGo(_ *testing.B, lw *benchLW) (cache.SharedIndexInformer, error) {
	return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}), nil
}

// BenchmarkPipeline measures events per second from watch event to handler
// through the whole pipeline, for client-go's SharedIndexInformer and for
// informerdb (memory backend with and without group commit, and bolt with
// durable commits). Each informerdb sub-benchmark also runs client-go on the
// same number of events right before and right after its timed run and
// reports client-go's rate and the paired ratio as "x-client-go" (above 1
// means informerdb is faster), so that the drift of a shared machine cancels
// out.
//
//	go test -run '^$' -bench BenchmarkPipeline -benchtime 100000x -count 5 ./informer/
func BenchmarkPipeline(b *testing.B) {
	b.Run("impl=client-go", func(b *testing.B) {
		b.ReportAllocs()
		b.ReportMetric(benchPipeline(b, b.N, true, newClientGo), "events/s")
	})
	for _, v := range []struct {
		name    string
		scheme  string // "" for memory.New
		delay   time.Duration
		metrics bool // Options.Metrics on a fresh registry
		encrypt bool // AES-256-GCM codec (bolt only)
	}{
		{name: "impl=informerdb", scheme: "", delay: 0},                    // default group commit delay
		{name: "impl=informerdb-nodelay", scheme: "", delay: NoBatchDelay}, // commit every pop
		{name: "impl=informerdb-metrics", scheme: "", delay: 0, metrics: true},
		{name: "impl=informerdb-bolt", scheme: "bolt", delay: 0}, // durable commits (fsync), grouped
		{name: "impl=informerdb-bolt-encrypted", scheme: "bolt", delay: 0, encrypt: true},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			// client-go's run before informerdb's and after it: each run
			// inherits the heap of the one before it, which favoured the
			// second (see test/bench's bracket).
			before := benchPipeline(b, b.N, false, newClientGo)
			var s store.Store
			rate := benchPipeline(b, b.N, true, func(b *testing.B, lw *benchLW) (cache.SharedIndexInformer, error) {
				var err error
				if v.scheme == "" {
					s, err = memory.New(nil)
				} else {
					var codec store.Codec
					codec, cerr := indexer.NewCodec(&corev1.ConfigMap{})
					if cerr != nil {
						return nil, cerr
					}
					if v.encrypt {
						key, err := indexer.NewEncryptionKey(make([]byte, indexer.KeySize))
						if err != nil {
							return nil, err
						}
						ring, err := indexer.NewKeyRing(key)
						if err != nil {
							return nil, err
						}
						if codec, err = indexer.NewEncryptedCodec(codec, ring); err != nil {
							return nil, err
						}
					}
					s, err = store.Open(b.Context(), v.scheme+"://"+filepath.Join(b.TempDir(), "db"), &store.Options{Codec: codec})
				}
				if err != nil {
					return nil, err
				}
				b.Cleanup(func() { _ = s.Close() })
				// Quiet: the cold start's "Listing" line would land inside
				// the benchmark's output line.
				quiet := logr.Discard()
				o := Options{MaxBatchDelay: v.delay, Logger: &quiet}
				if v.metrics {
					m, err := NewMetrics(prometheus.NewRegistry())
					if err != nil {
						return nil, err
					}
					o.Metrics = m
				}
				return New(lw, &corev1.ConfigMap{}, s, &o)
			})
			// Closed first, so that nothing of the store runs during
			// client-go's run.
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			after := benchPipeline(b, b.N, false, newClientGo)
			clientGo := 2 / (1/before + 1/after) // the rate of their mean time
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(clientGo, "client-go-events/s")
			b.ReportMetric(rate/clientGo, "x-client-go")
		})
	}
}
