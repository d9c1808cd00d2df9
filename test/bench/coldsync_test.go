package bench_test

import (
	"context"
	"strconv"
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
)

// BenchmarkColdSync measures how long an informer takes from Run to
// HasSynced when its LIST returns b.N ConfigMaps of about 1 KiB, which it
// must all write:
//
//   - start=cold: the store is empty, as at a controller's first start;
//   - start=expired: the store holds b.N older versions of the same
//     ConfigMaps, and the watch from its resume point gets 410 Gone (an API
//     server restarted while the controller was down), so the informer
//     relists and replaces every object;
//   - start=expired-1pct: the same, but the store holds the list's version
//     of 99% of the objects, as after a short downtime: the relist writes
//     the 1% that changed.
//
// Each backend's sub-benchmark runs client-go's cold start on the same list
// right before and right after its own timed run (bracket) and reports the
// paired ratio as x-client-go (above 1: informerdb is faster). The list is
// built before the timer starts and handed over decoded, as
// BenchmarkPipeline's events are: what is timed is the informers' own work,
// for informerdb the relist's one atomic commit (DESIGN invariant 2) with
// its fsyncs.
//
//	go test -run '^$' -bench BenchmarkColdSync -benchtime 100000x -count 5 ./test/bench/
func BenchmarkColdSync(b *testing.B) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=client-go/start=cold", func(b *testing.B) {
		b.StopTimer()
		b.ReportMetric(coldSyncRate(b, true, newClientGoInformer), "objects/s")
	})
	// changedEvery: every how many stored objects the list changes (0: the
	// store starts empty).
	starts := []struct {
		name         string
		changedEvery int
	}{{"cold", 0}, {"expired", 1}, {"expired-1pct", 100}}
	for _, be := range pipelineBackends {
		for _, start := range starts {
			b.Run("impl=informerdb-"+be.name+"/start="+start.name, func(b *testing.B) {
				b.StopTimer()
				rate, clientGo := bracket(func() float64 { return coldSyncInformerDB(b, be.url, codec, start.changedEvery) }, func() float64 {
					return coldSyncRate(b, false, newClientGoInformer)
				})
				reportPaired(b, rate, clientGo, "objects/s")
			})
		}
	}
}

// coldSyncInformerDB is BenchmarkColdSync's timed run of an informer over
// the backend of url whose store holds, if changedEvery > 0, the list's
// objects at older versions for every changedEvery-th one (see
// BenchmarkColdSync). It returns objects per second.
func coldSyncInformerDB(b *testing.B, url string, codec store.Codec, changedEvery int) float64 {
	var s store.Store
	rate := coldSyncRate(b, true, func(lw *cache.ListWatch) (cache.SharedIndexInformer, error) {
		var err error
		if s, err = openPipelineStore(b, url, codec); err != nil {
			return nil, err
		}
		if changedEvery > 0 {
			// The list's versions (see coldSyncRate), but for the objects
			// it changes, stored at older ones.
			old := make([]interface{}, b.N)
			for i := range old {
				rv := b.N + 1 + i
				if i%changedEvery == 0 {
					rv = i + 1
				}
				old[i] = pipelineCM(i, b.N, rv)
			}
			if err := s.Replace(old, strconv.Itoa(b.N)); err != nil {
				return nil, err
			}
		}
		return informer.New(lw, &corev1.ConfigMap{}, s, nil)
	})
	// What the store still does after the sync (badger deletes the replaced
	// generation) must not slow client-go's run: Close waits for it.
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return rate
}

// coldSyncRate lists b.N ConfigMaps, at resourceVersions b.N+1 to 2*b.N
// (the list's), to the informer newInf makes and returns objects per second
// from Run until it synced. A watch from the list's resourceVersion
// delivers nothing until the run ends; one from any other fails with 410
// Gone. With timed, b's timer runs for exactly that span.
func coldSyncRate(b *testing.B, timed bool, newInf func(lw *cache.ListWatch) (cache.SharedIndexInformer, error)) float64 {
	b.Helper()
	n := b.N
	listRV := strconv.Itoa(2 * n)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: listRV}}
	list.Items = make([]corev1.ConfigMap, n)
	for i := range n {
		list.Items[i] = *pipelineCM(i, n, n+1+i)
	}
	stop := make(chan struct{})
	defer close(stop)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				return nil, apierrors.NewBadRequest("coldSyncRate: sendInitialEvents is not supported")
			}
			if opts.ResourceVersion != listRV {
				return nil, apierrors.NewResourceExpired("coldSyncRate: too old resource version: " + opts.ResourceVersion)
			}
			events := make(chan watch.Event)
			w := watch.NewProxyWatcher(events)
			go func() {
				select {
				case <-stop:
				case <-w.StopChan():
				}
				w.Stop()
			}()
			return w, nil
		},
	}
	inf, err := newInf(lw)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	stopped := make(chan struct{})
	defer func() {
		cancel()
		<-stopped
	}()
	if timed {
		b.StartTimer()
	}
	start := time.Now()
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	if !cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
		b.Fatal("informer did not sync")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return float64(n) / elapsed.Seconds()
}
