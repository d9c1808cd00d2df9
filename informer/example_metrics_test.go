package informer_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memory"
)

// Exposing the metrics of informers on /metrics, from a registry of the
// application's own (nothing is registered globally).
func ExampleNewMetrics() {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})

	reg := prometheus.NewRegistry()
	metrics, err := informer.NewMetrics(reg)
	if err != nil {
		panic(err)
	}
	// A loopback server, as an application would serve /metrics.
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	s, err := store.Open(ctx, "memory://", &store.Options{Name: "core/v1/configmaps"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	opts := informer.Options{Metrics: metrics} // Name defaults to the store's
	opts.Reflector.WatchList = ptr.To(false)
	inf, err := informer.New(cache.ToListerWatcherWithContext(src), &corev1.ConfigMap{}, s, &opts)
	if err != nil {
		panic(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.RunWithContext(ctx)
	}()
	cache.WaitFor(ctx, "", inf.HasSyncedChecker())

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range []string{"informerdb_resumes_total{", `informerdb_relists_total{informer="core/v1/configmaps",reason="cold"}`, "informerdb_store_objects{", "informerdb_synced{"} {
			if strings.HasPrefix(line, name) {
				fmt.Println(line)
			}
		}
	}
	cancel()
	<-stopped
	// Output:
	// informerdb_relists_total{informer="core/v1/configmaps",reason="cold"} 1
	// informerdb_resumes_total{informer="core/v1/configmaps"} 0
	// informerdb_store_objects{informer="core/v1/configmaps"} 1
	// informerdb_synced{informer="core/v1/configmaps"} 1
}
