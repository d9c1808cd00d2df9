package live_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/informerdb/informerdb/informer"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/snapshot"
	"github.com/informerdb/informerdb/test/internal/childtest"
)

// Environment of the child process: a controller that keeps its informers'
// cache in a database and serves it with snapshot.NewHandler, as users
// mount it. The parent owns the API server and passes its address and
// token.
const (
	envMode      = "INFORMERDB_LIVE_CHILD" // modeFactory or modeManager selects child mode in TestMain
	envStoreURL  = "INFORMERDB_LIVE_STORE_URL"
	envServer    = "INFORMERDB_LIVE_SERVER"
	envToken     = "INFORMERDB_LIVE_TOKEN"
	envNamespace = "INFORMERDB_LIVE_NAMESPACE"
	envJournal   = "INFORMERDB_LIVE_JOURNAL"
	envAddr      = "INFORMERDB_LIVE_ADDR" // modeManager: the metrics server's address
)

// Child modes: informers of an informer.Factory, with the handler on a
// server of the child's own; or a controller-runtime manager's cache on
// informer.InformerConstructor, with the handler among the metrics
// server's ExtraHandlers.
const (
	modeFactory = "factory"
	modeManager = "manager"
)

// prefix is where the child mounts the handler.
const prefix = "/debug/informerdb/"

// child runs until it is killed: it syncs informers of the namespace's
// ConfigMaps and Secrets, serves their database, and writes a "serving"
// record with the handler's address.
func child(mode string) int {
	ctx := context.Background()
	childtest.ExitWithParent()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "live child: %s: %v\n", what, err)
		return 3
	}
	j, err := childtest.OpenJournal(os.Getenv(envJournal))
	if err != nil {
		return fail("journal", err)
	}
	cfg := &rest.Config{
		Host:            os.Getenv(envServer),
		BearerToken:     os.Getenv(envToken),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1,
		UserAgent:       "informerdb-live-child",
	}
	url, ns := os.Getenv(envStoreURL), os.Getenv(envNamespace)
	// Mounted before the informers open their stores, as a process
	// mounts it at start; it answers 503 until then.
	h, err := snapshot.NewHandler(url, nil)
	if err != nil {
		return fail("handler", err)
	}
	switch mode {
	case modeFactory:
		f, err := informer.NewFactoryForConfig(ctx, url, cfg, &informer.FactoryOptions{Namespace: ns})
		if err != nil {
			return fail("factory", err)
		}
		for _, r := range []string{"configmaps", "secrets"} {
			if _, err := f.InformerFor(ctx, schema.GroupVersionResource{Version: "v1", Resource: r}); err != nil {
				return fail("informer", err)
			}
		}
		mux := http.NewServeMux()
		mux.Handle(prefix, h)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail("listen", err)
		}
		go func() {
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintln(os.Stderr, "live child: server:", srv.Serve(ln))
		}()
		f.Start(ctx)
		for gvr, ok := range f.WaitForCacheSync(ctx) {
			if !ok {
				return fail("sync", fmt.Errorf("%v did not sync", gvr))
			}
		}
		j.Write(childtest.Record{Kind: "serving", Key: "http://" + ln.Addr().String() + prefix})
		select {}
	case modeManager:
		ctrl.SetLogger(klog.Background())
		c, err := informer.NewInformerConstructor(ctx, url, cfg, nil)
		if err != nil {
			return fail("constructor", err)
		}
		addr := os.Getenv(envAddr)
		mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{
			Metrics: metricsserver.Options{
				BindAddress:   addr,
				ExtraHandlers: map[string]http.Handler{prefix: h},
			},
			HealthProbeBindAddress: "0",
			Cache: crcache.Options{
				NewInformer:       c.NewInformer,
				DefaultNamespaces: map[string]crcache.Config{ns: {}},
			},
		})
		if err != nil {
			return fail("manager", err)
		}
		if err := mgr.Add(c); err != nil {
			return fail("adding the constructor", err)
		}
		errc := make(chan error, 1)
		go func() { errc <- mgr.Start(ctx) }()
		if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
			return fail("informer", err)
		}
		if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{}); err != nil {
			return fail("informer", err)
		}
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fail("sync", fmt.Errorf("the cache did not sync"))
		}
		j.Write(childtest.Record{Kind: "serving", Key: "http://" + addr + prefix})
		return fail("manager stopped", <-errc)
	}
	return fail("mode", fmt.Errorf("unknown mode %q", mode))
}
