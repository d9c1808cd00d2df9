package informer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/typednil"
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
	// served (DESIGN invariant 5). Default: "kube-system/<uid>" from the
	// kube-system namespace if it can be read, else "" (and a log line).
	Cluster string

	// Informer is the template of every informer's options. Each
	// informer's Name is its store's name ("core/v1/configmaps"), after
	// Informer.Name and a "/" when Informer.Name is set: informers sharing
	// Informer.Metrics report under distinct labels, and two factories
	// sharing one Metrics (two clusters) tell theirs apart by prefix.
	Informer Options

	// Encryption, when set, encrypts every store's objects at rest
	// (indexer.NewEncryptedCodec around the resource's codec). A database
	// written with encryption cannot be opened without it, nor the
	// reverse (store.ErrIncompatible). Default nil: plain text on disk.
	Encryption *indexer.KeyRing

	// Store is the template of every store's options (Durability,
	// LockTimeout, CacheSize, Indexers...). The factory sets Name (the
	// resource, "core/v1/configmaps"), Codec (chosen for the resource's
	// type), and Scope (cluster, resource, namespace and selectors).
	Store store.Options
}

// Factory makes informers for many resources of one cluster, all kept in
// one database (one URL), each in its own store named after its resource.
// Objects are listed and watched through a typed clientset.
//
// A Factory is safe for concurrent use.
type Factory struct {
	client  kubernetes.Interface
	url     string
	opts    FactoryOptions
	cluster string

	mu      sync.Mutex // guards entries, cancels and shutdown
	entries map[schema.GroupVersionResource]*factoryEntry
	cancels []context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
}

type factoryEntry struct {
	inf     *Informer
	started bool
}

// NewFactory returns a factory of informers that list and watch through
// client and keep their objects in the database at rawURL (see store.Open;
// the backend must be imported). ctx bounds the lookup of the cluster
// identity. opts may be nil.
func NewFactory(ctx context.Context, rawURL string, client kubernetes.Interface, opts *FactoryOptions) (*Factory, error) {
	if client == nil || typednil.Is(client) {
		return nil, fmt.Errorf("informer: new factory: nil clientset")
	}
	if err := checkURL(rawURL); err != nil {
		return nil, fmt.Errorf("informer: new factory: %w", err)
	}
	f := &Factory{client: client, url: rawURL, entries: map[schema.GroupVersionResource]*factoryEntry{}}
	if opts != nil {
		f.opts = *opts
	}
	if _, err := f.opts.Informer.withDefaults(); err != nil {
		return nil, fmt.Errorf("informer: new factory: %w", err)
	}
	f.cluster = f.opts.Cluster
	if f.cluster == "" {
		ns, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err == nil && ns.UID != "" {
			f.cluster = "kube-system/" + string(ns.UID)
		} else {
			klog.FromContext(ctx).Info("Cluster identity unknown: the kube-system namespace cannot be read; set FactoryOptions.Cluster so that stores are not reused across clusters", "err", err)
		}
	}
	return f, nil
}

// checkURL fails early on a database URL no registered backend serves.
func checkURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("database URL %q: %w", rawURL, err)
	}
	if !slices.Contains(store.Schemes(), u.Scheme) {
		return fmt.Errorf("database URL %q: no backend registered for scheme %q (forgotten import of github.com/informerdb/informerdb/store/%s?); registered: %v",
			rawURL, u.Scheme, u.Scheme, store.Schemes())
	}
	return nil
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

// InformerFor returns the informer of gvr, creating it (and opening its
// store) on first use. ctx bounds opening the store. The informer starts with
// the next Start.
func (f *Factory) InformerFor(ctx context.Context, gvr schema.GroupVersionResource) (*Informer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("informer: factory: informer for %s: %w", StoreName(gvr), ErrStopped)
	}
	if e, ok := f.entries[gvr]; ok {
		return e.inf, nil
	}
	lw, example, namespaced, err := typedListerWatcher(f.client, gvr, f.opts.Namespace, f.tweak)
	if err != nil {
		return nil, err
	}
	codec, err := codecFor(example, f.opts.Encryption)
	if err != nil {
		return nil, fmt.Errorf("informer: factory: informer for %s: %w", StoreName(gvr), err)
	}
	sopts := f.opts.Store
	sopts.Name = StoreName(gvr)
	sopts.Codec = codec
	sopts.Scope = f.scope(gvr, namespaced)
	s, err := store.Open(ctx, f.url, &sopts)
	if err != nil {
		return nil, fmt.Errorf("informer: factory: informer for %s: %w", StoreName(gvr), err)
	}
	iopts := f.opts.Informer
	iopts.Name = informerName(f.opts.Informer.Name, StoreName(gvr))
	if iopts.Reflector.Name == "" {
		iopts.Reflector.Name = StoreName(gvr)
	}
	inf, err := New(lw, example, s, iopts)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("informer: factory: informer for %s: %w", StoreName(gvr), err)
	}
	f.entries[gvr] = &factoryEntry{inf: inf}
	return inf, nil
}

// informerName is the Name of a factory-made informer.
func informerName(prefix, storeName string) string {
	if prefix == "" {
		return storeName
	}
	return prefix + "/" + storeName
}

// codecFor returns the codec of example's type, encrypted under keys when
// keys is not nil.
func codecFor(example interface{}, keys *indexer.KeyRing) (store.Codec, error) {
	codec, err := indexer.NewCodec(example)
	if err != nil || keys == nil {
		return codec, err
	}
	return indexer.NewEncryptedCodec(codec, keys)
}

// scope is the fingerprint a store records of what it caches.
func (f *Factory) scope(gvr schema.GroupVersionResource, namespaced bool) string {
	ns := ""
	if namespaced {
		ns = f.opts.Namespace
	}
	return fmt.Sprintf("cluster=%s;resource=%s;namespace=%s;labels=%s;fields=%s",
		f.cluster, StoreName(gvr), ns, f.opts.LabelSelector, f.opts.FieldSelector)
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
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	for _, e := range f.entries {
		if e.started {
			continue
		}
		e.started = true
		runCtx, cancel := context.WithCancel(ctx)
		f.cancels = append(f.cancels, cancel)
		inf := e.inf
		f.wg.Go(func() { inf.RunWithContext(runCtx) })
	}
}

// WaitForCacheSync waits until every informer Start started has synced or
// stopped (its start failed, or Shutdown), or ctx is done, and reports which
// have synced.
func (f *Factory) WaitForCacheSync(ctx context.Context) map[schema.GroupVersionResource]bool {
	f.mu.Lock()
	started := map[schema.GroupVersionResource]*Informer{}
	for gvr, e := range f.entries {
		if e.started {
			started[gvr] = e.inf
		}
	}
	f.mu.Unlock()
	out := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, inf := range started {
		select {
		case <-inf.HasSyncedChecker().Done():
			out[gvr] = true
		case <-inf.ended:
			// It will never sync: waiting for it would only wait for ctx.
			out[gvr] = inf.HasSynced()
		case <-ctx.Done():
			out[gvr] = inf.HasSynced()
		}
	}
	return out
}

// Shutdown stops the informers Start started, waits for them to return and
// closes the stores of every informer the factory made, which then cannot
// run any more. The factory cannot be used afterwards. It is idempotent.
//
// As with client-go's SharedInformerFactory, an informer the caller runs
// itself (its Run, not Start) is neither stopped nor waited for: the caller
// stops it. Its store is not closed under it but when its Run returns, after
// Shutdown has returned (an error closing it is logged, not returned).
func (f *Factory) Shutdown() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	for _, cancel := range f.cancels {
		cancel()
	}
	f.mu.Unlock()
	f.wg.Wait()
	var errs []error
	for _, e := range f.entries {
		// An informer the caller runs has its store closed when it ends.
		if err := e.inf.closeStore("factory: shutdown"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("informer: factory: shutdown: %w", err)
	}
	return nil
}

// typedLW lists and watches one resource through the List and Watch methods
// of a typed clientset's resource client, found by reflection.
type typedLW struct {
	list, watch reflect.Value
	tweak       func(*metav1.ListOptions)
}

var _ cache.ListerWatcherWithContext = (*typedLW)(nil)

func (l *typedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.tweak(&opts)
	out := l.list.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	obj, _ := out[0].Interface().(runtime.Object)
	return obj, nil
}

func (l *typedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.tweak(&opts)
	out := l.watch.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	w, _ := out[0].Interface().(watch.Interface)
	return w, nil
}

// typedListerWatcher finds gvr's client in a typed clientset: the group
// client is the method named after the group's first label and the version
// (CoreV1, AppsV1, RbacV1), the resource client the method whose lower-case
// name is the resource (ConfigMaps, Deployments). It returns a lister-watcher,
// an example object (the type Get returns) and whether the resource is
// namespaced.
func typedListerWatcher(client kubernetes.Interface, gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) (*typedLW, runtime.Object, bool, error) {
	fail := func(format string, args ...interface{}) (*typedLW, runtime.Object, bool, error) {
		return nil, nil, false, fmt.Errorf("informer: factory: resource %s: "+format, append([]interface{}{StoreName(gvr)}, args...)...)
	}
	if gvr.Version == "" || gvr.Resource == "" {
		return fail("version and resource are required")
	}
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	group, _, _ = strings.Cut(group, ".")
	gc, ok := callByLowerName(reflect.ValueOf(client), group+gvr.Version)
	if !ok {
		return fail("the clientset has no %s%s client (only built-in resources are supported)", group, gvr.Version)
	}
	m, ok := methodByLowerName(gc, gvr.Resource)
	if !ok {
		return fail("the %s/%s client has no resource %q", group, gvr.Version, gvr.Resource)
	}
	var rc reflect.Value
	namespaced := false
	switch t := m.Type(); {
	case t.NumIn() == 0 && t.NumOut() == 1:
		rc = m.Call(nil)[0]
	case t.NumIn() == 1 && t.In(0).Kind() == reflect.String && t.NumOut() == 1:
		namespaced = true
		rc = m.Call([]reflect.Value{reflect.ValueOf(namespace)})[0]
	default:
		return fail("unexpected client method signature %v", t)
	}
	list, watchM, get := rc.MethodByName("List"), rc.MethodByName("Watch"), rc.MethodByName("Get")
	if !list.IsValid() || !watchM.IsValid() || !get.IsValid() {
		return fail("the resource client lacks List, Watch or Get")
	}
	if t := list.Type(); t.NumIn() != 2 || t.NumOut() != 2 {
		return fail("unexpected List signature %v", t)
	}
	if t := watchM.Type(); t.NumIn() != 2 || t.NumOut() != 2 || t.Out(0) != reflect.TypeFor[watch.Interface]() {
		return fail("unexpected Watch signature %v", t)
	}
	gt := get.Type()
	if gt.NumOut() != 2 || gt.Out(0).Kind() != reflect.Pointer {
		return fail("unexpected Get signature %v", gt)
	}
	example, ok := reflect.New(gt.Out(0).Elem()).Interface().(runtime.Object)
	if !ok {
		return fail("%v is not a runtime.Object", gt.Out(0))
	}
	return &typedLW{list: list, watch: watchM, tweak: tweak}, example, namespaced, nil
}

// callByLowerName calls the method of v without arguments whose lower-case
// name is name.
func callByLowerName(v reflect.Value, name string) (reflect.Value, bool) {
	m, ok := methodByLowerName(v, name)
	if !ok || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return reflect.Value{}, false
	}
	return m.Call(nil)[0], true
}

func methodByLowerName(v reflect.Value, name string) (reflect.Value, bool) {
	name = strings.ToLower(name)
	t := v.Type()
	for i := 0; i < t.NumMethod(); i++ {
		if strings.ToLower(t.Method(i).Name) == name {
			return v.Method(i), true
		}
	}
	return reflect.Value{}, false
}
