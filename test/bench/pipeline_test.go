package bench_test

import (
	"context"
	"os"
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

// hotKeys is the number of distinct ConfigMaps the events update in the
// hot-keys variant: each ConfigMap is updated many times, as status-heavy
// objects are, and a group commit writes each once. The other variant
// updates as many ConfigMaps as there are events, each once.
const hotKeys = 1000

var pipelinePayload = strings.Repeat("x", 1000)

func pipelineCM(i, keys, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "cm-" + strconv.Itoa(i%keys), ResourceVersion: strconv.Itoa(rv)},
		Data:       map[string]string{"payload": pipelinePayload},
	}
}

// pipelineLW lists keys ConfigMaps at resourceVersion keys, and its one
// watch relays the events sent on events.
func pipelineLW(keys int, events chan watch.Event, watching chan struct{}) *cache.ListWatch {
	var once atomic.Bool
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(keys)}}
			for i := range keys {
				list.Items = append(list.Items, *pipelineCM(i, keys, i+1))
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

// pipelineRate sends n MODIFIED events, updating keys ConfigMaps round
// robin, to the informer newInf makes, after it synced, and returns events
// per second until the handler saw the last.
// With timed, b's timer runs for exactly that span; otherwise it stays
// stopped, so a paired run does not count in ns/op.
func pipelineRate(b *testing.B, n, keys int, timed bool, newInf func(lw *cache.ListWatch) (cache.SharedIndexInformer, error)) float64 {
	b.Helper()
	events, watching := make(chan watch.Event, 1024), make(chan struct{})
	inf, err := newInf(pipelineLW(keys, events, watching))
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
			case events <- watch.Event{Type: watch.Modified, Object: pipelineCM(i, keys, keys+1+i)}:
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
// default options (durable commits for bolt and badger), against client-go's
// SharedIndexInformer. Each backend's sub-benchmark runs client-go on the
// same events right after its own timed run and reports the paired ratio as
// x-client-go (above 1: informerdb is faster), so that the drift of a shared
// machine cancels out.
//
// keys=1000 updates 1,000 ConfigMaps round robin (a group commit writes each
// key once however often it changed); keys=all updates b.N ConfigMaps once
// each, so every event is a write of its own.
//
//	go test -run '^$' -bench BenchmarkPipeline -benchtime 20000x -count 3 ./test/bench/
func BenchmarkPipeline(b *testing.B) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		b.Fatal(err)
	}
	for _, keys := range []string{"1000", "all"} {
		nkeys := func(b *testing.B) int {
			if keys == "all" {
				return b.N
			}
			return hotKeys
		}
		// client-go first: benchstat -col /impl compares against the first.
		b.Run("impl=client-go/keys="+keys, func(b *testing.B) {
			b.StopTimer()
			b.ReportAllocs()
			b.ReportMetric(pipelineRate(b, b.N, nkeys(b), true, newClientGoInformer), "events/s")
		})
		for _, be := range []struct{ name, url string }{
			{"memory", "memory://"},
			{"memdb", "memdb://"},
			{"bolt", "bolt://%s/cache.db"},
			{"badger", "badger://%s/badger"},
		} {
			b.Run("impl=informerdb-"+be.name+"/keys="+keys, func(b *testing.B) {
				b.StopTimer()
				b.ReportAllocs()
				url := strings.Replace(be.url, "%s", filepath.ToSlash(b.TempDir()), 1)
				rate := pipelineRate(b, b.N, nkeys(b), true, func(lw *cache.ListWatch) (cache.SharedIndexInformer, error) {
					s, err := store.Open(b.Context(), url, &store.Options{
						Name: "v1/configmaps", Codec: codec,
						Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
					})
					if err != nil {
						return nil, err
					}
					b.Cleanup(func() { _ = s.Close() })
					return informer.New(lw, &corev1.ConfigMap{}, s, informer.Options{MaxBatchSize: maxBatchSize(b)})
				})
				clientGo := pipelineRate(b, b.N, nkeys(b), false, newClientGoInformer)
				b.ReportMetric(rate, "events/s")
				b.ReportMetric(rate/clientGo, "x-client-go")
			})
		}
	}
}

// maxBatchSizeEnv overrides informer.Options.MaxBatchSize in
// BenchmarkPipeline, to measure other group sizes than the default.
const maxBatchSizeEnv = "INFORMERDB_BENCH_MAX_BATCH"

func maxBatchSize(b *testing.B) int {
	v := os.Getenv(maxBatchSizeEnv)
	if v == "" {
		return 0 // the default
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", maxBatchSizeEnv, v)
	}
	return n
}
