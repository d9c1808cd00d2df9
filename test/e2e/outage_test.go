package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/test/apiserver"
)

// TestFactoryStartsDuringOutage: a controller restarts while kube-apiserver
// is down. Its factory waits for the API server to learn the cluster
// identity instead of starting without it, so its store keeps its scope and
// its objects: nothing is dropped and relisted because the API server was
// away when the process started.
func TestFactoryStartsDuringOutage(t *testing.T) {
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	const ns = "outage"
	createNamespace(t, c, ns)
	createConfigMaps(t, c, ns, 20)
	url := persistentBackends[0].url(t.TempDir())
	opts := &informer.FactoryOptions{
		Namespace: ns,
		Informer: informer.Options{Reflector: reflector.Options{
			CatchUpWatchTimeout: 3 * time.Second,
			Backoff:             reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		}},
	}
	run := func(f *informer.Factory) *informer.Informer {
		t.Helper()
		inf, err := f.InformerFor(t.Context(), kindsConfigMapGVR)
		if err != nil {
			t.Fatalf("InformerFor: %v", err)
		}
		f.Start(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
		defer cancel()
		if !f.WaitForCacheSync(ctx)[kindsConfigMapGVR] {
			t.Fatalf("configmaps did not sync within %v", waitLimit)
		}
		if got := len(inf.GetStore().ListKeys()); got != 20 {
			t.Errorf("informer holds %d ConfigMaps, want 20", got)
		}
		return inf
	}

	f, err := informer.NewFactoryForConfig(t.Context(), url, srv.Config(), opts)
	if err != nil {
		t.Fatalf("NewFactoryForConfig: %v", err)
	}
	scope := run(f).Store().Info().Scope
	if !strings.Contains(scope, "cluster=kube-system/") {
		t.Fatalf("scope %q lacks the cluster identity", scope)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	// The restart, during an outage. The transport tells when the
	// factory's read of kube-system failed, so the API server comes back
	// only once the factory is waiting for it.
	srv.StopAPIServer(t)
	cfg := srv.Config()
	failed := make(chan struct{})
	var once sync.Once
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err != nil && strings.HasSuffix(r.URL.Path, "/namespaces/kube-system") {
				once.Do(func() { close(failed) })
			}
			return resp, err
		})
	})
	type result struct {
		f   *informer.Factory
		err error
	}
	started := make(chan result, 1)
	go func() {
		f, err := informer.NewFactoryForConfig(t.Context(), url, cfg, opts)
		started <- result{f, err}
	}()
	select {
	case <-failed:
	case r := <-started:
		t.Fatalf("NewFactoryForConfig returned (%v) without asking the stopped API server", r.err)
	}
	srv.StartAPIServer(t)
	var r result
	select {
	case r = <-started:
	case <-time.After(waitLimit):
		t.Fatalf("NewFactoryForConfig did not return within %v of the API server's return", waitLimit)
	}
	if r.err != nil {
		t.Fatalf("NewFactoryForConfig during the outage: %v", r.err)
	}
	t.Cleanup(func() { _ = r.f.Shutdown() })
	info := run(r.f).Store().Info()
	if info.Reset != "" || info.Scope != scope {
		t.Errorf("store after a start during the outage: scope %q (reset: %q), want %q kept", info.Scope, info.Reset, scope)
	}
	if err := r.f.Shutdown(); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// roundTripFunc is an http.RoundTripper of one function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
