package informer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// countingScheme is a bolt database whose opens are counted, per database
// (host and path of the URL): each open of a database another process
// holds is one lock wait.
const countingScheme = "crcount"

var (
	opensMu sync.Mutex
	opens   = map[string]int{}

	relativeN atomic.Int64 // numbers the relative paths of the tests
)

func init() {
	store.Register(countingScheme, store.DriverFunc(func(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
		opensMu.Lock()
		opens[u.Host+u.Path]++
		opensMu.Unlock()
		b := *u
		b.Scheme = "bolt"
		return store.Open(ctx, b.String(), &opts)
	}))
}

// opensOf returns how many stores were opened in the counting database
// named by rawURL.
func opensOf(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	opensMu.Lock()
	defer opensMu.Unlock()
	return opens[u.Host+u.Path]
}

// crLog records the error-level lines of controller-runtime's logger (the
// one it hands its informers in their context) and of the managers' own.
var crLog struct {
	once  sync.Once
	mu    sync.Mutex
	lines []crLogLine
}

type crLogLine struct{ msg, err string }

// errorSink is a logr.LogSink that records errors in crLog and drops the
// rest.
type errorSink struct{}

func (errorSink) Init(logr.RuntimeInfo)            {}
func (errorSink) Enabled(int) bool                 { return true }
func (errorSink) Info(int, string, ...any)         {}
func (s errorSink) WithValues(...any) logr.LogSink { return s }
func (s errorSink) WithName(string) logr.LogSink   { return s }
func (errorSink) Error(err error, msg string, _ ...any) {
	e := "<nil>"
	if err != nil {
		e = err.Error()
	}
	crLog.mu.Lock()
	crLog.lines = append(crLog.lines, crLogLine{msg, e})
	crLog.mu.Unlock()
}

// crLogReset forgets the lines logged so far.
func crLogReset() {
	crLog.mu.Lock()
	defer crLog.mu.Unlock()
	crLog.lines = nil
}

// crErrorLinesWith returns the error lines logged since crLogReset whose
// error says cause.
func crErrorLinesWith(cause string) []crLogLine {
	crLog.mu.Lock()
	defer crLog.mu.Unlock()
	var out []crLogLine
	for _, l := range crLog.lines {
		if strings.Contains(l.err, cause) {
			out = append(out, l)
		}
	}
	return out
}

// testManager is a controller-runtime manager with one controller built
// the way users build theirs (NewControllerManagedBy(mgr).For(ConfigMap)),
// started in the background.
type testManager struct {
	mgr    manager.Manager
	cancel context.CancelFunc
	done   chan struct{} // closed when mgr.Start returned
	err    error         // mgr.Start's, set before done is closed

	mu         sync.Mutex // guards reconciled
	reconciled map[string]bool
	changed    chan struct{} // closed and replaced on every reconcile
}

// startTestManager starts a manager built from cfg whose cache makes its
// informers with c (caching namespaces, all if none), and that runs c
// (mgr.Add) if addConstructor. Cleanup stops it.
func startTestManager(t *testing.T, cfg *rest.Config, c *InformerConstructor, namespaces []string, addConstructor bool) *testManager {
	t.Helper()
	crLog.once.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	cacheOpts := crcache.Options{NewInformer: c.NewInformer}
	if len(namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]crcache.Config{}
		for _, ns := range namespaces {
			cacheOpts.DefaultNamespaces[ns] = crcache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		Logger:                 logr.New(errorSink{}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		PprofBindAddress:       "0",
		Cache:                  cacheOpts,
		// Each test has a controller of ConfigMaps.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("ctrl.NewManager: %v", err)
	}
	if addConstructor {
		if err := mgr.Add(c); err != nil {
			t.Fatalf("mgr.Add(constructor): %v", err)
		}
	}
	m := &testManager{mgr: mgr, done: make(chan struct{}), reconciled: map[string]bool{}, changed: make(chan struct{})}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(
		reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.reconciled[req.String()] = true
			close(m.changed)
			m.changed = make(chan struct{})
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatalf("NewControllerManagedBy: %v", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	m.cancel = cancel
	go func() {
		defer close(m.done)
		m.err = mgr.Start(ctx)
	}()
	// Whatever Start returned, the test checked it, if it had to.
	t.Cleanup(func() { _ = m.stop(t) })
	return m
}

// stop stops the manager and returns what its Start returned.
func (m *testManager) stop(t *testing.T) error {
	t.Helper()
	m.cancel()
	return m.wait(t)
}

// wait waits until the manager's Start returned, and returns its error.
func (m *testManager) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-m.done:
		return m.err
	case <-time.After(waitLimit):
		t.Fatalf("manager did not stop within %v", waitLimit)
		return nil
	}
}

// reconciledNames returns the requests reconciled so far, sorted.
func (m *testManager) reconciledNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name := range m.reconciled {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// waitReconciled waits until every name was reconciled, or the manager
// stopped.
func (m *testManager) waitReconciled(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		m.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return m.reconciled[n] })
		changed := m.changed
		m.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-changed:
		case <-m.done:
			t.Fatalf("manager stopped (%v) before reconciling %v", m.err, missing)
		case <-deadline:
			t.Fatalf("%v not reconciled within %v", missing, waitLimit)
		}
	}
}

// TestCRConstructorInformerFailureStopsManager: an informer the constructor
// cannot make persistent (its store is in use; the manager was not built
// from the constructor's Config, so its scope is unknown) does not run
// without persistence: the manager, which runs the constructor (mgr.Add),
// stops with the informer's error and reconciles nothing. With
// FallBackToMemory, the manager runs on client-go's in-memory informer,
// which logs why at error level through controller-runtime's logger.
func TestCRConstructorInformerFailureStopsManager(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the config to build the manager from, and the
		// error the informer fails with.
		setup func(t *testing.T, c *InformerConstructor, dbURL string, api *fakeAPIServer) (*rest.Config, string)
	}{
		{"store in use", func(t *testing.T, c *InformerConstructor, dbURL string, _ *fakeAPIServer) (*rest.Config, string) {
			codec, err := indexer.NewCodec(&corev1.ConfigMap{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(t.Context(), dbURL, &store.Options{Name: "core/v1/ConfigMap", Codec: codec, Durability: store.DurabilityNoSync})
			if err != nil {
				t.Fatalf("open the informer's store: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return c.Config(), store.ErrInUse.Error()
		}},
		{"manager not built from Config", func(_ *testing.T, _ *InformerConstructor, _ string, api *fakeAPIServer) (*rest.Config, string) {
			return api.config(), "its scope cannot be told"
		}},
	} {
		for _, fallBack := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/FallBackToMemory=%v", tc.name, fallBack), func(t *testing.T) {
				crLogReset()
				api := newFakeAPIServer(t, "uid-1")
				api.setCluster("uid-1", fakeConfigMap("ns", "a", "10"))
				dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
				c, err := NewInformerConstructor(t.Context(), dbURL, api.config(), &ConstructorOptions{
					Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync}, FallBackToMemory: fallBack})
				if err != nil {
					t.Fatalf("NewInformerConstructor: %v", err)
				}
				defer c.Close()
				cfg, cause := tc.setup(t, c, dbURL, api)
				m := startTestManager(t, cfg, c, nil, true)
				if !fallBack {
					err := m.wait(t)
					if err == nil || !strings.Contains(err.Error(), cause) {
						t.Errorf("manager Start = %v, want the informer's error, saying %q", err, cause)
					}
					if got := m.reconciledNames(); len(got) != 0 {
						t.Errorf("the manager reconciled %v without persistence", got)
					}
					return
				}
				m.waitReconciled(t, "ns/a")
				var logged int
				for _, l := range crErrorLinesWith(cause) {
					if strings.Contains(l.msg, "in-memory informer") {
						logged++
					}
				}
				if logged != 1 {
					t.Errorf("%d error-level lines of controller-runtime's logger say the informer runs in memory because %q, want 1", logged, cause)
				}
				if err := m.stop(t); err != nil {
					t.Errorf("manager Start with FallBackToMemory: %v", err)
				}
			})
		}
	}
}

// TestCRConstructorMisconfiguredDatabase: a relative database path, a
// parent directory others can write, and a database another process holds
// are NewInformerConstructor's errors, after one open (one lock wait):
// no manager is made. With FallBackToMemory, the manager runs on
// client-go's in-memory informers, two here (a cache of two namespaces),
// each logging the database's error at error level through
// controller-runtime's logger; they open nothing, so the locked database
// costs the process one lock wait in all.
func TestCRConstructorMisconfiguredDatabase(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the database URL and the error it must fail with.
		setup func(t *testing.T) (string, error)
	}{
		{"relative path", func(t *testing.T) (string, error) {
			// Unique per test, so that the counts of opens do not mix.
			return fmt.Sprintf("%s://relative-%d/cr.db", countingScheme, relativeN.Add(1)), store.ErrInvalid
		}},
		{"world-writable parent", func(t *testing.T) (string, error) {
			dir := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			return countingScheme + "://" + filepath.Join(dir, "cr.db"), store.ErrUnsafe
		}},
		{"locked by another process", func(t *testing.T) (string, error) {
			path := filepath.Join(t.TempDir(), "cr.db")
			// bbolt's flock belongs to the open file description: this
			// open conflicts with the store's as another process's does.
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return countingScheme + "://" + path + "?lock_timeout=200ms", store.ErrLocked
		}},
	} {
		for _, fallBack := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/FallBackToMemory=%v", tc.name, fallBack), func(t *testing.T) {
				crLogReset()
				dbURL, want := tc.setup(t)
				api := newFakeAPIServer(t, "uid-1")
				api.setCluster("uid-1", fakeConfigMap("ns1", "a", "10"), fakeConfigMap("ns2", "b", "11"))
				c, err := NewInformerConstructor(t.Context(), dbURL, api.config(), &ConstructorOptions{Informer: testOptions(), FallBackToMemory: fallBack})
				if got := opensOf(t, dbURL); got != 1 {
					t.Errorf("NewInformerConstructor opened the database %d times, want 1", got)
				}
				if !fallBack {
					if !errors.Is(err, want) {
						t.Errorf("NewInformerConstructor = %v, want an error wrapping %q", err, want)
					}
					if c != nil {
						t.Errorf("NewInformerConstructor returned a constructor with its error")
					}
					return
				}
				if err != nil {
					t.Fatalf("NewInformerConstructor with FallBackToMemory: %v", err)
				}
				defer c.Close()
				m := startTestManager(t, c.Config(), c, []string{"ns1", "ns2"}, true)
				m.waitReconciled(t, "ns1/a", "ns2/b")
				if got := opensOf(t, dbURL); got != 1 {
					t.Errorf("the database was opened %d times in all, want 1: the informers waited for it again", got)
				}
				// One line per informer, each with the database's error.
				var logged int
				for _, l := range crErrorLinesWith(want.Error()) {
					if strings.Contains(l.msg, "in-memory informer") {
						logged++
					}
				}
				if logged != 2 {
					t.Errorf("%d error-level lines of controller-runtime's logger say the informers run in memory because %q, want 2 (one per informer)", logged, want)
				}
				if err := m.stop(t); err != nil {
					t.Errorf("manager Start with FallBackToMemory: %v", err)
				}
			})
		}
	}
}
