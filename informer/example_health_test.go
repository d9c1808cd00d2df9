package informer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memory"
)

// A liveness endpoint for a process that runs informers itself (with
// controller-runtime, add CheckCommits to the manager with AddHealthzCheck):
// it answers 500 once the informer's commits stop getting through, at once
// if the store refuses writes until it is reopened, and the pod's liveness
// probe then restarts the process.
func ExampleInformer_CheckCommits() {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})

	ctx, cancel := context.WithCancel(context.Background())
	s, err := store.Open(ctx, "memory://", &store.Options{Name: "core/v1/configmaps"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	var opts informer.Options
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

	// A loopback server, as an application would serve its probes.
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := inf.CheckCommits(2 * time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	cancel()
	<-stopped
	// Output: 200 ok
}
