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
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// NewInformerFunc is the type of controller-runtime's
// cache.Options.NewInformer (sigs.k8s.io/controller-runtime/pkg/cache).
type NewInformerFunc = func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer

// InformerConstructor makes informers on demand for callers that build them
// through a constructor, as controller-runtime does:
//
//	c, err := informer.NewInformerConstructor(ctx, "bolt:///var/lib/ctrl/cache.db", &informer.FactoryOptions{Cluster: "prod-1"})
//	mgr, err := ctrl.NewManager(c.WrapConfig(cfg), ctrl.Options{Cache: crcache.Options{NewInformer: c.NewInformer}})
//	defer c.Close() // after the manager stopped
//
// A constructor sees only a ListerWatcher, which hides what it lists: the
// namespace and the selectors are inside its functions. So that a store
// never holds the objects of two scopes, NewInformer asks the ListerWatcher
// for one page of its list with a context that the constructor's transport
// recognizes: the transport records the request's URL (the resource, the
// namespace, the label and field selectors) and answers it without sending
// it. That is why the REST config the caller's clients are built from must
// go through WrapConfig (or WrapTransport). The store is then named after
// the object's type and that request ("core/v1/ConfigMap" for a list of
// every namespace without selectors, "core/v1/ConfigMap@ns=team-a" for one
// namespace, with "@sel=<digest>" when selectors are set;
// "core/v1/ConfigMap/unstructured" and "core/v1/ConfigMap/metadata" for the
// unstructured and metadata-only informers of the type), and its scope
// records the request in full. Informers of a multi-namespace cache,
// created in a different order at each start, each find their own store. A
// namespace or selector change opens another store, which starts empty and
// lists; the store no informer opens any more stays in the database until
// it is removed (store.Drop, `snapshot drop`).
//
// When the scope cannot be told (the config was not wrapped, or the
// ListerWatcher does not list through it), or the store cannot be opened
// (another informer of the same scope has it open, the database is
// unusable), NewInformer logs why and returns client-go's in-memory
// informer: the controller works, without persistence, and no store is
// shared by two scopes.
//
// An InformerConstructor is safe for concurrent use.
type InformerConstructor struct {
	url  string
	opts FactoryOptions

	// wrapped is set by WrapConfig and WrapTransport: until then no
	// ListerWatcher lists through the constructor's transport, and
	// NewInformer does not ask (the request would reach the API server).
	wrapped atomic.Bool

	mu     sync.Mutex  // guards made and closed
	made   []*Informer // every informer made; Close closes their stores
	closed bool        // by Close: NewInformer makes client-go's informers
}

// NewInformerConstructor returns a constructor whose informers keep their
// objects in the database at rawURL. FactoryOptions.Namespace and the
// selectors are ignored (the ListerWatcher applies them); Cluster, Informer
// and Store are used as by a Factory. opts may be nil.
func NewInformerConstructor(ctx context.Context, rawURL string, opts *FactoryOptions) (*InformerConstructor, error) {
	c := &InformerConstructor{url: rawURL}
	if opts != nil {
		c.opts = *opts
	}
	if _, err := c.opts.Informer.withDefaults(); err != nil {
		return nil, fmt.Errorf("informer: new informer constructor: %w", err)
	}
	if err := checkURL(rawURL); err != nil {
		return nil, fmt.Errorf("informer: new informer constructor: %w", err)
	}
	return c, nil
}

// WrapConfig returns a copy of cfg whose transport lets the constructor
// see the scope of each ListerWatcher it is given (see InformerConstructor).
// Build the clients whose ListerWatchers reach NewInformer from it (for
// controller-runtime: the config passed to ctrl.NewManager). Requests other
// than the constructor's own are passed on unchanged.
func (c *InformerConstructor) WrapConfig(cfg *rest.Config) *rest.Config {
	c.wrapped.Store(true)
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(c.WrapTransport)
	return cfg
}

// WrapTransport wraps rt as WrapConfig does, for callers that assemble
// their transports themselves (rest.Config.Wrap, transport.Config).
func (c *InformerConstructor) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	c.wrapped.Store(true)
	return &scopeTransport{next: rt}
}

// NewInformer has the signature of controller-runtime's
// cache.Options.NewInformer. It cannot return an error: if the informer's
// scope cannot be told or its store cannot be opened, it logs why and
// returns client-go's in-memory informer, so the controller still works,
// without persistence.
func (c *InformerConstructor) NewInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	inf, err := c.newInformer(lw, obj, resync, indexers)
	if err != nil {
		klog.Background().Error(err, "Falling back to client-go's in-memory informer")
		return cache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	return inf
}

func (c *InformerConstructor) newInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) (*Informer, error) {
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
	codec, err := codecFor(obj, c.opts.Encryption)
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", base, err)
	}
	req, err := c.probeScope(lw)
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", base, err)
	}
	name := base + req.nameSuffix()
	sopts := c.opts.Store
	sopts.Name = name
	sopts.Codec = codec
	sopts.Indexers = indexers
	sopts.Scope = fmt.Sprintf("cluster=%s;server=%s;type=%s;request=%s;scope=%s",
		c.opts.Cluster, req.server, base, req.request, c.opts.Store.Scope)
	iopts := c.opts.Informer
	s, err := openStores(context.Background(), c.url, sopts, &iopts)
	if errors.Is(err, store.ErrInUse) && c.retire(name) {
		// controller-runtime's RemoveInformer stops an informer and the
		// next Get makes a new one of the same scope: its stores are free
		// once the stopped informer let go of them.
		s, err = openStores(context.Background(), c.url, sopts, &iopts)
	}
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
	}
	iopts.ResyncPeriod = resync
	iopts.Name = informerName(c.opts.Informer.Name, name)
	if iopts.Reflector.Name == "" {
		iopts.Reflector.Name = name
	}
	inf, err := New(cache.ToListerWatcherWithContext(lw), obj, s, iopts)
	if err != nil {
		closeAll(s, iopts.Tombstones)
		return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
	}
	c.mu.Lock()
	closed = c.closed
	if !closed {
		c.made = append(c.made, inf)
	}
	c.mu.Unlock()
	if closed {
		// Close ran meanwhile: nothing would close this store.
		err := fmt.Errorf("informer: new informer %s: the informer constructor is closed", name)
		if cerr := inf.closeStore("informer constructor: close"); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return inf, nil
}

// retire closes the store named name of an informer the constructor made
// that stopped, waiting (up to probeTimeout) for it to end, and forgets
// the informer. It reports whether it closed one.
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
		// Its Run does not return: keep it for Close, or, if Close ran
		// meanwhile, have its store closed when it returns.
		c.mu.Lock()
		closed := c.closed
		if !closed {
			c.made = append(c.made, stopped)
		}
		c.mu.Unlock()
		if closed {
			_ = stopped.closeStore("informer constructor: close")
		}
		return false
	}
	if err := stopped.closeStore("informer constructor: new informer of the same scope"); err != nil {
		klog.Background().Error(err, "Closing the store of a stopped informer failed", "store", name)
	}
	return true
}

// Close closes every store the constructor opened. Call it after the
// informers stopped; NewInformer then returns client-go's informers. An
// informer that never ran leaves its Metrics and can no longer run. The
// store of an informer still running is not closed under it but when its
// Run returns (an error closing it is then logged, not returned).
func (c *InformerConstructor) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
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
// constructor made and has not closed: nil while all of their commits get
// through, else the errors of those whose do not, joined. Add it to the
// manager as a liveness check:
//
//	mgr.AddHealthzCheck("informerdb", func(*http.Request) error { return c.CheckCommits(2 * time.Minute) })
func (c *InformerConstructor) CheckCommits(maxFailing time.Duration) error {
	c.mu.Lock()
	infs := slices.Clone(c.made)
	c.mu.Unlock()
	return checkCommits(infs, maxFailing)
}

// probeTimeout bounds the constructor's scope request. Its own transport
// answers it at once; the bound is for a client-side rate limiter that makes
// it wait for its turn, or a ListerWatcher that sends it elsewhere.
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
// on.
type scopeTransport struct{ next http.RoundTripper }

func (t *scopeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, ok := req.Context().Value(probeKey{}).(*scopeProbe)
	if !ok {
		return t.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper closes the body, even on error
	}
	p.mu.Lock()
	if p.url == nil {
		u := *req.URL
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
}

// probeScope learns what lw lists by asking it for one object with a context
// that the constructor's transport recognizes (see InformerConstructor).
func (c *InformerConstructor) probeScope(lw cache.ListerWatcher) (listRequest, error) {
	if !c.wrapped.Load() {
		return listRequest{}, errors.New("its scope cannot be told: build the REST config of the clients that list (controller-runtime: the manager's) with InformerConstructor.WrapConfig")
	}
	p := &scopeProbe{}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), probeKey{}, p), probeTimeout)
	defer cancel()
	_, listErr := cache.ToListerWatcherWithContext(lw).ListWithContext(ctx, metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
	p.mu.Lock()
	u := p.url
	p.mu.Unlock()
	if u == nil {
		const cause = "its scope cannot be told: its ListerWatcher does not list through a transport of InformerConstructor.WrapConfig"
		if listErr != nil {
			return listRequest{}, fmt.Errorf("%s (its list failed: %w)", cause, listErr)
		}
		return listRequest{}, errors.New(cause)
	}
	return parseListRequest(u), nil
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
	r := listRequest{server: u.Scheme + "://" + u.Host, request: u.EscapedPath(), selectors: sel.Encode()}
	if r.selectors != "" {
		r.request += "?" + r.selectors
	}
	// A namespaced list is .../namespaces/<namespace>/<resource>.
	if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) >= 3 && parts[len(parts)-3] == "namespaces" {
		r.namespace = parts[len(parts)-2]
	}
	return r
}

// nameSuffix tells apart the stores of one type that list different
// things: "@ns=<namespace>", and "@sel=<digest of the selectors>". The
// store's scope holds the request in full, so two requests whose digests
// collide relist rather than share objects.
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
