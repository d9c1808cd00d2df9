package informer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// NewInformerFunc is the type of controller-runtime's
// cache.Options.NewInformer (sigs.k8s.io/controller-runtime/pkg/cache).
type NewInformerFunc = func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer

// ConstructorStoreName is the name of the store an InformerConstructor
// keeps open in its database from NewInformerConstructor to Close, so that
// the database is opened (and its lock waited for) once per process rather
// than once per informer. It holds no objects. A second constructor of the
// same database in one process fails with store.ErrInUse.
const ConstructorStoreName = "informerdb/constructor"

// ConstructorOptions configure an InformerConstructor. The zero value
// means defaults. NewInformerConstructor copies it.
type ConstructorOptions struct {
	// Cluster identifies the cluster in every store's scope, as
	// FactoryOptions.Cluster does (default "kube-system/<uid>"): a cluster
	// recreated behind the same URL has another kube-system UID, so its
	// informers relist instead of serving the old cluster's objects.
	Cluster string

	// Informer, Encryption and Store are as in FactoryOptions: the
	// template of every informer's options, the encryption of every
	// store's objects, and the template of every store's options.
	Informer   Options
	Encryption *indexer.KeyRing
	Store      store.Options

	// FallBackToMemory makes the constructor return client-go's in-memory
	// informer where it cannot make a persistent one (the database, an
	// informer's scope or its store cannot be opened or told), instead of
	// failing; each such informer logs why at error level when it runs.
	// The controller then works without persistence: every restart lists
	// everything, and deletes made while it was down are never delivered.
	// Default false: such failures are errors (see InformerConstructor).
	FallBackToMemory bool

	// StateCatchUp gives every resumed informer Options.StateCatchUp: a
	// MetadataStateLister of what its ListerWatcher lists, through Config.
	// Informer.StateCatchUp must be nil. Default false.
	StateCatchUp bool

	// ResumeOnDemand turns off resuming ahead. By default, when the first
	// informer of a type, namespace and selectors runs, the constructor
	// resumes at once the informers of the same type and selectors in the
	// other namespaces whose stores the database holds with a resume point,
	// through the first informer's ListerWatcher sent to their namespace:
	// controller-runtime's multi-namespace cache asks for them one after
	// another, each once the previous synced. When asked for, NewInformer
	// returns the informer already running (Stats.StartedAhead) if its
	// resync period, indexers and transform are the first informer's (the
	// same function values), else makes it anew. An informer started ahead
	// is fresh as of that start (DESIGN invariant 3). One not asked for
	// within a minute is stopped.
	ResumeOnDemand bool
}

// InformerConstructor makes informers on demand for callers that build them
// through a constructor, as controller-runtime does:
//
//	c, err := informer.NewInformerConstructor(ctx, "bolt:///var/lib/ctrl/cache.db", cfg, nil)
//	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{Cache: crcache.Options{NewInformer: c.NewInformer}})
//	err = mgr.Add(c)
//	defer c.Close() // after the manager stopped
//
// A constructor sees only a ListerWatcher, which hides what it lists. So
// that a store never holds the objects of two scopes, NewInformer asks the
// ListerWatcher for one page of its list with a context that the
// constructor's transport recognizes: the transport records the request's
// URL (resource, namespace, selectors) and answers it without sending it.
// That is why the clients that list must be built from Config (or a
// transport wrapped by WrapTransport). The store is named after the
// object's type and that request ("core/v1/ConfigMap", with
// "@ns=<namespace>" for one namespace and "@sel=<digest>" when selectors
// are set; "/unstructured" or "/metadata" after the type for those
// informers), and its scope records the cluster and the request in full. A
// namespace or selector change opens another store, which lists; the old
// one stays in the database until it is removed (store.Drop, `snapshot
// drop`).
//
// When NewInformer cannot make a persistent informer, it returns (unless
// ConstructorOptions.FallBackToMemory) an informer that fails every method
// that can fail with the error, and records the error for Start: added to
// a controller-runtime manager (mgr.Add(c)), the constructor stops the
// manager with it.
//
// An InformerConstructor is safe for concurrent use.
type InformerConstructor struct {
	url     string
	opts    ConstructorOptions
	cluster string
	config  *rest.Config // the caller's, wrapped by WrapTransport

	// held is the store of ConstructorStoreName, open from
	// NewInformerConstructor to Close; nil if the database could not be
	// opened (dbErr, with FallBackToMemory).
	held  store.Store
	dbErr error
	meta  metadata.Interface // with ConstructorOptions.StateCatchUp, else nil

	mu     sync.Mutex  // guards the fields below up to wg
	made   []*Informer // every informer made; Close closes their stores
	closed bool        // by Close: NewInformer opens no store any more
	// aheads are the informers started ahead and not claimed, and opening
	// counts the NewInformer calls opening a store, by store name;
	// families are the types and selectors resumed ahead (resumeSiblings).
	aheads   map[string]*ahead
	opening  map[string]int
	families map[string]bool
	started  []*ahead // started ahead, claimed or not: Close stops them
	// failure is NewInformer's first error, for Start; failed is closed
	// when it is set.
	failure error
	failed  chan struct{}

	wg          sync.WaitGroup // the goroutines resuming and running informers ahead
	claimWindow time.Duration  // aheadClaimWindow, shorter in tests
}

// NewInformerConstructor returns a constructor whose informers keep their
// objects in the database at rawURL (see store.Open; the backend must be
// imported) and list through cfg, wrapped (see Config). It opens the
// database and identifies the cluster, with the rules and waits of
// NewFactory (ctx bounds both); opts may be nil. With
// ConstructorOptions.FallBackToMemory, a database it cannot open makes it
// return a constructor of in-memory informers instead of the error.
func NewInformerConstructor(ctx context.Context, rawURL string, cfg *rest.Config, opts *ConstructorOptions) (*InformerConstructor, error) {
	if cfg == nil {
		return nil, errors.New("informer: new informer constructor: nil REST config")
	}
	c := &InformerConstructor{url: rawURL, failed: make(chan struct{}),
		aheads: map[string]*ahead{}, opening: map[string]int{}, families: map[string]bool{}, claimWindow: aheadClaimWindow}
	if opts != nil {
		c.opts = *opts
	}
	if _, err := c.opts.Informer.withDefaults(); err != nil {
		return nil, fmt.Errorf("informer: new informer constructor: %w", err)
	}
	if c.opts.Informer.StateCatchUp != nil {
		return nil, errors.New("informer: new informer constructor: Informer.StateCatchUp is set: a StateLister lists one informer's objects; set ConstructorOptions.StateCatchUp instead")
	}
	c.config = rest.CopyConfig(cfg)
	c.config.Wrap(c.WrapTransport)
	if c.opts.StateCatchUp {
		m, err := metadata.NewForConfig(c.config)
		if err != nil {
			return nil, fmt.Errorf("informer: new informer constructor: metadata client: %w", err)
		}
		c.meta = m
	}

	// The database first: a misconfigured one fails at once, not after a
	// wait for the API server.
	err := store.CheckURL(c.url)
	if err == nil {
		c.held, err = openHeld(ctx, c.url, ConstructorStoreName, "informer constructor", c.opts.Store)
	}
	if err != nil {
		if !c.opts.FallBackToMemory {
			return nil, fmt.Errorf("informer: new informer constructor: %w", err)
		}
		c.dbErr = err
	}
	c.cluster, err = clusterIdentity(ctx, c.opts.Cluster, func() (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) }, c.held)
	if err != nil {
		return nil, fmt.Errorf("informer: new informer constructor: %w", err)
	}
	return c, nil
}

// Config returns a copy of the REST config given to NewInformerConstructor
// whose transport lets the constructor see the scope of each ListerWatcher
// (see InformerConstructor): build the clients whose ListerWatchers reach
// NewInformer from it (controller-runtime: the config of ctrl.NewManager).
func (c *InformerConstructor) Config() *rest.Config { return rest.CopyConfig(c.config) }

// WrapTransport wraps rt as Config's transport is wrapped, for callers
// that assemble their transports themselves (rest.Config.Wrap,
// transport.Config).
func (c *InformerConstructor) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &scopeTransport{next: rt}
}

// Start waits until ctx ends, and returns nil, or until NewInformer could
// not make an informer, and returns that error, the first one: added to a
// controller-runtime manager (mgr.Add(c)), it stops the manager with it.
// It may be called more than once.
func (c *InformerConstructor) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-c.failed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.failure
	}
}

// NeedLeaderElection reports false: a manager runs Start on every
// replica, as it runs its caches.
func (c *InformerConstructor) NeedLeaderElection() bool { return false }

// NewInformer has the signature of controller-runtime's
// cache.Options.NewInformer. It cannot return an error: if it cannot make
// a persistent informer, it returns one that fails with the error (and
// Start returns it), or, with ConstructorOptions.FallBackToMemory,
// client-go's in-memory informer, which logs the error when it runs.
func (c *InformerConstructor) NewInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	err := c.dbErr
	if err == nil {
		var inf cache.SharedIndexInformer
		if inf, err = c.newInformer(lw, obj, resync, indexers, true); err == nil {
			return inf
		}
	}
	return c.unavailable(lw, obj, resync, indexers, err)
}

// unavailable is the informer given in place of a persistent one that
// could not be made (err): client-go's in-memory informer with
// FallBackToMemory, else one that fails with err, which Start returns.
func (c *InformerConstructor) unavailable(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers, err error) cache.SharedIndexInformer {
	memory := clientgoInformer(lw, obj, resync, indexers, err)
	if c.opts.FallBackToMemory {
		return &memoryInformer{SharedIndexInformer: memory, reason: err, logger: c.opts.Informer.Logger}
	}
	c.fail(err)
	return &failedInformer{SharedIndexInformer: memory, err: err, logger: c.opts.Informer.Logger}
}

// fail records err for Start, if it is the first.
func (c *InformerConstructor) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = err
		close(c.failed)
	}
}

// newInformer makes the informer NewInformer returns: the one started ahead
// for its store (see resumeSiblings) if claim and there is one, else a new
// one.
func (c *InformerConstructor) newInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers, claim bool) (cache.SharedIndexInformer, error) {
	if typednil.Is(lw) || typednil.Is(obj) {
		return nil, fmt.Errorf("informer: new informer: nil ListerWatcher or object")
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("informer: new informer: the informer constructor is closed")
	}
	base := constructedTypeName(obj)
	req, err := c.probeScope(lw)
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", base, err)
	}
	name := base + req.nameSuffix()
	c.mu.Lock()
	c.opening[name]++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.opening[name]--
		if c.opening[name] == 0 {
			delete(c.opening, name)
		}
		c.mu.Unlock()
	}()
	if claim {
		if inf, ok := c.claimAhead(name, req, lw, obj, resync, indexers); ok {
			return inf, nil
		}
	}
	inf, err := c.openInformer(withContext(lw), obj, resync, indexers, base, req, c.opts.Informer)
	if err != nil {
		return nil, err
	}
	if !c.opts.ResumeOnDemand && req.namespace != "" {
		inf.onRun = func(ctx context.Context) {
			c.wg.Go(func() { c.resumeSiblings(ctx, inf, lw, obj, resync, indexers, base, req) })
		}
	}
	return inf, nil
}

// scopeOf is the scope of the store of base's objects that req lists.
func (c *InformerConstructor) scopeOf(base string, req listRequest) string {
	return fmt.Sprintf("cluster=%s;server=%s;type=%s;request=%s;scope=%s",
		c.cluster, req.server, base, req.request, c.opts.Store.Scope)
}

// openInformer opens the stores of base's objects that req lists and makes
// their informer, with iopts as the template of its options.
func (c *InformerConstructor) openInformer(lw cache.ListerWatcherWithContext, obj runtime.Object, resync time.Duration, indexers cache.Indexers, base string, req listRequest, iopts Options) (*Informer, error) {
	name := base + req.nameSuffix()
	if c.meta != nil {
		var err error
		if iopts.StateCatchUp, err = req.stateLister(c.meta); err != nil {
			return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
		}
	}
	iopts.ResyncPeriod = resync
	sopts := c.opts.Store
	sopts.Name = name
	sopts.Indexers = indexers
	sopts.Scope = c.scopeOf(base, req)
	// controller-runtime's RemoveInformer stops an informer and the next
	// Get makes a new one of the same scope: its stores are free once the
	// stopped informer let go of them.
	inf, err := openInformer(context.Background(), c.url, lw, obj, c.opts.Encryption, sopts, iopts, func() bool { return c.retire(name) })
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
	}
	if kept, cerr := c.keep(inf); !kept {
		return nil, errors.Join(fmt.Errorf("informer: new informer %s: the informer constructor is closed", name), cerr)
	}
	return inf, nil
}

// keep adds inf to the informers whose stores Close closes, and reports
// whether it did: if Close ran already, it closes inf's store (returning
// the error) or has it closed when inf ends.
func (c *InformerConstructor) keep(inf *Informer) (bool, error) {
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.made = append(c.made, inf)
	}
	c.mu.Unlock()
	if !closed {
		return true, nil
	}
	return false, inf.closeStore("informer constructor: close")
}

// failedInformer stands in for an informer that could not be made: its
// methods that can fail return err (controller-runtime's GetInformer then
// fails, as it calls SetTransform), and it never syncs nor runs. The
// embedded client-go informer, never run, answers the other methods.
type failedInformer struct {
	cache.SharedIndexInformer
	err    error
	logger *klog.Logger // ConstructorOptions.Informer.Logger
}

func (f *failedInformer) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return nil, f.err
}

func (f *failedInformer) AddEventHandlerWithResyncPeriod(cache.ResourceEventHandler, time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return nil, f.err
}

func (f *failedInformer) AddEventHandlerWithOptions(cache.ResourceEventHandler, cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return nil, f.err
}

func (f *failedInformer) SetTransform(cache.TransformFunc) error { return f.err }

func (f *failedInformer) SetWatchErrorHandler(cache.WatchErrorHandler) error { return f.err }

func (f *failedInformer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return f.err
}

func (f *failedInformer) AddIndexers(cache.Indexers) error { return f.err }

// Run logs the error and returns: the informer has no store to run on.
func (f *failedInformer) Run(stopCh <-chan struct{}) {
	f.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext logs the error and returns.
func (f *failedInformer) RunWithContext(ctx context.Context) {
	runLogger(ctx, f.logger).Error(f.err, "Not running an informer that has no store")
}

// memoryInformer is client-go's in-memory informer that NewInformer
// returns with ConstructorOptions.FallBackToMemory: it logs why when it
// runs.
type memoryInformer struct {
	cache.SharedIndexInformer
	reason error
	logger *klog.Logger // ConstructorOptions.Informer.Logger
}

func (m *memoryInformer) Run(stopCh <-chan struct{}) {
	m.RunWithContext(wait.ContextForChannel(stopCh))
}

func (m *memoryInformer) RunWithContext(ctx context.Context) {
	runLogger(ctx, m.logger).Error(m.reason, "Running client-go's in-memory informer, without persistence (InformerConstructor's FallBackToMemory): every restart lists everything, and deletes made while down are not delivered")
	m.SharedIndexInformer.RunWithContext(ctx)
}

// runLogger is the logger of an informer run with ctx: ctx's, else
// fallback (Options.Logger), else klog's.
func runLogger(ctx context.Context, fallback *klog.Logger) klog.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l
	}
	if fallback != nil {
		return *fallback
	}
	return klog.Background()
}

// clientgoInformer returns client-go's in-memory informer of a stand-in
// (see failedInformer, memoryInformer). A nil lw or obj, with which
// client-go's informer would fail at its first use, becomes a
// ListerWatcher failing with err and a metav1.PartialObjectMetadata.
func clientgoInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers, err error) cache.SharedIndexInformer {
	if typednil.Is(lw) || typednil.Is(obj) {
		lw = &cache.ListWatch{
			ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, err },
		}
		if typednil.Is(obj) {
			obj = &metav1.PartialObjectMetadata{}
		}
	}
	return cache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// retire closes the store named name of an informer the constructor made
// that stopped (controller-runtime's RemoveInformer), waiting up to
// probeTimeout for it to end, and forgets it. It reports whether it closed
// one.
func (c *InformerConstructor) retire(name string) bool {
	c.mu.Lock()
	var stopped *Informer
	for i, inf := range c.made {
		if inf.Store().Info().Name == name && inf.IsStopped() {
			stopped = inf
			c.made = slices.Delete(c.made, i, i+1)
			break
		}
	}
	c.mu.Unlock()
	if stopped == nil {
		return false
	}
	select {
	case <-stopped.ended:
	case <-time.After(probeTimeout):
		// Its Run does not return: keep it for Close.
		_, _ = c.keep(stopped)
		return false
	}
	if err := stopped.closeStore("informer constructor: new informer of the same scope"); err != nil {
		klog.Background().Error(err, "Closing the store of a stopped informer failed", "store", name)
	}
	return true
}

// Close closes every store the constructor opened, and the database. Call
// it after the informers stopped; NewInformer then opens no store. An
// informer that never ran can no longer run. The store of an informer
// still running is closed when its Run returns (an error is then logged).
// Close may be called more than once.
func (c *InformerConstructor) Close() error {
	c.mu.Lock()
	c.closed = true
	clear(c.aheads)
	for _, ah := range c.started {
		ah.cancel()
	}
	c.started = nil
	c.mu.Unlock()
	// The informers started ahead stop with their Run, held by the
	// constructor's goroutines.
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if c.held != nil {
		if err := c.held.Close(); err != nil {
			errs = append(errs, err)
		}
		c.held = nil
	}
	for _, inf := range c.made {
		// A running informer has its store closed when it ends.
		if err := inf.closeStore("informer constructor: close"); err != nil {
			errs = append(errs, err)
		}
	}
	c.made = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("informer: informer constructor: close: %w", err)
	}
	return nil
}

// CheckCommits is Informer.CheckCommits over every persistent informer the
// constructor made and has not closed, their errors joined. Add it to the
// manager as a liveness check:
//
//	mgr.AddHealthzCheck("informerdb", func(*http.Request) error { return c.CheckCommits(2 * time.Minute) })
func (c *InformerConstructor) CheckCommits(maxFailing time.Duration) error {
	c.mu.Lock()
	infs := slices.Clone(c.made)
	c.mu.Unlock()
	return checkCommits(infs, maxFailing)
}

// probeTimeout bounds the constructor's scope request, which its transport
// answers at once, for a client-side rate limiter that makes it wait or a
// ListerWatcher that sends it elsewhere.
const probeTimeout = 30 * time.Second

// errScopeProbed is the constructor's transport's answer to its own scope
// request, which it does not send.
var errScopeProbed = errors.New("informer: scope request answered by the informer constructor, not sent")

// probeKey is the context key of a scopeProbe.
type probeKey struct{}

// scopeProbe receives the URL of the constructor's scope request.
type scopeProbe struct {
	mu  sync.Mutex
	url *url.URL
}

// scopeTransport records the URL of a request made with a scopeProbe in its
// context and answers it with errScopeProbed; it passes every other request
// on (moved to another namespace, see moveNamespace).
type scopeTransport struct{ next http.RoundTripper }

func (t *scopeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	moved, err := moveNamespace(req)
	p, probe := req.Context().Value(probeKey{}).(*scopeProbe)
	if err == nil && !probe {
		return t.next.RoundTrip(moved)
	}
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper closes the body, even on error
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.url == nil {
		u := *moved.URL
		p.url = &u
	}
	p.mu.Unlock()
	return nil, errScopeProbed
}

// WrappedRoundTripper lets client-go's transport utilities see through it.
func (t *scopeTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// listRequest is what a ListerWatcher lists, as its request showed it.
type listRequest struct {
	server    string // the API server: scheme://host
	request   string // the path, and the selectors when set
	namespace string // "" for every namespace
	selectors string // the label and field selectors, URL-encoded; "" without
	path      string // the path, unescaped
}

// stateLister returns the MetadataStateLister of what r lists.
func (r listRequest) stateLister(client metadata.Interface) (StateLister, error) {
	// /api/v1[/namespaces/<ns>]/<resource> or
	// /apis/<group>/<version>[/namespaces/<ns>]/<resource>.
	// The server's URL may have a path of its own before them.
	parts := strings.Split(strings.Trim(r.path, "/"), "/")
	var gvr schema.GroupVersionResource
	for i := range parts {
		if parts[i] == "api" && len(parts)-i >= 3 {
			gvr = schema.GroupVersionResource{Version: parts[i+1], Resource: parts[len(parts)-1]}
			break
		}
		if parts[i] == "apis" && len(parts)-i >= 4 {
			gvr = schema.GroupVersionResource{Group: parts[i+1], Version: parts[i+2], Resource: parts[len(parts)-1]}
			break
		}
	}
	if gvr.Resource == "" {
		return nil, fmt.Errorf("state lister: list request %q: not a path of a resource of an API group", r.path)
	}
	sel, err := url.ParseQuery(r.selectors)
	if err != nil {
		return nil, fmt.Errorf("state lister: list request %q: selectors: %w", r.path, err)
	}
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = sel.Get("labelSelector"), sel.Get("fieldSelector")
	}
	return MetadataStateLister(client, gvr, r.namespace, tweak), nil
}

// probeScope learns what lw lists by asking it for one object with a context
// that the constructor's transport recognizes (see InformerConstructor).
func (c *InformerConstructor) probeScope(lw cache.ListerWatcher) (listRequest, error) {
	u, listErr := probed(func(ctx context.Context) error {
		_, err := cache.ToListerWatcherWithContext(lw).ListWithContext(ctx, metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
		return err
	})
	if u == nil {
		const cause = "its scope cannot be told: its ListerWatcher does not list through InformerConstructor.Config (controller-runtime: build the manager from it)"
		if listErr != nil {
			return listRequest{}, fmt.Errorf("%s (its list failed: %w)", cause, listErr)
		}
		return listRequest{}, errors.New(cause)
	}
	return parseListRequest(u), nil
}

// probed calls call with a context that the constructor's transport
// recognizes, and returns the URL of the first request it made through
// that transport (nil if none), which the transport did not send, and
// call's error.
func probed(call func(ctx context.Context) error) (*url.URL, error) {
	p := &scopeProbe{}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), probeKey{}, p), probeTimeout)
	defer cancel()
	err := call(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url, err
}

// parseListRequest reads the scope of a list request: the API server, the
// path (group, version, resource, and namespace if any) and the selectors.
func parseListRequest(u *url.URL) listRequest {
	q := u.Query()
	sel := url.Values{}
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v := q.Get(k); v != "" {
			sel.Set(k, v)
		}
	}
	r := listRequest{server: u.Scheme + "://" + u.Host, request: u.EscapedPath(), selectors: sel.Encode(), path: u.Path}
	if r.selectors != "" {
		r.request += "?" + r.selectors
	}
	// A namespaced list is .../namespaces/<namespace>/<resource>.
	if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) >= 3 && parts[len(parts)-3] == "namespaces" {
		r.namespace = parts[len(parts)-2]
	}
	return r
}

// inNamespace is r made for namespace ns instead of r.namespace.
func (r listRequest) inNamespace(ns string) listRequest {
	from, to := "/namespaces/"+r.namespace+"/", "/namespaces/"+ns+"/"
	move := func(s string) string {
		i := strings.LastIndex(s, from)
		if i < 0 {
			return s
		}
		return s[:i] + to + s[i+len(from):]
	}
	r.request, r.path, r.namespace = move(r.request), move(r.path), ns
	return r
}

// nameSuffix tells apart the stores of one type that list different
// things: "@ns=<namespace>", and "@sel=<digest of the selectors>". The
// scope holds the request in full: colliding digests relist rather than
// share objects.
func (r listRequest) nameSuffix() string {
	s := ""
	if r.namespace != "" {
		s += "@ns=" + r.namespace
	}
	if r.selectors != "" {
		sum := sha256.Sum256([]byte(r.selectors))
		s += "@sel=" + hex.EncodeToString(sum[:6])
	}
	return s
}

// constructedTypeName names the type of a constructed informer's objects
// after their group, version and kind ("core/v1/ConfigMap"), with
// "/unstructured" or "/metadata" for the unstructured and metadata-only
// informers of a kind, whose stores hold other objects.
func constructedTypeName(obj runtime.Object) string {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		gvk = gvks[0]
	}
	if gvk.Empty() {
		return typeName(obj)
	}
	name := StoreName(gvk.GroupVersion().WithResource(gvk.Kind))
	switch obj.(type) {
	case runtime.Unstructured:
		name += "/unstructured"
	case *metav1.PartialObjectMetadata:
		name += "/metadata"
	}
	return name
}

// watchListOptOut is how a ListerWatcher says that it does not support the
// streaming watch-list (client-go's watchlist.DoesClientNotSupportWatchListSemantics).
type watchListOptOut interface{ IsWatchListSemanticsUnSupported() bool }

// withContext is cache.ToListerWatcherWithContext keeping lw's opt-out of
// the streaming watch-list, which client-go's wrapper hides: the reflector
// would otherwise try a streaming list at every relist.
func withContext(lw cache.ListerWatcher) cache.ListerWatcherWithContext {
	wc := cache.ToListerWatcherWithContext(lw)
	if o, ok := lw.(watchListOptOut); ok {
		if _, kept := wc.(watchListOptOut); !kept {
			return optedOut{ListerWatcherWithContext: wc, unsupported: o.IsWatchListSemanticsUnSupported()}
		}
	}
	return wc
}

type optedOut struct {
	cache.ListerWatcherWithContext
	unsupported bool
}

func (o optedOut) IsWatchListSemanticsUnSupported() bool { return o.unsupported }
