package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/informerdb/informerdb/informer"
)

// Shapes of RunMany: how many informers start together, and through what.
const (
	// ShapeFactory is five informers of one informer.Factory (ConfigMaps,
	// Secrets, ServiceAccounts, PodTemplates, LimitRanges of one
	// namespace), started by one Start; client-go's reference is its
	// SharedInformerFactory over the same resources.
	ShapeFactory = "factory"
	// ShapeCRCache is a controller-runtime cache of two namespaces
	// (cache.Options.DefaultNamespaces) whose informers an
	// informer.InformerConstructor makes, asked for ConfigMaps after it
	// started, as a controller's watch asks: its multi-namespace cache
	// gets each namespace's informer in turn, each returned once synced.
	// client-go's reference is the same cache with controller-runtime's
	// own informers.
	ShapeCRCache = "crcache"
)

// Shapes lists the shapes RunMany accepts.
var Shapes = []string{ShapeFactory, ShapeCRCache}

// ManyConfig configures RunMany.
type ManyConfig struct {
	// Shape is ShapeFactory or ShapeCRCache.
	Shape string
	// N is the number of objects of each informer.
	N int
	// Backend, Dir, Workers, Quiet, RestartPause and Log are as in Config.
	Backend      string
	Dir          string
	Workers      int
	Quiet        bool
	RestartPause time.Duration
	Log          io.Writer
	// Namespace prefixes the scenario's namespaces; default "many".
	Namespace string
	// StateCatchUp sets informer.ConstructorOptions.StateCatchUp
	// (ShapeCRCache only).
	StateCatchUp bool
}

// ManyResult is the outcome of RunMany: the phases measure the time from
// opening the database (informerdb) or creating the informers (client-go)
// until every informer and its handler synced; Cost sums every resource.
type ManyResult struct {
	Shape     string
	Informers int
	// N is the number of objects of each informer at the cold start.
	N int
	// Changes is per informer.
	Changes                 Changes
	ClientGo, Cold, Restart Phase
	Live                    bool
	// CatchUp is, per informer of the restart, when its reflector reached
	// the sync target, after the start of the phase.
	CatchUp []time.Duration
}

// manyResource is one resource of ShapeFactory, created through the
// dynamic client.
type manyResource struct {
	gvr schema.GroupVersionResource
	obj func(ns, name string) map[string]interface{}
}

var manyResources = []manyResource{
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, func(ns, name string) map[string]interface{} {
		return map[string]interface{}{"kind": "ConfigMap", "data": map[string]interface{}{"payload": payload, "data": "v1"}}
	}},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, func(ns, name string) map[string]interface{} {
		return map[string]interface{}{"kind": "Secret", "stringData": map[string]interface{}{"payload": payload}}
	}},
	{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, func(ns, name string) map[string]interface{} {
		return map[string]interface{}{"kind": "ServiceAccount"}
	}},
	{schema.GroupVersionResource{Version: "v1", Resource: "podtemplates"}, func(ns, name string) map[string]interface{} {
		return map[string]interface{}{"kind": "PodTemplate", "template": map[string]interface{}{
			"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c", "image": "example.com/c:1"}}},
		}}
	}},
	{schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}, func(ns, name string) map[string]interface{} {
		return map[string]interface{}{"kind": "LimitRange", "spec": map[string]interface{}{"limits": []interface{}{
			map[string]interface{}{"type": "Container", "max": map[string]interface{}{"cpu": "1"}},
		}}}
	}},
}

// RunMany is Run for several informers that start together: a cold start
// that fills the database, changes (1% of each informer's objects, at
// least 4) while stopped, a pause with the lease renewed (unless Quiet),
// client-go's cold start, and informerdb's restart.
func RunMany(ctx context.Context, cl *Cluster, cfg ManyConfig) (*ManyResult, error) {
	if cl.ReadOnly {
		return nil, fmt.Errorf("bench: run many: needs a cluster it may change (not a kubeconfig's)")
	}
	if cfg.N <= 0 {
		return nil, fmt.Errorf("bench: run many: N %d is not positive", cfg.N)
	}
	if cfg.Backend == "" {
		cfg.Backend = "bolt"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.RestartPause <= 0 {
		cfg.RestartPause = 3 * time.Second
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "many"
	}
	logf := logfTo(cfg.Log)
	url, cleanup, err := storeIn(&cfg.Dir, "informerdb-many-", cfg.Backend)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	dyn, err := dynamic.NewForConfig(cl.config)
	if err != nil {
		return nil, fmt.Errorf("bench: dynamic client: %w", err)
	}

	// targets are the (resource, namespace) pairs the informers list.
	type target struct {
		res manyResource
		ns  string
	}
	var (
		targets []target
		start   func(ctx context.Context, name string, persistent bool) (Phase, []time.Duration, error)
	)
	switch cfg.Shape {
	case ShapeFactory:
		ns := cfg.Namespace + "-factory"
		for _, r := range manyResources {
			targets = append(targets, target{r, ns})
		}
		gvrs := make([]schema.GroupVersionResource, len(manyResources))
		for i, r := range manyResources {
			gvrs[i] = r.gvr
		}
		start = func(ctx context.Context, name string, persistent bool) (Phase, []time.Duration, error) {
			if persistent {
				return runFactory(ctx, cl, name, url, ns, gvrs)
			}
			p, err := runClientGoFactory(ctx, cl, name, ns, gvrs)
			return p, nil, err
		}
	case ShapeCRCache:
		nss := []string{cfg.Namespace + "-cr-a", cfg.Namespace + "-cr-b"}
		for _, ns := range nss {
			targets = append(targets, target{manyResources[0], ns})
		}
		start = func(ctx context.Context, name string, persistent bool) (Phase, []time.Duration, error) {
			return runCRCache(ctx, cl, name, url, nss, persistent, cfg.StateCatchUp)
		}
	default:
		return nil, fmt.Errorf("bench: run many: shape %q: unknown (want one of %v)", cfg.Shape, Shapes)
	}
	if cfg.StateCatchUp && cfg.Shape != ShapeCRCache {
		return nil, fmt.Errorf("bench: run many: shape %q: StateCatchUp is measured with %q only", cfg.Shape, ShapeCRCache)
	}
	res := &ManyResult{Shape: cfg.Shape, Informers: len(targets), N: cfg.N, Live: !cfg.Quiet}
	if res.Live {
		stop, err := renewLease(ctx, cl.Client(), logf)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	logf("creating %d objects for each of %d informers (%s)...", cfg.N, len(targets), cfg.Shape)
	for _, t := range targets {
		if err := createMany(ctx, cl, dyn, t.res, t.ns, 0, cfg.N, cfg.Workers); err != nil {
			return nil, err
		}
	}
	logf("informerdb cold start (store %s)...", url)
	if res.Cold, _, err = start(ctx, "informerdb cold start", true); err != nil {
		return nil, err
	}
	logf("  synced in %v", res.Cold.Synced.Round(time.Millisecond))
	k := max(4, int(float64(cfg.N)/100+0.5))
	logf("changing %d objects of each informer while stopped...", k)
	for _, t := range targets {
		if res.Changes, err = changeMany(ctx, cl, dyn, t.res, t.ns, cfg.N, k, cfg.Workers); err != nil {
			return nil, err
		}
	}
	if res.Live {
		if err := restartPause(ctx, cfg.RestartPause, logf); err != nil {
			return nil, err
		}
	}
	logf("client-go cold start (the reference)...")
	if res.ClientGo, _, err = start(ctx, "client-go cold start", false); err != nil {
		return nil, err
	}
	logf("  synced in %v", res.ClientGo.Synced.Round(time.Millisecond))
	logf("informerdb restart on the same database...")
	if res.Restart, res.CatchUp, err = start(ctx, "informerdb restart", true); err != nil {
		return nil, err
	}
	logf("  synced in %v", res.Restart.Synced.Round(time.Millisecond))
	return res, nil
}

func createMany(ctx context.Context, cl *Cluster, dyn dynamic.Interface, r manyResource, ns string, from, to, workers int) error {
	// The namespace, as CreateConfigMaps makes it.
	if err := CreateConfigMaps(ctx, cl.Client(), ns, 0, 0, 1); err != nil {
		return err
	}
	c := dyn.Resource(r.gvr).Namespace(ns)
	return parallel(ctx, workers, from, to, func(ctx context.Context, i int) error {
		u := &unstructured.Unstructured{Object: r.obj(ns, ConfigMapName(i))}
		u.SetAPIVersion("v1")
		u.SetNamespace(ns)
		u.SetName(ConfigMapName(i))
		u.SetLabels(map[string]string{"app": "demo"})
		if _, err := c.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bench: create %s %s/%s: %w", r.gvr.Resource, ns, u.GetName(), err)
		}
		return nil
	})
}

// changeMany makes k changes to the n objects of r in ns: k/2 updated (a
// label), k/4 deleted, the rest created.
func changeMany(ctx context.Context, cl *Cluster, dyn dynamic.Interface, r manyResource, ns string, n, k, workers int) (Changes, error) {
	ch := Changes{Updated: k / 2, Deleted: k / 4}
	ch.Created = k - ch.Updated - ch.Deleted
	c := dyn.Resource(r.gvr).Namespace(ns)
	patch := []byte(`{"metadata":{"labels":{"changed":"yes"}}}`)
	err := parallel(ctx, workers, 0, ch.Updated, func(ctx context.Context, i int) error {
		if _, err := c.Patch(ctx, ConfigMapName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("bench: update %s %s/%s: %w", r.gvr.Resource, ns, ConfigMapName(i), err)
		}
		return nil
	})
	if err != nil {
		return ch, err
	}
	err = parallel(ctx, workers, ch.Updated, ch.Updated+ch.Deleted, func(ctx context.Context, i int) error {
		if err := c.Delete(ctx, ConfigMapName(i), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("bench: delete %s %s/%s: %w", r.gvr.Resource, ns, ConfigMapName(i), err)
		}
		return nil
	})
	if err != nil {
		return ch, err
	}
	return ch, createMany(ctx, cl, dyn, r, ns, n, n+ch.Created, workers)
}

// counting is a handler that counts notifications.
type counting struct {
	initial, added, updated, deleted atomic.Int64
}

func (c *counting) OnAdd(_ interface{}, initial bool) {
	if initial {
		c.initial.Add(1)
	} else {
		c.added.Add(1)
	}
}
func (c *counting) OnUpdate(_, _ interface{}) { c.updated.Add(1) }
func (c *counting) OnDelete(interface{})      { c.deleted.Add(1) }

func sumEvents(hs []*counting) Events {
	var e Events
	for _, h := range hs {
		e.Initial += h.initial.Load()
		e.Added += h.added.Load()
		e.Updated += h.updated.Load()
		e.Deleted += h.deleted.Load()
	}
	return e
}

// manyCost is the cost of every resource of the scenario between two
// snapshots, from the API server's metrics.
func (c *Cluster) manyCost(before, after snapshot) Cost {
	if before.server == nil || after.server == nil {
		return Cost{WatchEvents: -1, Source: "client"}
	}
	d := after.server.Sub(*before.server)
	cost := Cost{Source: "server"}
	for _, r := range manyResources {
		res := r.gvr.Resource
		cost.Lists += d.Lists[res]
		cost.WatchEvents += d.WatchEvents[res]
		cost.Bytes += d.ListBytes[res] + d.WatchEventBytes[res]
	}
	return cost
}

// runFactory starts the informers of gvrs of one informer.Factory on the
// database at url, each with a counting handler, and waits until all of
// them synced.
func runFactory(ctx context.Context, cl *Cluster, name, url, ns string, gvrs []schema.GroupVersionResource) (Phase, []time.Duration, error) {
	before, err := cl.snapshot(ctx)
	if err != nil {
		return Phase{}, nil, err
	}
	began := time.Now()
	f, err := informer.NewFactory(ctx, url, cl.Client(), &informer.FactoryOptions{Namespace: ns, Cluster: cl.Host()})
	if err != nil {
		return Phase{}, nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	var (
		infs     []*informer.Informer
		handlers []*counting
		checks   []cache.DoneChecker
	)
	fail := func(err error) (Phase, []time.Duration, error) {
		_ = f.Shutdown()
		return Phase{}, nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	for _, gvr := range gvrs {
		inf, err := f.InformerFor(ctx, gvr)
		if err != nil {
			return fail(err)
		}
		h := &counting{}
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return fail(err)
		}
		infs, handlers = append(infs, inf), append(handlers, h)
		checks = append(checks, inf.HasSyncedChecker(), reg.HasSyncedChecker())
	}
	runCtx, cancel := context.WithCancel(ctx)
	f.Start(runCtx)
	waitCtx, waitCancel := context.WithTimeout(ctx, syncTimeout)
	synced := cache.WaitFor(waitCtx, "", checks...)
	waitCancel()
	p := Phase{Name: name, Synced: time.Since(began), Events: sumEvents(handlers)}
	var caughtUp []time.Duration
	for _, inf := range infs {
		p.Objects += len(inf.GetStore().ListKeys())
		if at := inf.Stats().Reflector.CaughtUpAt; !at.IsZero() {
			caughtUp = append(caughtUp, at.Sub(began))
		}
	}
	cancel()
	if err := f.Shutdown(); err != nil {
		return p, caughtUp, fmt.Errorf("bench: %s: shutdown: %w", name, err)
	}
	if !synced {
		return p, caughtUp, fmt.Errorf("bench: %s: %w", name, errNotSynced)
	}
	after, err := cl.snapshot(ctx)
	if err != nil {
		return p, caughtUp, err
	}
	p.Cost = cl.manyCost(before, after)
	return p, caughtUp, nil
}

// runClientGoFactory is runFactory for client-go's SharedInformerFactory.
func runClientGoFactory(ctx context.Context, cl *Cluster, name, ns string, gvrs []schema.GroupVersionResource) (Phase, error) {
	before, err := cl.snapshot(ctx)
	if err != nil {
		return Phase{}, err
	}
	began := time.Now()
	f := informers.NewSharedInformerFactoryWithOptions(cl.Client(), 0, informers.WithNamespace(ns))
	var (
		handlers []*counting
		infs     []cache.SharedIndexInformer
		checks   []cache.DoneChecker
	)
	for _, gvr := range gvrs {
		gi, err := f.ForResource(gvr)
		if err != nil {
			return Phase{}, fmt.Errorf("bench: %s: %w", name, err)
		}
		h := &counting{}
		reg, err := gi.Informer().AddEventHandler(h)
		if err != nil {
			return Phase{}, fmt.Errorf("bench: %s: %w", name, err)
		}
		handlers, infs = append(handlers, h), append(infs, gi.Informer())
		checks = append(checks, gi.Informer().HasSyncedChecker(), reg.HasSyncedChecker())
	}
	runCtx, cancel := context.WithCancel(ctx)
	f.Start(runCtx.Done())
	waitCtx, waitCancel := context.WithTimeout(ctx, syncTimeout)
	synced := cache.WaitFor(waitCtx, "", checks...)
	waitCancel()
	p := Phase{Name: name, Synced: time.Since(began), Events: sumEvents(handlers)}
	for _, inf := range infs {
		p.Objects += len(inf.GetStore().ListKeys())
	}
	cancel()
	f.Shutdown()
	if !synced {
		return p, fmt.Errorf("bench: %s: %w", name, errNotSynced)
	}
	after, err := cl.snapshot(ctx)
	if err != nil {
		return p, err
	}
	p.Cost = cl.manyCost(before, after)
	return p, nil
}

// runCRCache starts a controller-runtime cache of the namespaces nss
// (through an informer.InformerConstructor on the database at url when
// persistent, else with controller-runtime's own informers), and then, as
// a controller's watch does, asks it for the ConfigMap informer, which
// controller-runtime returns once every namespace's informer synced; a
// counting handler added then must sync too.
func runCRCache(ctx context.Context, cl *Cluster, name, url string, nss []string, persistent, stateCatchUp bool) (Phase, []time.Duration, error) {
	before, err := cl.snapshot(ctx)
	if err != nil {
		return Phase{}, nil, err
	}
	began := time.Now()
	cfg := cl.config
	opts := crcache.Options{DefaultNamespaces: map[string]crcache.Config{}}
	for _, ns := range nss {
		opts.DefaultNamespaces[ns] = crcache.Config{}
	}
	var ctor *informer.InformerConstructor
	var made []*informer.Informer
	var madeMu sync.Mutex
	if persistent {
		ctor, err = informer.NewInformerConstructor(ctx, url, cfg, &informer.ConstructorOptions{Cluster: cl.Host(), StateCatchUp: stateCatchUp})
		if err != nil {
			return Phase{}, nil, fmt.Errorf("bench: %s: %w", name, err)
		}
		cfg = ctor.Config()
		opts.NewInformer = func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, idx cache.Indexers) cache.SharedIndexInformer {
			inf := ctor.NewInformer(lw, obj, resync, idx)
			if i, ok := informer.Of(inf); ok {
				madeMu.Lock()
				made = append(made, i)
				madeMu.Unlock()
			}
			return inf
		}
	}
	closeCtor := func() error {
		if ctor == nil {
			return nil
		}
		return ctor.Close()
	}
	c, err := crcache.New(cfg, opts)
	if err != nil {
		return Phase{}, nil, fmt.Errorf("bench: %s: %w", name, errors.Join(err, closeCtor()))
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	stop := func() error {
		cancel()
		err := <-done
		return errors.Join(err, closeCtor())
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, syncTimeout)
	defer waitCancel()
	if !c.WaitForCacheSync(waitCtx) {
		return Phase{}, nil, fmt.Errorf("bench: %s: cache did not start: %w", name, errors.Join(errNotSynced, stop()))
	}
	inf, err := c.GetInformer(waitCtx, &corev1.ConfigMap{})
	if err != nil {
		return Phase{}, nil, fmt.Errorf("bench: %s: get informer: %w", name, errors.Join(err, stop()))
	}
	h := &counting{}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return Phase{}, nil, fmt.Errorf("bench: %s: add handler: %w", name, errors.Join(err, stop()))
	}
	synced := cache.WaitForCacheSync(waitCtx.Done(), reg.HasSynced)
	p := Phase{Name: name, Synced: time.Since(began), Events: sumEvents([]*counting{h})}
	var caughtUp []time.Duration
	madeMu.Lock()
	p.SyncedByState = len(made) > 0
	for _, i := range made {
		p.SyncedByState = p.SyncedByState && i.Stats().SyncedByState
		p.Objects += len(i.GetStore().ListKeys())
		if at := i.Stats().Reflector.CaughtUpAt; !at.IsZero() {
			caughtUp = append(caughtUp, at.Sub(began))
		}
	}
	madeMu.Unlock()
	if !persistent {
		var cms corev1.ConfigMapList
		if err := c.List(waitCtx, &cms); err == nil {
			p.Objects = len(cms.Items)
		}
	}
	if err := stop(); err != nil {
		return p, caughtUp, fmt.Errorf("bench: %s: stop: %w", name, err)
	}
	if !synced {
		return p, caughtUp, fmt.Errorf("bench: %s: %w", name, errNotSynced)
	}
	after, err := cl.snapshot(ctx)
	if err != nil {
		return p, caughtUp, err
	}
	p.Cost = cl.manyCost(before, after)
	return p, caughtUp, nil
}

// WriteTable prints r as RunMany's table.
func (r *ManyResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	cg, cold, rs := r.ClientGo, r.Cold, r.Restart
	row("", "client-go", "informerdb", "informerdb", "restart vs")
	row("", "cold start", "cold start", "restart", "client-go")
	row("time to synced (all)", dur(cg.Synced), dur(cold.Synced), dur(rs.Synced), ratio(rs.Synced.Seconds(), cg.Synced.Seconds()))
	row("LIST requests", num(cg.Cost.Lists), num(cold.Cost.Lists), num(rs.Cost.Lists), "")
	row("bytes the API server sent", bytes(cg.Cost.Bytes), bytes(cold.Cost.Bytes), bytes(rs.Cost.Bytes), percent(rs.Cost.Bytes, cg.Cost.Bytes))
	row("objects in caches at sync", num(int64(cg.Objects)), num(int64(cold.Objects)), num(int64(rs.Objects)), "")
	var cu []string
	for _, d := range r.CatchUp {
		cu = append(cu, dur(d))
	}
	if rs.SyncedByState {
		row("restart: synced by", "", "", "state lists", "")
	} else {
		row("restart: each caught up at", "", "", strings.Join(cu, " "), "")
	}
	return tw.Flush()
}
