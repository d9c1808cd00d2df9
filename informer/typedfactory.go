package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// SharedInformerOption configures a SharedInformerFactory or a
// GeneratedFactory as client-go's informers.SharedInformerOption configures
// client-go's factory, whose values no other package can read: a call such
// as informers.WithNamespace("team-a") becomes
// informer.WithNamespace("team-a").
type SharedInformerOption func(*sharedInformerOptions)

// sharedInformerOptions is what SharedInformerOptions set.
type sharedInformerOptions struct {
	namespace    string
	tweak        func(*metav1.ListOptions)
	customResync map[reflect.Type]time.Duration
	transform    cache.TransformFunc
	factory      FactoryOptions
	err          error // the first invalid option
}

// WithNamespace limits the factory's informers of namespaced resources to
// namespace, as client-go's informers.WithNamespace does. Informers of
// cluster-scoped resources list everything. The namespace is part of every
// store's name ("core/v1/ConfigMap@ns=team-a") and scope.
func WithNamespace(namespace string) SharedInformerOption {
	return func(o *sharedInformerOptions) { o.namespace = namespace }
}

// WithTweakListOptions sets a function that edits every list and watch
// request's options, as client-go's informers.WithTweakListOptions does.
// The selectors it sets on an empty ListOptions are part of the store's
// name ("@sel=<digest>") and scope, so it must set the same ones every
// time. It must not set the resourceVersion, the limit or the continue
// token, which the reflector owns.
func WithTweakListOptions(tweak func(*metav1.ListOptions)) SharedInformerOption {
	return func(o *sharedInformerOptions) { o.tweak = tweak }
}

// WithCustomResyncConfig sets the resync period of the informers of some
// types, as client-go's informers.WithCustomResyncConfig does: each key is
// an object of the type (&corev1.ConfigMap{}), the others resync at the
// factory's default period.
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(o *sharedInformerOptions) {
		if o.customResync == nil {
			o.customResync = map[reflect.Type]time.Duration{}
		}
		for k, v := range resyncConfig {
			if v < 0 && o.err == nil {
				o.err = fmt.Errorf("custom resync period %v of %T is negative", v, k)
			}
			o.customResync[reflect.TypeOf(k)] = v
		}
	}
}

// WithTransform sets the transform of every informer of the factory, as
// client-go's informers.WithTransform does (see Options.Transform: objects
// are stored transformed, so name the transform's version in
// FactoryOptions.Store.Scope).
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(o *sharedInformerOptions) { o.transform = transform }
}

// WithFactoryOptions sets what informerdb adds to client-go's factory: the
// cluster identity, the templates of every informer's and store's options,
// encryption at rest. Its Namespace, LabelSelector and FieldSelector must
// be empty (use WithNamespace and WithTweakListOptions), and its Dynamic
// and Metadata clients nil.
func WithFactoryOptions(opts FactoryOptions) SharedInformerOption {
	return func(o *sharedInformerOptions) {
		if (opts.Namespace != "" || opts.LabelSelector != "" || opts.FieldSelector != "" || opts.Dynamic != nil || opts.Metadata != nil) && o.err == nil {
			o.err = errors.New("FactoryOptions: Namespace, LabelSelector, FieldSelector, Dynamic and Metadata are not options of a shared informer factory (use WithNamespace and WithTweakListOptions)")
		}
		o.factory = opts
	}
}

// schemeFactory is what SharedInformerFactory and GeneratedFactory run on:
// informerdb informers of the Go types of one scheme, made on demand and
// keyed by type, all in one database. Each type is listed and watched
// through a REST client of its group and version; its resource and scope
// come from discovery when it first lists, so that making an informer
// needs neither the API server nor reflection over a clientset's methods
// (which would keep the linker from dropping those a program does not
// use).
//
// A schemeFactory is safe for concurrent use.
type schemeFactory struct {
	url           string
	cluster       string
	defaultResync time.Duration
	o             sharedInformerOptions

	kind   string // "shared informer factory", in logs and errors
	codecs schemeCodecs

	config    *rest.Config // with the shared rate limiter
	http      *http.Client
	discovery discovery.DiscoveryInterfaceWithContext

	set *informerSet[reflect.Type]

	mu       sync.Mutex // guards clients and mappings
	clients  map[schema.GroupVersion]*rest.RESTClient
	mappings map[schema.GroupVersionKind]restMapping
}

// schemeCodecs is how a schemeFactory encodes requests and decodes answers.
type schemeCodecs struct {
	scheme     *runtime.Scheme
	serializer runtime.NegotiatedSerializer
	params     runtime.ParameterCodec
	protobuf   bool // ask for protobuf (built-in types), else the config's content type
}

// restMapping is where a kind is served: its resource, whether it is
// namespaced, and the REST client of its group version, or another whose
// requests are sent to absPath ("/apis/apps/v1").
type restMapping struct {
	resource   string
	namespaced bool
	client     rest.Interface
	absPath    string
}

// restMapper tells a restLW where its kind is served.
type restMapper interface {
	// mapping returns where gvk is served.
	mapping(ctx context.Context, gvk schema.GroupVersionKind) (restMapping, error)
	// forget drops what mapping remembers of gvk, after the API server
	// answered that it does not serve it there.
	forget(gvk schema.GroupVersionKind)
}

// fixedMapping is a restMapper of a mapping known when the informer is
// made (a Factory's, given the resource).
type fixedMapping restMapping

func (m fixedMapping) mapping(context.Context, schema.GroupVersionKind) (restMapping, error) {
	return restMapping(m), nil
}

func (fixedMapping) forget(schema.GroupVersionKind) {}

func newSchemeFactory(ctx context.Context, kind, rawURL string, cfg *rest.Config, codecs schemeCodecs, defaultResync time.Duration, options []SharedInformerOption) (*schemeFactory, error) {
	fail := func(err error) (*schemeFactory, error) { return nil, fmt.Errorf("informer: new %s: %w", kind, err) }
	if cfg == nil {
		return fail(errors.New("nil REST config"))
	}
	if defaultResync < 0 {
		return fail(fmt.Errorf("default resync period %v is negative", defaultResync))
	}
	if err := store.CheckURL(rawURL); err != nil {
		return fail(err)
	}
	e := &schemeFactory{
		url: rawURL, defaultResync: defaultResync, kind: kind, codecs: codecs,
		set: newInformerSet[reflect.Type]("shared informer factory"), clients: map[schema.GroupVersion]*rest.RESTClient{},
		mappings: map[schema.GroupVersionKind]restMapping{},
	}
	for _, opt := range options {
		if opt != nil {
			opt(&e.o)
		}
	}
	if e.o.err != nil {
		return fail(e.o.err)
	}
	if _, err := e.o.factory.Informer.withDefaults(); err != nil {
		return fail(err)
	}
	e.config = rest.CopyConfig(cfg)
	if e.config.UserAgent == "" {
		e.config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	// One rate limiter for every group's client, as a clientset shares one.
	if e.config.RateLimiter == nil && e.config.QPS > 0 {
		burst := e.config.Burst
		if burst <= 0 {
			burst = rest.DefaultBurst
		}
		e.config.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(e.config.QPS, burst)
	}
	hc, err := rest.HTTPClientFor(e.config)
	if err != nil {
		return fail(fmt.Errorf("HTTP client: %w", err))
	}
	e.http = hc
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(e.config, hc)
	if err != nil {
		return fail(fmt.Errorf("discovery client: %w", err))
	}
	e.discovery = discovery.ToDiscoveryInterfaceWithContext(dc)
	e.cluster, err = clusterIdentity(ctx, e.o.factory.Cluster, func() (kubernetes.Interface, error) {
		return kubernetes.NewForConfigAndClient(e.config, hc)
	}, nil)
	if err != nil {
		return fail(err)
	}
	return e, nil
}

// informerFor returns the informer of obj's type, making it on first use
// in its own store, with the indexers indexers returns for the type's
// resync period. If it cannot be made, it returns a failedInformer, which
// WaitForCacheSync reports with the error.
func (e *schemeFactory) informerFor(obj runtime.Object, indexers func(resync time.Duration) cache.Indexers) cache.SharedIndexInformer {
	t := reflect.TypeOf(obj)
	resync, ok := e.o.customResync[t]
	if !ok {
		resync = e.defaultResync
	}
	// Only once the informer is made: indexers makes an informer to learn
	// them.
	idx := sync.OnceValue(func() cache.Indexers {
		if indexers == nil || typednil.Is(obj) {
			return nil
		}
		return indexers(resync)
	})
	inf, _ := e.set.get(context.Background(), t, fmt.Sprintf("%T", obj), func(ctx context.Context) (*Informer, error) {
		return e.makeInformer(ctx, obj, resync, idx())
	}, func(err error) cache.SharedIndexInformer {
		return &failedInformer{SharedIndexInformer: clientgoInformer(nil, obj, resync, idx(), err), err: err, logger: e.o.factory.Informer.Logger}
	})
	return inf
}

// makeInformer opens the stores of obj's type and makes its informer.
func (e *schemeFactory) makeInformer(ctx context.Context, obj runtime.Object, resync time.Duration, indexers cache.Indexers) (*Informer, error) {
	if typednil.Is(obj) {
		return nil, errors.New("informer: shared informer factory: informer for a nil object")
	}
	gvks, _, err := e.codecs.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("informer: shared informer factory: informer for %T: %w", obj, err)
	}
	gvk := gvks[0]
	base := StoreName(gvk.GroupVersion().WithResource(gvk.Kind))
	var probe metav1.ListOptions
	if e.o.tweak != nil {
		e.o.tweak(&probe)
	}
	sel := url.Values{}
	for k, v := range map[string]string{"labelSelector": probe.LabelSelector, "fieldSelector": probe.FieldSelector} {
		if v != "" {
			sel.Set(k, v)
		}
	}
	name := base + listRequest{namespace: e.o.namespace, selectors: sel.Encode()}.nameSuffix()
	sopts := e.o.factory.Store
	sopts.Name = name
	// The caller's part (FactoryOptions.Store.Scope) last, and only when
	// set.
	sopts.Scope = fmt.Sprintf("cluster=%s;type=%s;namespace=%s;labels=%s;fields=%s", e.cluster, base, e.o.namespace, probe.LabelSelector, probe.FieldSelector)
	if e.o.factory.Store.Scope != "" {
		sopts.Scope += ";scope=" + e.o.factory.Store.Scope
	}
	if len(indexers) > 0 {
		sopts.Indexers = cache.Indexers{}
		maps.Copy(sopts.Indexers, e.o.factory.Store.Indexers)
		maps.Copy(sopts.Indexers, indexers)
	}
	iopts := e.o.factory.Informer
	iopts.ResyncPeriod = resync
	if e.o.transform != nil {
		iopts.Transform = e.o.transform
	}
	lw := &restLW{mapper: e, codecs: e.codecs, gvk: gvk, namespace: e.o.namespace, tweak: e.o.tweak}
	inf, err := openInformer(ctx, e.url, lw, obj, e.o.factory.Encryption, sopts, iopts, nil)
	if err != nil {
		return nil, fmt.Errorf("informer: shared informer factory: informer for %s: %w", name, err)
	}
	return inf, nil
}

// mapping returns where gvk is served, asking discovery the first time
// (and again while it is not served). A kind that discovery does not list
// is a NotFound error, as a LIST of a resource not served is: the informer
// then empties its store (see the package doc, Restart).
func (e *schemeFactory) mapping(ctx context.Context, gvk schema.GroupVersionKind) (restMapping, error) {
	e.mu.Lock()
	m, ok := e.mappings[gvk]
	e.mu.Unlock()
	if ok {
		return m, nil
	}
	gv := gvk.GroupVersion()
	list, err := e.discovery.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
	if err != nil {
		return restMapping{}, fmt.Errorf("discovery of %s: %w", gv, err)
	}
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool {
		return r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") // not a subresource
	})
	if i < 0 {
		return restMapping{}, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("the server does not serve kind %s in %s", gvk.Kind, gv),
		}}
	}
	r := list.APIResources[i]
	client, err := e.restClient(gv)
	if err != nil {
		return restMapping{}, err
	}
	m = restMapping{resource: r.Name, namespaced: r.Namespaced, client: client}
	e.mu.Lock()
	e.mappings[gvk] = m
	e.mu.Unlock()
	return m, nil
}

// forget drops gvk's mapping after the API server answered that it does
// not serve it: it may come back elsewhere (a CRD recreated with another
// scope).
func (e *schemeFactory) forget(gvk schema.GroupVersionKind) {
	e.mu.Lock()
	delete(e.mappings, gvk)
	e.mu.Unlock()
}

// restClient returns the REST client of gv, made on first use.
func (e *schemeFactory) restClient(gv schema.GroupVersion) (*rest.RESTClient, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients[gv]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(e.config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = e.codecs.serializer
	c, err := rest.RESTClientForConfigAndClient(cfg, e.http)
	if err != nil {
		return nil, fmt.Errorf("REST client of %s: %w", gv, err)
	}
	e.clients[gv] = c
	return c, nil
}

// restLW lists and watches one kind through a REST client, as a generated
// clientset does, without the clientset's methods.
type restLW struct {
	mapper    restMapper
	codecs    schemeCodecs // the scheme of the kind, the parameter codec, protobuf
	gvk       schema.GroupVersionKind
	namespace string
	tweak     func(*metav1.ListOptions)
}

var _ cache.ListerWatcherWithContext = (*restLW)(nil)

func (l *restLW) request(ctx context.Context, opts *metav1.ListOptions) (*rest.Request, error) {
	m, err := l.mapper.mapping(ctx, l.gvk)
	if err != nil {
		return nil, err
	}
	if l.tweak != nil {
		l.tweak(opts)
	}
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	req := m.client.Get()
	if m.absPath != "" {
		req = req.AbsPath(m.absPath)
	}
	return req.
		UseProtobufAsDefaultIfPreferred(l.codecs.protobuf).
		NamespaceIfScoped(l.namespace, m.namespaced && l.namespace != "").
		Resource(m.resource).
		VersionedParams(opts, l.codecs.params).
		Timeout(timeout), nil
}

func (l *restLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	req, err := l.request(ctx, &opts)
	if err != nil {
		return nil, err
	}
	list, err := l.codecs.scheme.New(l.gvk.GroupVersion().WithKind(l.gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("list of %s: %w", l.gvk, err)
	}
	if err := req.Do(ctx).Into(list); err != nil {
		if apierrors.IsNotFound(err) {
			l.mapper.forget(l.gvk)
		}
		return nil, err
	}
	return list, nil
}

func (l *restLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req, err := l.request(ctx, &opts)
	if err != nil {
		return nil, err
	}
	w, err := req.Watch(ctx)
	if apierrors.IsNotFound(err) {
		l.mapper.forget(l.gvk)
	}
	return w, err
}

// ForResource returns the informer of resource's kind, which must be in
// the factory's scheme, and a lister, as client-go's factory does; for a
// GeneratedFactory, the result is also the generated package's
// GenericInformer. The kind comes from the API server's discovery, which
// waits for an unreachable API server up to forResourceTimeout (its
// signature has no context), or until Shutdown.
func (e *schemeFactory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	fail := func(err error) (informers.GenericInformer, error) {
		return nil, fmt.Errorf("informer: shared informer factory: resource %s: %w", StoreName(gvr), err)
	}
	ctx, cancel := context.WithTimeout(e.set.stopped, forResourceTimeout)
	defer cancel()
	r, err := discoverResource(ctx, e.discovery, gvr)
	if err != nil {
		return fail(err)
	}
	obj, err := e.codecs.scheme.New(gvr.GroupVersion().WithKind(r.Kind))
	if err != nil {
		return fail(fmt.Errorf("no informer for kind %s: %w", r.Kind, err))
	}
	inf := e.informerFor(obj, func(time.Duration) cache.Indexers {
		if r.Namespaced {
			return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		}
		return nil
	})
	return &genericInformer{informer: inf, resource: gvr.GroupResource()}, nil
}

// genericInformer is client-go's informers.GenericInformer (and a generated
// package's GenericInformer) of a factory's informer.
type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

// Informer returns the informer.
func (g *genericInformer) Informer() cache.SharedIndexInformer { return g.informer }

// Lister returns a lister of the informer's objects.
func (g *genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// forResourceTimeout bounds ForResource's discovery.
const forResourceTimeout = time.Minute

// InformerName returns nil: informerdb informers report their metrics
// through FactoryOptions.Informer.Metrics, under their store's name.
func (e *schemeFactory) InformerName() *cache.InformerName { return nil }

// Start runs every informer made so far that is not running yet, until
// stopCh is closed or Shutdown.
func (e *schemeFactory) Start(stopCh <-chan struct{}) {
	e.set.start(wait.ContextForChannel(stopCh))
}

// StartWithContext runs every informer made so far that is not running
// yet, until ctx is done or Shutdown.
func (e *schemeFactory) StartWithContext(ctx context.Context) { e.set.start(ctx) }

// WaitForCacheSync waits until every started informer has synced, or
// stopCh is closed, and reports which have.
func (e *schemeFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return e.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext waits until every started informer has
// synced or stopped, or ctx is done, and reports which have synced; Err
// says why not all have (the errors of informers the factory could not
// make, ctx's cause).
func (e *schemeFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	synced, err := e.set.waitForCacheSync(ctx)
	return cache.SyncResult{Synced: synced, Err: err}
}

// CheckCommits is Informer.CheckCommits over every informer the factory
// made: nil while all of their commits get through. It is a liveness check
// for the process.
func (e *schemeFactory) CheckCommits(maxFailing time.Duration) error {
	return e.set.checkCommits(maxFailing)
}

// Shutdown stops the informers Start started, waits for them to return,
// and closes the stores of every informer the factory made; the factory
// makes no informer afterwards. An error closing a store is logged (Close
// returns it). It may be called more than once.
func (e *schemeFactory) Shutdown() {
	if err := e.Close(); err != nil {
		logger := klog.Background()
		if l := e.o.factory.Informer.Logger; l != nil {
			logger = *l
		}
		logger.Error(err, "Shutting down the "+e.kind)
	}
}

// Close is Shutdown, returning the errors of closing the stores; every
// call returns the first's.
func (e *schemeFactory) Close() error { return e.set.shutdown(nil) }

// indexersOf returns the indexers of the informer newInformer makes for
// client (generated code uses it only when the informer runs), which is
// then dropped, never run. If it panics (a hand-written newFunc that uses
// its client at once), the informer gets a namespace index.
func indexersOf[C any](newInformer func(C, time.Duration) cache.SharedIndexInformer, client C, resync time.Duration) (idx cache.Indexers) {
	defer func() {
		if recover() != nil {
			idx = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		}
	}()
	inf := newInformer(client, resync)
	if inf == nil || typednil.Is(inf) {
		return nil
	}
	return inf.GetIndexer().GetIndexers()
}
