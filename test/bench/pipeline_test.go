package bench_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

// pipelineKeys is the number of distinct ConfigMaps the events update.
const pipelineKeys = 1000

var pipelinePayload = strings.Repeat("x", 1000)

func pipelineCM(i, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "cm-" + strconv.Itoa(i%pipelineKeys), ResourceVersion: strconv.Itoa(rv)},
		Data:       map[string]string{"payload": pipelinePayload},
	}
}

// pipelineLW lists pipelineKeys ConfigMaps at resourceVersion pipelineKeys,
// and its one watch relays the events sent on events.
func pipelineLW(events chan watch.Event, watching chan struct{}) *cache.ListWatch {
	var once atomic.Bool
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(pipelineKeys)}}
			for i := range pipelineKeys {
				list.Items = append(list.Items, *pipelineCM(i, i+1))
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				// Both informers then fall back to a paginated LIST.
				return nil, apierrors.NewBadRequest("pipelineLW: sendInitialEvents is not supported")
			}
			if once.Swap(true) {
				return nil, apierrors.NewServiceUnavailable("pipelineLW: one watch only")
			}
			close(watching)
			return watch.NewProxyWatcher(events), nil
		},
	}
}

// pipelineRate sends n MODIFIED events to the informer newInf makes, after
// it synced, and returns events per second until the handler saw the last.
// With timed, b's timer runs for exactly that span; otherwise it stays
// stopped, so a paired run does not count in ns/op.
func pipelineRate(b *testing.B, n int, timed bool, newInf func(lw *cache.ListWatch) (cache.SharedIndexInformer, error)) float64 {
	b.Helper()
	events, watching := make(chan watch.Event, 1024), make(chan struct{})
	inf, err := newInf(pipelineLW(events, watching))
	if err != nil {
		b.Fatal(err)
	}
	var seen atomic.Int64
	done := make(chan struct{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ interface{}) {
		if seen.Add(1) == int64(n) {
			close(done)
		}
	}}); err != nil {
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
	if !cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
		b.Fatal("informer did not sync")
	}
	<-watching
	if timed {
		b.StartTimer()
	}
	start := time.Now()
	go func() {
		for i := range n {
			select {
			case events <- watch.Event{Type: watch.Modified, Object: pipelineCM(i, pipelineKeys+1+i)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	return float64(n) / elapsed.Seconds()
}

func newClientGoInformer(lw *cache.ListWatch) (cache.SharedIndexInformer, error) {
	return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), nil
}

// BenchmarkPipeline measures steady-state events per second from watch
// event to handler through the whole pipeline, for every backend with its
// default options (durable commits for bolt; badger's default, no fsync),
// against client-go's SharedIndexInformer. Each backend's sub-benchmark
// runs client-go on the same number of events right after its own timed
// run and reports the paired ratio as x-client-go (above 1: informerdb is
// faster), so that the drift of a shared machine cancels out.
//
//	go test -run '^$' -bench BenchmarkPipeline -benchtime 20000x -count 3 ./test/bench/
func BenchmarkPipeline(b *testing.B) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		b.Fatal(err)
	}
	// client-go first: benchstat -col /impl compares against the first.
	b.Run("impl=client-go", func(b *testing.B) {
		b.StopTimer()
		b.ReportAllocs()
		b.ReportMetric(pipelineRate(b, b.N, true, newClientGoInformer), "events/s")
	})
	for _, be := range []struct{ name, url string }{
		{"memory", "memory://"},
		{"memdb", "memdb://"},
		{"bolt", "bolt://%s/cache.db"},
		{"badger", "badger://%s/badger"},
	} {
		b.Run("impl=informerdb-"+be.name, func(b *testing.B) {
			b.StopTimer()
			b.ReportAllocs()
			url := strings.Replace(be.url, "%s", filepath.ToSlash(b.TempDir()), 1)
			rate := pipelineRate(b, b.N, true, func(lw *cache.ListWatch) (cache.SharedIndexInformer, error) {
				s, err := store.Open(b.Context(), url, &store.Options{
					Name: "v1/configmaps", Codec: codec,
					Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
				})
				if err != nil {
					return nil, err
				}
				b.Cleanup(func() { _ = s.Close() })
				return informer.New(lw, &corev1.ConfigMap{}, s, informer.Options{})
			})
			clientGo := pipelineRate(b, b.N, false, newClientGoInformer)
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(rate/clientGo, "x-client-go")
		})
	}
}
