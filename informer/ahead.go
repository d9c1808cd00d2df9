package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/store"
)

// Resuming ahead (see ConstructorOptions.ResumeOnDemand): a resumed
// informer syncs by a bookmark a second or two after its watch opens, and a
// controller-runtime cache of several namespaces asks for each namespace's
// informer once the previous one synced; informers started ahead wait for
// their bookmarks together instead of one after another.

// aheadClaimWindow is how long an informer started ahead runs without being
// asked for before it is stopped: a namespace the controller no longer
// watches is not watched for ever.
const aheadClaimWindow = time.Minute

// ahead is an informer the constructor started before it was asked for.
type ahead struct {
	name    string
	request string // the list request it makes, as listRequest.request
	resync  time.Duration
	// indexers and transform are those it was started with, the first
	// informer's, compared by identity with the asker's.
	indexers  cache.Indexers
	transform cache.TransformFunc

	// ready is closed once inf is set, or left nil because starting
	// failed (its store is then closed).
	ready  chan struct{}
	inf    *Informer
	cancel context.CancelFunc // stops inf's Run
	// errHandler is the watch error handler set through the informer
	// NewInformer returned; nil until then.
	errHandler atomic.Pointer[cache.WatchErrorHandlerWithContext]
	claimed    bool // under the constructor's mu, once NewInformer took it
}

// resumeSiblings starts ahead the informers of first's type and selectors
// in the other namespaces whose stores the database holds with a resume
// point, unless they are open already, once per type and selectors.
func (c *InformerConstructor) resumeSiblings(ctx context.Context, first *Informer, lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers, base string, req listRequest) {
	family := base + "|" + req.server + "|" + req.selectors
	c.mu.Lock()
	if c.closed || c.families[family] {
		c.mu.Unlock()
		return
	}
	c.families[family] = true
	c.mu.Unlock()

	logger := klog.FromContext(ctx)
	var entries []store.StoreEntry
	err := store.LiveView(ctx, c.url, func(v store.RawView) error {
		var err error
		entries, err = v.ListStores(ctx)
		return err
	})
	if err != nil {
		logger.V(2).Info("Not resuming other namespaces' informers ahead: cannot list the database's stores", "err", err)
		return
	}
	first.mu.Lock()
	transform := first.transform
	first.mu.Unlock()
	for _, e := range entries {
		ns, ok := strings.CutPrefix(e.Info.Name, base+"@ns=")
		if !ok || e.Err != nil || e.Info.ResourceVersion == "" {
			continue
		}
		ns, _, _ = strings.Cut(ns, "@")
		if ns == req.namespace || ns == "" {
			continue
		}
		sib := req.inNamespace(ns)
		if e.Info.Name != base+sib.nameSuffix() || e.Info.Scope != c.scopeOf(base, sib) {
			// Another selector, server or cluster: not this family's.
			continue
		}
		c.startAhead(ctx, lw, obj, resync, indexers, transform, base, req, sib)
	}
}

// startAhead starts the informer of sib (the request first made, in another
// namespace) ahead, unless its store is open or being opened.
func (c *InformerConstructor) startAhead(ctx context.Context, lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers, transform cache.TransformFunc, base string, first, sib listRequest) {
	name := base + sib.nameSuffix()
	ah := &ahead{name: name, request: sib.request, resync: resync, indexers: indexers, transform: transform, ready: make(chan struct{})}
	c.mu.Lock()
	if c.closed || c.opening[name] > 0 || c.aheads[name] != nil || c.madeNamed(name) {
		c.mu.Unlock()
		return
	}
	c.aheads[name] = ah
	c.mu.Unlock()

	logger := klog.FromContext(ctx)
	fail := func(err error) {
		logger.V(2).Info("Not resuming an informer ahead", "store", name, "err", err)
		c.mu.Lock()
		delete(c.aheads, name)
		c.mu.Unlock()
		close(ah.ready)
	}
	moved := namespaceRewriter(lw, first.namespace, sib.namespace)
	if !routedTo(moved, sib.request) {
		// Requests that do not all go through the constructor's
		// transport would fill the store with another namespace's
		// objects.
		fail(errors.New("its ListerWatcher does not send its list and watch through InformerConstructor.Config"))
		return
	}
	iopts := c.opts.Informer
	iopts.Transform = transform
	if h := iopts.WatchErrorHandler; h != nil {
		ah.errHandler.Store(&h)
	}
	iopts.WatchErrorHandler = ah.watchError
	inf, err := c.openInformer(moved, obj, resync, indexers, base, sib, iopts)
	if err != nil {
		fail(err)
		return
	}
	inf.startedAhead = true
	inf.hold = make(chan struct{})
	// Run outlives the first informer's context only once claimed: it
	// keeps its values (the logger), not its cancellation.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.mu.Lock()
	closed := c.closed
	if !closed {
		ah.cancel = cancel
		c.started = append(c.started, ah)
	}
	c.mu.Unlock()
	if closed {
		// Close ran meanwhile, and closed the store (the informer was
		// among those it made) or will.
		cancel()
		_ = inf.closeStore("informer constructor: close")
		fail(fmt.Errorf("the informer constructor is closed"))
		return
	}
	ah.inf = inf
	close(ah.ready)
	c.wg.Go(func() { inf.RunWithContext(runCtx) })
	c.wg.Go(func() {
		t := time.NewTimer(c.claimWindow)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-inf.ended:
		}
		c.mu.Lock()
		unclaimed := !ah.claimed
		if unclaimed {
			delete(c.aheads, name)
		}
		c.mu.Unlock()
		if unclaimed {
			// Its store is closed by the next NewInformer of its scope
			// (retire) or by Close.
			cancel()
		}
	})
	logger.V(2).Info("Resuming an informer ahead of its request", "store", name)
}

// watchError passes a watch error to the handler set through the informer
// NewInformer returned, or client-go's default one before.
func (ah *ahead) watchError(ctx context.Context, r *cache.Reflector, err error) {
	if h := ah.errHandler.Load(); h != nil && *h != nil {
		(*h)(ctx, r, err)
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// claimAhead returns the informer started ahead for name, if there is one
// started as the caller asks (the same request, resync period and
// indexers). ok is false when the caller must make the informer itself.
// The caller counts name in c.opening.
func (c *InformerConstructor) claimAhead(name string, req listRequest, lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) (cache.SharedIndexInformer, bool) {
	c.mu.Lock()
	ah := c.aheads[name]
	if ah != nil {
		ah.claimed = true
		delete(c.aheads, name)
	}
	c.mu.Unlock()
	if ah == nil {
		return nil, false
	}
	<-ah.ready
	if ah.inf == nil {
		return nil, false
	}
	// A resync period may differ (controller-runtime jitters each
	// informer's), but not whether there is one: an informer started
	// without cannot start resyncing.
	if ah.request != req.request || (ah.resync == 0) != (resync == 0) || !sameIndexers(ah.indexers, indexers) || ah.inf.IsStopped() {
		c.release(ah, "it was started otherwise than now asked for")
		return nil, false
	}
	return &aheadInformer{c: c, ah: ah, inner: ah.inf, lw: lw, obj: obj, resync: resync, indexers: indexers}, true
}

// release stops the informer started ahead and closes its store, so that
// an informer made anew can open it.
func (c *InformerConstructor) release(ah *ahead, why string) {
	ah.cancel()
	<-ah.inf.ended
	c.mu.Lock()
	c.made = slices.DeleteFunc(c.made, func(inf *Informer) bool { return inf == ah.inf })
	c.mu.Unlock()
	if err := ah.inf.closeStore("informer constructor: release an informer started ahead"); err != nil {
		klog.Background().Error(err, "Closing the store of an informer started ahead failed", "store", ah.name)
	}
	klog.Background().V(2).Info("Stopped an informer started ahead", "store", ah.name, "reason", why)
}

// madeNamed reports whether the constructor made an informer on the store
// named name that has not stopped. The caller holds mu.
func (c *InformerConstructor) madeNamed(name string) bool {
	for _, inf := range c.made {
		if inf.Store().Info().Name == name && !inf.IsStopped() {
			return true
		}
	}
	return false
}

// sameIndexers reports whether a and b have the same names and the same
// functions (the same values, see sameFunc).
func sameIndexers(a, b cache.Indexers) bool {
	if len(a) != len(b) {
		return false
	}
	for name, f := range a {
		g, ok := b[name]
		if !ok || !sameFunc(f, g) {
			return false
		}
	}
	return true
}

// sameFunc reports whether f and g are the same function value: the same
// function, or the same closure (not one made by the same code, which may
// capture other values). A func value is a pointer to its closure.
func sameFunc[F any](f, g F) bool {
	if reflect.ValueOf(f).Kind() != reflect.Func {
		return false
	}
	return *(*unsafe.Pointer)(unsafe.Pointer(&f)) == *(*unsafe.Pointer)(unsafe.Pointer(&g))
}

// aheadInformer is the informer NewInformer returns for one started ahead,
// whose lifetime becomes that of the Run it is given. It commits nothing
// until it is known to run with its asker's transform (SetTransform, or
// none if the asker uses it without one), as what it queued was
// transformed by the first informer's; if they differ, it is stopped and
// an informer made anew on its store.
type aheadInformer struct {
	c  *InformerConstructor
	ah *ahead
	// what NewInformer was given, to make the informer anew
	lw       cache.ListerWatcher
	obj      runtime.Object
	resync   time.Duration
	indexers cache.Indexers

	mu      sync.Mutex
	inner   cache.SharedIndexInformer // ah.inf, or the one made anew
	decided bool                      // inner is final
}

var _ cache.SharedIndexInformer = (*aheadInformer)(nil)

// get returns the informer, deciding with no transform if SetTransform was
// not called: client-go's informer transforms nothing unless told.
func (a *aheadInformer) get() cache.SharedIndexInformer {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.decided {
		_ = a.decideLocked(nil)
	}
	return a.inner
}

// decideLocked keeps the informer started ahead if t is the transform it
// runs with, letting it commit, or else makes the informer anew with t.
func (a *aheadInformer) decideLocked(t cache.TransformFunc) error {
	a.decided = true
	if (t == nil && a.ah.transform == nil) || (t != nil && a.ah.transform != nil && sameFunc(t, a.ah.transform)) {
		a.ah.inf.adoptResync(a.resync)
		close(a.ah.inf.hold)
		return nil
	}
	a.c.release(a.ah, "its asker set another transform")
	// If the informer cannot be made anew, what takes its place is what
	// NewInformer would have returned: with FallBackToMemory, client-go's
	// in-memory informer, which takes the transform below.
	inner, err := a.c.newInformer(a.lw, a.obj, a.resync, a.indexers, false)
	if err != nil {
		inner = a.c.unavailable(a.lw, a.obj, a.resync, a.indexers, err)
	}
	a.inner = inner
	if h := a.ah.errHandler.Load(); h != nil && *h != nil {
		if err := inner.SetWatchErrorHandlerWithContext(*h); err != nil {
			return err
		}
	}
	return inner.SetTransform(t)
}

// SetTransform sets the informer's transform: see aheadInformer. Once the
// informer is decided, it is the informer's SetTransform.
func (a *aheadInformer) SetTransform(t cache.TransformFunc) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.decided {
		return a.decideLocked(t)
	}
	if a.inner == cache.SharedIndexInformer(a.ah.inf) {
		return fmt.Errorf("informer: set transform: %w", ErrStarted)
	}
	return a.inner.SetTransform(t)
}

func (a *aheadInformer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	if handler == nil {
		return a.SetWatchErrorHandlerWithContext(nil)
	}
	return a.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { handler(r, err) })
}

func (a *aheadInformer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inner != cache.SharedIndexInformer(a.ah.inf) {
		return a.inner.SetWatchErrorHandlerWithContext(handler)
	}
	a.ah.errHandler.Store(&handler)
	return nil
}

func (a *aheadInformer) Run(stopCh <-chan struct{}) {
	a.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer made anew, or, for the one started
// ahead, returns once ctx ended and it stopped (or it stopped by itself).
func (a *aheadInformer) RunWithContext(ctx context.Context) {
	inner := a.get()
	if inner != cache.SharedIndexInformer(a.ah.inf) {
		inner.RunWithContext(ctx)
		return
	}
	select {
	case <-ctx.Done():
	case <-a.ah.inf.ended:
	}
	a.ah.cancel()
	<-a.ah.inf.ended
}

func (a *aheadInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return a.get().AddEventHandler(h)
}

func (a *aheadInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, p time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return a.get().AddEventHandlerWithResyncPeriod(h, p)
}

func (a *aheadInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return a.get().AddEventHandlerWithOptions(h, o)
}

func (a *aheadInformer) RemoveEventHandler(r cache.ResourceEventHandlerRegistration) error {
	return a.get().RemoveEventHandler(r)
}

func (a *aheadInformer) GetStore() cache.Store               { return a.get().GetStore() }
func (a *aheadInformer) GetIndexer() cache.Indexer           { return a.get().GetIndexer() }
func (a *aheadInformer) GetController() cache.Controller     { return a.get().GetController() }
func (a *aheadInformer) HasSynced() bool                     { return a.get().HasSynced() }
func (a *aheadInformer) HasSyncedChecker() cache.DoneChecker { return a.get().HasSyncedChecker() }
func (a *aheadInformer) LastSyncResourceVersion() string     { return a.get().LastSyncResourceVersion() }
func (a *aheadInformer) IsStopped() bool                     { return a.get().IsStopped() }
func (a *aheadInformer) AddIndexers(indexers cache.Indexers) error {
	return a.get().AddIndexers(indexers)
}

// Of returns the *Informer that i is or stands for, and whether there is
// one: InformerConstructor.NewInformer returns an informer started ahead
// behind a type of its own.
func Of(i cache.SharedIndexInformer) (*Informer, bool) {
	if a, ok := i.(*aheadInformer); ok {
		a.mu.Lock()
		i = a.inner
		a.mu.Unlock()
	}
	inf, ok := i.(*Informer)
	return inf, ok
}

// namespaceKey is the context key under which namespaceRewriter asks the
// constructor's transport to send a request to another namespace.
type namespaceKey struct{}

// namespaceMove is a request's path segment and the one to send instead.
type namespaceMove struct{ from, to string }

// namespaceRewriter returns lw, whose requests the constructor's transport
// sends to namespace to instead of from: the same client, decoding and
// selectors as controller-runtime built for from.
func namespaceRewriter(lw cache.ListerWatcher, from, to string) cache.ListerWatcherWithContext {
	return rewritingLW{ListerWatcherWithContext: withContext(lw), move: namespaceMove{from: "/namespaces/" + from + "/", to: "/namespaces/" + to + "/"}}
}

type rewritingLW struct {
	cache.ListerWatcherWithContext
	move namespaceMove
}

func (r rewritingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return r.ListerWatcherWithContext.ListWithContext(context.WithValue(ctx, namespaceKey{}, r.move), o)
}

func (r rewritingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return r.ListerWatcherWithContext.WatchWithContext(context.WithValue(ctx, namespaceKey{}, r.move), o)
}

// routedTo reports whether both the list and the watch of lw reach the
// constructor's transport as requests of want (see listRequest.request),
// asking each with a context the transport answers without sending.
func routedTo(lw cache.ListerWatcherWithContext, want string) bool {
	calls := []func(ctx context.Context) error{
		func(ctx context.Context) error {
			_, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 1, ResourceVersion: "0"})
			return err
		},
		func(ctx context.Context) error {
			w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true})
			if err == nil {
				w.Stop()
			}
			return err
		},
	}
	for _, call := range calls {
		if u, _ := probed(call); u == nil || parseListRequest(u).request != want {
			return false
		}
	}
	return true
}

// moveNamespace rewrites the path of a request made by namespaceRewriter's
// ListerWatcher; it fails a request whose path does not hold the namespace
// it was made for, rather than send it where it was not meant to go.
func moveNamespace(req *http.Request) (*http.Request, error) {
	m, ok := req.Context().Value(namespaceKey{}).(namespaceMove)
	if !ok {
		return req, nil
	}
	i := strings.LastIndex(req.URL.Path, m.from)
	if i < 0 {
		return nil, errors.New("informer: request of an informer started ahead: its path has not the namespace it was made for")
	}
	moved := req.Clone(req.Context())
	moved.URL.Path = req.URL.Path[:i] + m.to + req.URL.Path[i+len(m.from):]
	moved.URL.RawPath = ""
	return moved, nil
}
