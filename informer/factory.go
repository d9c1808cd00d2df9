package informer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// FactoryOptions configure a Factory. The zero value means defaults.
// NewFactory copies it; a FactoryOptions value is not safe for concurrent
// mutation.
type FactoryOptions struct {
	// Namespace restricts namespaced resources to one namespace. Default ""
	// (all namespaces). Cluster-scoped resources ignore it.
	Namespace string
	// LabelSelector and FieldSelector restrict every informer's list and
	// watch. Default "" (everything).
	LabelSelector string
	FieldSelector string

	// Cluster identifies the cluster in every store's scope, so that a
	// database reused against another cluster is relisted instead of
	// served (DESIGN invariant 5). Default: "kube-system/<uid>", read by
	// NewFactory, or "server=<scheme://host>" (and a log line) where the
	// API server answers that the namespace cannot be read. While the API
	// server cannot be reached, NewFactory retries until its context ends,
	// and then fails rather than guess an identity, which would make every
	// informer relist. Setting Cluster makes NewFactory send no request.
	Cluster string

	// Informer is the template of every informer's options. Each
	// informer's Name is its store's name, after Informer.Name and a "/"
	// when set: two factories sharing one Metrics tell theirs apart.
	Informer Options

	// Encryption, when set, encrypts every store's objects at rest
	// (indexer.NewEncryptedCodec). A database written with encryption
	// cannot be opened without it, nor the reverse (store.ErrIncompatible).
	// Default nil.
	Encryption *indexer.KeyRing

	// Dynamic lists and watches for DynamicInformerFor, and Metadata for
	// MetadataInformerFor. Either may be nil if the factory is not asked
	// for that kind of informer; NewFactoryForConfig sets both.
	Dynamic  dynamic.Interface
	Metadata metadata.Interface

	// Store is the template of every store's options. The factory sets
	// Name, Codec and Scope (cluster, resource, namespace, selectors, and
	// Store.Scope if set). Store.Scope is the caller's part of every
	// store's scope, whose change relists every store: put in it what
	// changes the stored objects that no store can see, such as a version
	// of Informer.Transform.
	Store store.Options
}

// Factory makes informers for many resources of one cluster, all kept in
// one database, each in its own store named after its resource: informers
// of the clientset's types (InformerFor), of unstructured objects
// (DynamicInformerFor) and of objects' metadata (MetadataInformerFor).
//
// A Factory is safe for concurrent use.
type Factory struct {
	client  kubernetes.Interface
	rest    rest.Interface // the typed informers' REST client, nil for a fake clientset
	fake    fakeClient     // a fake clientset, which has no REST client
	url     string
	opts    FactoryOptions
	cluster string

	// held is the store of FactoryStoreName, open from NewFactory to
	// Shutdown; nil if another factory of this process has it open.
	held store.Store
	set  *informerSet[factoryKey]
}

// objectKind is what a factory's informer keeps of its resource's objects,
// as the suffix of its store's name.
type objectKind string

const (
	typedObjects        objectKind = ""              // the clientset's Go type
	unstructuredObjects objectKind = "/unstructured" // through the dynamic client
	metadataObjects     objectKind = "/metadata"     // through the metadata client
)

// storeName is the name of the store of gvr's informer of this kind.
func (k objectKind) storeName(gvr schema.GroupVersionResource) string {
	return StoreName(gvr) + string(k)
}

type factoryKey struct {
	gvr  schema.GroupVersionResource
	kind objectKind
}

// FactoryStoreName is the name of the store a Factory keeps open in its
// database from NewFactory to Shutdown: NewFactory opens the database
// through it, so that a database it cannot use fails NewFactory rather
// than the first InformerFor, and the database stays open (its lock held)
// while the factory's informers come and go. It holds no objects.
const FactoryStoreName = "informerdb/factory"

// NewFactory returns a factory of informers that list and watch through
// client and keep their objects in the database at rawURL (see store.Open;
// the backend must be imported). opts may be nil.
//
// It opens the database first (see FactoryStoreName), failing with the
// store's error if it cannot be used (store.ErrInvalid, store.ErrUnsafe,
// store.ErrLocked, a damaged or incompatible database), then identifies
// the cluster (see FactoryOptions.Cluster). ctx bounds the waits for the
// database's lock and for the API server. On error, nothing stays open.
func NewFactory(ctx context.Context, rawURL string, client kubernetes.Interface, opts *FactoryOptions) (*Factory, error) {
	if client == nil || typednil.Is(client) {
		return nil, fmt.Errorf("informer: new factory: nil clientset")
	}
	f := &Factory{client: client, rest: clientsetREST(client), url: rawURL, set: newInformerSet[factoryKey]("factory")}
	f.fake, _ = client.(fakeClient)
	if opts != nil {
		f.opts = *opts
	}
	if _, err := f.opts.Informer.withDefaults(); err != nil {
		return nil, fmt.Errorf("informer: new factory: %w", err)
	}
	// The database first: a misconfigured one fails without a wait for
	// the API server.
	held, err := openHeld(ctx, rawURL, FactoryStoreName, "factory", f.opts.Store)
	if errors.Is(err, store.ErrInUse) {
		// Another factory of this process holds it: the database is
		// usable, and this factory's informers share it.
		held, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("informer: new factory: %w", err)
	}
	f.held = held
	f.cluster, err = clusterIdentity(ctx, f.opts.Cluster, func() (kubernetes.Interface, error) { return client, nil }, held)
	if err != nil {
		return nil, fmt.Errorf("informer: new factory: %w", err)
	}
	return f, nil
}

// openHeld opens the store name, which holds no objects, that a maker of
// informers keeps open in the database at rawURL (see FactoryStoreName),
// with the durability and lock timeout of sopts, the template of its
// stores.
func openHeld(ctx context.Context, rawURL, name, scope string, sopts store.Options) (store.Store, error) {
	codec, err := indexer.NewCodec(&metav1.PartialObjectMetadata{})
	if err != nil {
		return nil, err
	}
	sopts.Name = name
	sopts.Codec = codec
	sopts.Indexers = nil
	sopts.Scope = scope
	return store.Open(ctx, rawURL, &sopts)
}

// clusterIdentity returns cluster or, if it is "", the default
// FactoryOptions.Cluster, read through the clientset newClient returns:
// "kube-system/<uid>", which no route to the cluster changes. If the API
// server answers that the namespace cannot be read (a namespaced
// controller may not get namespaces), it is the weaker
// "server=<scheme://host>", which still tells apart clusters reached at
// different addresses. Other failures are retried until ctx ends. On
// error, it closes held, if not nil.
func clusterIdentity(ctx context.Context, cluster string, newClient func() (kubernetes.Interface, error), held store.Store) (string, error) {
	if cluster != "" {
		return cluster, nil
	}
	client, err := newClient()
	if err == nil {
		cluster, err = readClusterIdentity(ctx, client)
	}
	if err != nil && held != nil {
		if cerr := held.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store %s: %w", held.Info().Name, cerr))
		}
	}
	return cluster, err
}

func readClusterIdentity(ctx context.Context, client kubernetes.Interface) (string, error) {
	var ns *corev1.Namespace
	err := retryUnreachable(ctx, "reading namespace kube-system for the cluster identity", func() (err error) {
		ns, err = client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		return err
	})
	switch {
	case err == nil && ns.UID != "":
		return "kube-system/" + string(ns.UID), nil
	case err == nil || isAnswer(err):
		cluster := ""
		if server := serverOf(client); server != "" {
			cluster = "server=" + server
		}
		klog.FromContext(ctx).Info("Cluster identity unknown: the kube-system namespace cannot be read; set FactoryOptions.Cluster so that stores are not reused across clusters reached at one address", "err", err, "cluster", cluster)
		return cluster, nil
	}
	return "", fmt.Errorf("cluster identity: reading namespace kube-system (set FactoryOptions.Cluster to start without the API server): %w", err)
}

// serverOf returns the scheme and host of client's API server, or "" if
// client has no REST client (a fake clientset).
func serverOf(client kubernetes.Interface) string {
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return ""
	}
	u := rc.Get().URL()
	return u.Scheme + "://" + u.Host
}

// unreachableBackoff spaces the retries of retryUnreachable.
var unreachableBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 10 * time.Second}

// retryUnreachable calls request, which does what, until it succeeds or
// fails with the API server's answer (isAnswer), and returns that error,
// or ctx's cause joined with the last error once ctx ends. It logs the
// first failure it retries, and the others at verbosity 2.
func retryUnreachable(ctx context.Context, what string, request func() error) error {
	backoff := unreachableBackoff
	for tries := 1; ; tries++ {
		err := request()
		if err == nil || isAnswer(err) {
			return err
		}
		if logger := klog.FromContext(ctx); tries == 1 {
			logger.Info("Waiting for the API server", "operation", what, "err", err)
		} else {
			logger.V(2).Info("Still waiting for the API server", "operation", what, "attempts", tries, "err", err)
		}
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %d attempts: %w", tries, errors.Join(context.Cause(ctx), err))
		case <-t.C:
		}
	}
}

// isAnswer tells whether err is the API server's definite answer, which a
// retry would only repeat: a 4xx status other than 401 (credentials may be
// on their way), 408 and 429. Everything else (no connection, timeouts,
// 5xx) may pass.
func isAnswer(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// StoreName returns the name of the store that holds gvr in the factory's
// database: "core/v1/configmaps", "apps/v1/deployments".
func StoreName(gvr schema.GroupVersionResource) string {
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	return group + "/" + gvr.Version + "/" + gvr.Resource
}

// NewFactoryForConfig is NewFactory with the typed, dynamic and metadata
// clients built from cfg (sharing one HTTP client), unless opts sets
// Dynamic or Metadata.
func NewFactoryForConfig(ctx context.Context, rawURL string, cfg *rest.Config, opts *FactoryOptions) (*Factory, error) {
	if cfg == nil {
		return nil, fmt.Errorf("informer: new factory: nil REST config")
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("informer: new factory: HTTP client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("informer: new factory: clientset: %w", err)
	}
	o := FactoryOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Dynamic == nil {
		if o.Dynamic, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
			return nil, fmt.Errorf("informer: new factory: dynamic client: %w", err)
		}
	}
	if o.Metadata == nil {
		if o.Metadata, err = metadata.NewForConfigAndClient(cfg, hc); err != nil {
			return nil, fmt.Errorf("informer: new factory: metadata client: %w", err)
		}
	}
	return NewFactory(ctx, rawURL, client, &o)
}

// InformerFor returns the informer of gvr's objects as the clientset's Go
// type (*corev1.ConfigMap for configmaps), creating it (and opening its
// store, named StoreName(gvr)) on first use. gvr must be a resource of
// client-go's clientset (DynamicInformerFor serves the others); its objects
// are listed and watched through the clientset's REST client, or through
// a fake clientset's reactors. With FactoryOptions.Namespace set, the
// clientset's discovery tells whether gvr is namespaced. ctx bounds that
// and opening the store. The informer starts with the next Start.
func (f *Factory) InformerFor(ctx context.Context, gvr schema.GroupVersionResource) (*Informer, error) {
	return f.informerFor(ctx, factoryKey{gvr, typedObjects})
}

// DynamicInformerFor returns the informer of gvr's objects as
// *unstructured.Unstructured, listed and watched through
// FactoryOptions.Dynamic: any resource, custom resources included. Its
// store is named StoreName(gvr)+"/unstructured". Namespaces are handled
// as by InformerFor.
func (f *Factory) DynamicInformerFor(ctx context.Context, gvr schema.GroupVersionResource) (*Informer, error) {
	return f.informerFor(ctx, factoryKey{gvr, unstructuredObjects})
}

// MetadataInformerFor returns the informer of gvr's objects' metadata
// (*metav1.PartialObjectMetadata), listed and watched through
// FactoryOptions.Metadata: only the metadata is sent and stored. Its store
// is named StoreName(gvr)+"/metadata". Namespaces are handled as by
// InformerFor.
func (f *Factory) MetadataInformerFor(ctx context.Context, gvr schema.GroupVersionResource) (*Informer, error) {
	return f.informerFor(ctx, factoryKey{gvr, metadataObjects})
}

func (f *Factory) informerFor(ctx context.Context, key factoryKey) (*Informer, error) {
	inf, err := f.set.get(ctx, key, key.kind.storeName(key.gvr), func(ctx context.Context) (*Informer, error) {
		return f.makeInformer(ctx, key)
	}, nil)
	if err != nil {
		return nil, err
	}
	return inf.(*Informer), nil
}

// makeInformer makes key's informer and opens its store. Discovery and
// the store's open may wait, for the API server or for another process
// holding the database: until ctx ends or Shutdown.
func (f *Factory) makeInformer(ctx context.Context, key factoryKey) (*Informer, error) {
	name := key.kind.storeName(key.gvr)
	lw, example, namespaced, err := f.listerWatcher(ctx, key)
	if err != nil {
		return nil, err
	}
	sopts := f.opts.Store
	sopts.Name = name
	sopts.Scope = f.scope(key, namespaced)
	inf, err := openInformer(ctx, f.url, lw, example, f.opts.Encryption, sopts, f.opts.Informer, nil)
	if err != nil {
		return nil, fmt.Errorf("informer: factory: informer for %s: %w", name, err)
	}
	return inf, nil
}

// openInformer is how every maker of informers (Factory, the typed
// factories, InformerConstructor) makes one: the informer of obj's
// objects, listed and watched through lw, on the store sopts names in the
// database at rawURL, with sopts.Codec set to obj's codec (encrypted under
// keys, if set) and iopts the template of its options (its Name, if set,
// prefixes the store's name). It starts the resume's first requests ahead
// of the store's open (startEarly) and opens the store with its tombstone
// store (openStores), asking reopen, if set, whether to try once more when
// the store is open in this process already (store.ErrInUse). On error,
// nothing stays open or running; an error after Shutdown (ctx's cause
// ErrStopped) wraps ErrStopped.
func openInformer(ctx context.Context, rawURL string, lw cache.ListerWatcherWithContext, obj runtime.Object, keys *indexer.KeyRing, sopts store.Options, iopts Options, reopen func() bool) (*Informer, error) {
	codec, err := indexer.NewCodec(obj)
	if err == nil && keys != nil {
		codec, err = indexer.NewEncryptedCodec(codec, keys)
	}
	if err != nil {
		return nil, err
	}
	sopts.Codec = codec
	if iopts.Reflector.Name == "" {
		iopts.Reflector.Name = sopts.Name
	}
	startEarly(ctx, rawURL, sopts, lw, &iopts)
	s, err := openStores(ctx, rawURL, sopts, &iopts)
	if errors.Is(err, store.ErrInUse) && reopen != nil && reopen() {
		s, err = openStores(ctx, rawURL, sopts, &iopts)
	}
	if err != nil {
		iopts.Reflector.Early.Stop()
		if cause := context.Cause(ctx); errors.Is(cause, ErrStopped) {
			err = errors.Join(err, cause)
		}
		return nil, err
	}
	if iopts.Name != "" {
		iopts.Name += "/" + sopts.Name
	} else {
		iopts.Name = sopts.Name
	}
	inf, err := New(lw, obj, s, &iopts)
	if err != nil {
		iopts.Reflector.Early.Stop()
		closeAll(s, iopts.Tombstones)
		return nil, err
	}
	return inf, nil
}

// TombstoneStoreSuffix ends the name of the store in which a Factory's or
// an InformerConstructor's informer keeps its tombstones
// (Options.Tombstones): "core/v1/configmaps/deleted" beside
// "core/v1/configmaps".
const TombstoneStoreSuffix = "/deleted"

// openStores opens the store sopts names at rawURL and, unless iopts keeps
// no tombstones, the informer's tombstone store beside it, which it sets
// as iopts.Tombstones: same database, codec, key function and scope, no
// indexes.
func openStores(ctx context.Context, rawURL string, sopts store.Options, iopts *Options) (store.Store, error) {
	s, err := store.Open(ctx, rawURL, &sopts)
	if err != nil || iopts.TombstoneRetention < 0 {
		return s, err
	}
	topts := sopts
	topts.Name += TombstoneStoreSuffix
	topts.Indexers = nil
	tombs, err := store.Open(ctx, rawURL, &topts)
	if err != nil {
		closeAll(s)
		return nil, fmt.Errorf("tombstone store: %w", err)
	}
	iopts.Tombstones = tombs
	return s, nil
}

// closeAll closes the stores that are not nil, on a path that already
// fails: their errors would hide the failure.
func closeAll(stores ...store.Store) {
	for _, s := range stores {
		if s != nil {
			_ = s.Close()
		}
	}
}

// listerWatcher returns the ListerWatcher of key's informer, an example of
// its objects, and whether it lists one namespace. Typed objects' kind
// comes from client-go's scheme and their requests go through a REST
// client (clientsetREST): no clientset method is looked up by name, which
// would keep the linker from dropping those a program does not call.
func (f *Factory) listerWatcher(ctx context.Context, key factoryKey) (cache.ListerWatcherWithContext, runtime.Object, bool, error) {
	gvr := key.gvr
	fail := func(format string, args ...interface{}) (cache.ListerWatcherWithContext, runtime.Object, bool, error) {
		return nil, nil, false, fmt.Errorf("informer: factory: resource %s: "+format, append([]interface{}{key.kind.storeName(gvr)}, args...)...)
	}
	if gvr.Version == "" || gvr.Resource == "" {
		return fail("version and resource are required")
	}
	var gvk schema.GroupVersionKind
	switch {
	case key.kind == typedObjects:
		var err error
		if gvk, err = builtinKind(gvr); err != nil {
			return fail("%w", err)
		}
		if f.rest == nil && f.fake == nil {
			return fail("the clientset has no REST client (CoreV1().RESTClient() is nil)")
		}
	case key.kind == unstructuredObjects && (f.opts.Dynamic == nil || typednil.Is(f.opts.Dynamic)):
		return fail("no dynamic client (FactoryOptions.Dynamic, or NewFactoryForConfig)")
	case key.kind == metadataObjects && (f.opts.Metadata == nil || typednil.Is(f.opts.Metadata)):
		return fail("no metadata client (FactoryOptions.Metadata, or NewFactoryForConfig)")
	}
	namespaced := false
	if f.opts.Namespace != "" {
		if err := ctx.Err(); err != nil {
			return fail("%w", err)
		}
		r, err := discoverResource(ctx, discovery.ToDiscoveryInterfaceWithContext(f.client.Discovery()), gvr)
		if err != nil {
			return fail("%w", err)
		}
		namespaced = r.Namespaced
	}
	ns := ""
	if namespaced {
		ns = f.opts.Namespace
	}
	switch key.kind {
	case typedObjects:
		example, err := scheme.Scheme.New(gvk)
		if err != nil {
			return fail("%w", err)
		}
		if f.rest == nil {
			return &fakeClientLW{client: f.fake, gvr: gvr, gvk: gvk, namespace: ns, tweak: f.tweak}, example, namespaced, nil
		}
		m := fixedMapping{resource: gvr.Resource, namespaced: namespaced, client: f.rest, absPath: "/apis/" + gvr.Group + "/" + gvr.Version}
		if gvr.Group == "" {
			m.absPath = "/api/" + gvr.Version
		}
		return &restLW{mapper: m, codecs: clientsetCodecs, gvk: gvk, namespace: ns, tweak: f.tweak}, example, namespaced, nil
	case unstructuredObjects:
		ri := f.opts.Dynamic.Resource(gvr).Namespace(ns)
		return &tweakedLW{list: listOf(ri.List), watch: ri.Watch, tweak: f.tweak}, &unstructured.Unstructured{}, namespaced, nil
	}
	ri := f.opts.Metadata.Resource(gvr).Namespace(ns)
	return &tweakedLW{list: listOf(ri.List), watch: ri.Watch, tweak: f.tweak}, &metav1.PartialObjectMetadata{}, namespaced, nil
}

// listOf turns a client's List, which returns its own list type, into one
// returning a runtime.Object.
func listOf[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) }
}

// discoverResource returns gvr from d's discovery of its group and
// version, waiting for an unreachable API server within ctx.
func discoverResource(ctx context.Context, d discovery.DiscoveryInterfaceWithContext, gvr schema.GroupVersionResource) (metav1.APIResource, error) {
	var list *metav1.APIResourceList
	err := retryUnreachable(ctx, "discovery of "+gvr.GroupVersion().String(), func() (err error) {
		list, err = d.ServerResourcesForGroupVersionWithContext(ctx, gvr.GroupVersion().String())
		return err
	})
	if err != nil {
		return metav1.APIResource{}, fmt.Errorf("discovery of %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return r, nil
		}
	}
	return metav1.APIResource{}, fmt.Errorf("discovery of %s: the API server does not serve %q", gvr.GroupVersion(), gvr.Resource)
}

// tweakedLW lists and watches through two functions, after applying the
// factory's selectors to the options.
type tweakedLW struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	tweak func(*metav1.ListOptions)
}

func (l *tweakedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.tweak(&opts)
	return l.list(ctx, opts)
}

func (l *tweakedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.tweak(&opts)
	return l.watch(ctx, opts)
}

// scope is the fingerprint a store records of what it caches.
func (f *Factory) scope(key factoryKey, namespaced bool) string {
	ns := ""
	if namespaced {
		ns = f.opts.Namespace
	}
	scope := fmt.Sprintf("cluster=%s;resource=%s;namespace=%s;labels=%s;fields=%s",
		f.cluster, key.kind.storeName(key.gvr), ns, f.opts.LabelSelector, f.opts.FieldSelector)
	if f.opts.Store.Scope != "" {
		// Last, and only when set: scopes recorded before it existed
		// stay equal.
		scope += ";scope=" + f.opts.Store.Scope
	}
	return scope
}

func (f *Factory) tweak(o *metav1.ListOptions) {
	if f.opts.LabelSelector != "" {
		o.LabelSelector = f.opts.LabelSelector
	}
	if f.opts.FieldSelector != "" {
		o.FieldSelector = f.opts.FieldSelector
	}
}

// Start runs, until ctx is done or Shutdown, every informer created so far
// that is not running yet. Call it again after creating more informers.
func (f *Factory) Start(ctx context.Context) { f.set.start(ctx) }

// WaitForCacheSync waits until every informer Start started has synced or
// stopped (its start failed, or Shutdown), or ctx is done, and reports which
// have synced. A resource with informers of several kinds (typed, dynamic,
// metadata) is reported synced when all of them are.
func (f *Factory) WaitForCacheSync(ctx context.Context) map[schema.GroupVersionResource]bool {
	synced, _ := f.set.waitForCacheSync(ctx)
	out := make(map[schema.GroupVersionResource]bool, len(synced))
	for key, ok := range synced {
		if prev, seen := out[key.gvr]; seen {
			ok = ok && prev
		}
		out[key.gvr] = ok
	}
	return out
}

// CheckCommits is Informer.CheckCommits over every informer the factory
// made: nil while all of their commits get through, else the errors of
// those whose do not, joined. It is a liveness check for the process.
func (f *Factory) CheckCommits(maxFailing time.Duration) error {
	return f.set.checkCommits(maxFailing)
}

// Shutdown stops the informers Start started, waits for them to return,
// closes the stores of every informer the factory made, which then cannot
// run any more, and then the database (see FactoryStoreName). Calls of
// InformerFor (and its kinds) still making an informer end with ErrStopped,
// and Shutdown waits for them. The factory cannot be used afterwards.
// Shutdown may be called again, and concurrently: every call returns once
// the first is over, with its result.
//
// As with client-go's SharedInformerFactory, an informer the caller runs
// itself (its Run, not Start) is neither stopped nor waited for. Its store
// is closed when its Run returns (an error is then logged).
//
// Reads after Shutdown: a lister (or GetStore, GetIndexer) of a closed
// store finds no objects (List, ListKeys) and its other reads fail with
// store.ErrClosed; the first such read of each informer is logged at error
// level. client-go's informers keep answering with their last state; these
// do not, because Shutdown releases the database for the next process (the
// new pod of a rolling update waits for its lock), and an empty List taken
// for "no objects" could make a worker delete what it owns. Stop the
// workers before calling Shutdown.
func (f *Factory) Shutdown() error {
	// The database last: it stays open while the informers' stores close.
	return f.set.shutdown(func() error {
		if f.held == nil {
			return nil
		}
		if err := f.held.Close(); err != nil {
			return fmt.Errorf("close store %s: %w", FactoryStoreName, err)
		}
		return nil
	})
}

// earlySchemes are the backends whose open is worth overlapping with the
// resume's first requests: they read and decode every object from disk,
// and list their stores' metadata cheaply in a live view.
var earlySchemes = map[string]bool{"bolt": true, "badger": true}

// startEarly starts the probe and the catch-up watch of the store that
// sopts names in the database at rawURL, through lw, before the store is
// opened (invariant 10), when the database (which the caller holds open)
// records a resume point for that store in the same scope; it sets
// iopts.Reflector.Early. It does nothing otherwise: the informer's
// reflector then probes and watches when it runs.
func startEarly(ctx context.Context, rawURL string, sopts store.Options, lw cache.ListerWatcherWithContext, iopts *Options) {
	if u, err := url.Parse(rawURL); err != nil || !earlySchemes[u.Scheme] || iopts.Reflector.Early != nil {
		return
	}
	var info *store.Info
	err := store.LiveView(ctx, rawURL, func(v store.RawView) error {
		entries, err := v.ListStores(ctx)
		for _, e := range entries {
			if e.Err == nil && e.Info.Name == sopts.Name {
				info = &e.Info
			}
		}
		return err
	})
	if err != nil || info == nil || info.ResourceVersion == "" || info.Reset != "" || info.Scope != sopts.Scope {
		return
	}
	ropts := iopts.Reflector
	if ropts.Clock == nil {
		ropts.Clock = iopts.Clock
	}
	if e, err := reflector.StartEarly(ctx, lw, ropts, info.ResourceVersion); err == nil {
		iopts.Reflector.Early = e
	}
}
