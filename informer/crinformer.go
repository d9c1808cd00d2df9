package informer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store"
)

// NewInformerFunc is the type of controller-runtime's
// cache.Options.NewInformer (sigs.k8s.io/controller-runtime/pkg/cache).
type NewInformerFunc = func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer

// InformerConstructor makes informers on demand for callers that build them
// through a constructor, as controller-runtime does:
//
//	c, err := informer.NewInformerConstructor(ctx, "bolt:///var/lib/ctrl/cache.db", &informer.FactoryOptions{Cluster: "prod-1"})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: crcache.Options{NewInformer: c.NewInformer}})
//	defer c.Close() // after the manager stopped
//
// Each informer gets its own store in the database, named after its object
// type ("apps/v1/Deployment"; a second informer of the same type in the
// process, as a multi-namespace cache makes, gets "#2", and so on in the
// order they are created). The caller's ListerWatcher carries the namespace
// and selectors, which the constructor cannot see: the store scope records
// only FactoryOptions.Cluster and the type, so a change of namespaces or
// selectors needs another database (or Store.Scope in the options).
//
// An InformerConstructor is safe for concurrent use.
type InformerConstructor struct {
	url  string
	opts FactoryOptions

	mu    sync.Mutex // guards names and made
	names map[string]int
	made  []*Informer // every informer made; Close closes their stores
}

// NewInformerConstructor returns a constructor whose informers keep their
// objects in the database at rawURL. FactoryOptions.Namespace and the
// selectors are ignored (the ListerWatcher applies them); Cluster, Informer
// and Store are used as by a Factory. opts may be nil.
func NewInformerConstructor(ctx context.Context, rawURL string, opts *FactoryOptions) (*InformerConstructor, error) {
	c := &InformerConstructor{url: rawURL, names: map[string]int{}}
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

// NewInformer has the signature of controller-runtime's
// cache.Options.NewInformer. It cannot return an error: if the store cannot
// be opened, it logs the error and returns client-go's in-memory informer,
// so the controller still works, without persistence.
func (c *InformerConstructor) NewInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	inf, err := c.newInformer(lw, obj, resync, indexers)
	if err != nil {
		klog.Background().Error(err, "Falling back to client-go's in-memory informer")
		return cache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	return inf
}

func (c *InformerConstructor) newInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) (*Informer, error) {
	if lw == nil || obj == nil {
		return nil, fmt.Errorf("informer: new informer: nil ListerWatcher or object")
	}
	name := typeName(obj)
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		name = StoreName(gvks[0].GroupVersion().WithResource(gvks[0].Kind))
	} else if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		name = StoreName(gvk.GroupVersion().WithResource(gvk.Kind))
	}
	codec, err := codecFor(obj, c.opts.Encryption)
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// The n-th informer of a type is named by n, which is only taken once
	// it is made: a construction that fails must not shift the names of
	// the next ones, or after a restart in which it succeeds they would
	// open each other's stores.
	base, n := name, c.names[name]+1
	if n > 1 {
		name += "#" + strconv.Itoa(n)
	}
	sopts := c.opts.Store
	sopts.Name = name
	sopts.Codec = codec
	sopts.Indexers = indexers
	sopts.Scope = fmt.Sprintf("cluster=%s;type=%s;scope=%s", c.opts.Cluster, name, c.opts.Store.Scope)
	s, err := store.Open(context.Background(), c.url, &sopts)
	if err != nil {
		return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
	}
	iopts := c.opts.Informer
	iopts.ResyncPeriod = resync
	iopts.Name = informerName(c.opts.Informer.Name, name)
	if iopts.Reflector.Name == "" {
		iopts.Reflector.Name = name
	}
	inf, err := New(cache.ToListerWatcherWithContext(lw), obj, s, iopts)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("informer: new informer %s: %w", name, err)
	}
	c.names[base] = n
	c.made = append(c.made, inf)
	return inf, nil
}

// Close closes every store the constructor opened. Call it after the
// informers stopped. An informer that never ran leaves its Metrics and can
// no longer run. The store of an informer still running is not closed under
// it but when its Run returns (an error closing it is then logged, not
// returned).
func (c *InformerConstructor) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
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
