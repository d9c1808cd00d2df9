package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Config configures Run.
type Config struct {
	// N is how many ConfigMaps of about 1 KiB the scenario creates. Ignored
	// on a read-only cluster, which runs on the ConfigMaps it has.
	N int
	// Backend names the persistent backend (see StoreURL). Default "bolt".
	Backend string
	// Namespace holds the scenario's ConfigMaps; default "demo-<N>". On a
	// read-only cluster the informers watch all namespaces.
	Namespace string
	// Dir holds the store's database; default a temporary directory that
	// Run removes.
	Dir string
	// ChangePercent is the share of the N objects changed while the
	// informer is stopped (at least 4 changes). Default 1 (percent).
	ChangePercent float64
	// Workers is the number of concurrent creates. Default 32.
	Workers int
	// Quiet turns off what makes the run a live cluster's: a Lease
	// outside the watched resource renewed every second (as node and
	// leader-election leases are), and a pause of RestartPause between the
	// last change and the restart. With writes elsewhere, the newest
	// revision at the restart is not one of the watched objects, and the
	// resume learns that it has caught up only from a bookmark; quiet, it
	// takes the fast path of a restart right after its own writes, which a
	// real cluster rarely gives.
	Quiet bool
	// RestartPause is the live cluster's pause before the restart.
	// Default 3s.
	RestartPause time.Duration
	// StateCatchUp gives the informer informer.Options.StateCatchUp: its
	// restart lists the metadata of every ConfigMap rather than wait for a
	// bookmark.
	StateCatchUp bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Changes counts the changes made while the informer was stopped.
type Changes struct {
	Updated, Deleted, Created int
}

// Total is the number of changes.
func (c Changes) Total() int { return c.Updated + c.Deleted + c.Created }

// Result is the outcome of Run.
type Result struct {
	// N is the number of ConfigMaps at the cold start.
	N int
	// URL is the store's database URL.
	URL string
	// ReadOnly tells that the cluster was not changed (kubeconfig).
	ReadOnly bool
	// Changes made between the cold start and the restart.
	Changes Changes
	// ClientGo is client-go's cold start, run after the changes: what a
	// client-go controller's restart costs.
	ClientGo Phase
	// Cold is informerdb's cold start into an empty store.
	Cold Phase
	// Restart is informerdb's restart on the store Cold left.
	Restart Phase
	// Live tells that a lease was renewed every second throughout, and
	// the restart paused (see Config.Quiet).
	Live bool
}

// Run is the demo scenario: N ConfigMaps, an informerdb cold start with the
// example controller, a stop, 1% of the objects changed (updates, deletes,
// creates), client-go's cold start as the reference, and informerdb's
// restart on the same database. On a read-only cluster nothing is created
// or changed.
func Run(ctx context.Context, cl *Cluster, cfg Config) (*Result, error) {
	if cfg.Backend == "" {
		cfg.Backend = "bolt"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.ChangePercent <= 0 {
		cfg.ChangePercent = 1
	}
	if cfg.RestartPause <= 0 {
		cfg.RestartPause = 3 * time.Second
	}
	logf := logfTo(cfg.Log)
	url, cleanup, err := storeIn(&cfg.Dir, "informerdb-demo-", cfg.Backend)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := &Result{URL: url, ReadOnly: cl.ReadOnly, Live: !cfg.Quiet && !cl.ReadOnly}
	if res.Live {
		stop, err := renewLease(ctx, cl.Client(), logf)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	ns := cfg.Namespace
	switch {
	case cl.ReadOnly:
		ns = ""
		logf("read-only: this run only lists and watches ConfigMaps in all namespaces; it changes nothing")
	default:
		if cfg.N <= 0 {
			return nil, fmt.Errorf("bench: run: N %d is not positive", cfg.N)
		}
		if ns == "" {
			ns = fmt.Sprintf("demo-%d", cfg.N)
		}
		res.N = cfg.N
		logf("creating %d ConfigMaps in namespace %s (%d concurrent creates)...", cfg.N, ns, cfg.Workers)
		began := time.Now()
		if err := CreateConfigMaps(ctx, cl.Client(), ns, 0, cfg.N, cfg.Workers); err != nil {
			return nil, err
		}
		logf("created in %v", time.Since(began).Round(time.Millisecond))
	}

	logf("informerdb cold start (store %s)...", url)
	if res.Cold, err = RunInformerDB(ctx, cl, "informerdb cold start", url, ns, cfg.StateCatchUp); err != nil {
		return nil, err
	}
	logf("  synced in %v", res.Cold.Synced.Round(time.Millisecond))
	if cl.ReadOnly {
		res.N = res.Cold.Objects
	} else {
		k := max(4, int(float64(cfg.N)*cfg.ChangePercent/100+0.5))
		logf("changing %d objects (%g%%) while the controller is stopped...", k, cfg.ChangePercent)
		if res.Changes, err = ChangeConfigMaps(ctx, cl.Client(), ns, cfg.N, k, cfg.Workers); err != nil {
			return nil, err
		}
		if res.Live {
			if err := restartPause(ctx, cfg.RestartPause, logf); err != nil {
				return nil, err
			}
		}
	}
	logf("client-go cold start (the reference)...")
	if res.ClientGo, err = RunClientGo(ctx, cl, "client-go cold start", ns); err != nil {
		return nil, err
	}
	logf("  synced in %v", res.ClientGo.Synced.Round(time.Millisecond))
	logf("informerdb restart on the same store...")
	if res.Restart, err = RunInformerDB(ctx, cl, "informerdb restart", url, ns, cfg.StateCatchUp); err != nil {
		return nil, err
	}
	logf("  synced in %v", res.Restart.Synced.Round(time.Millisecond))
	return res, nil
}

// ConfigMapName is the name of the i-th ConfigMap of a scenario.
func ConfigMapName(i int) string { return fmt.Sprintf("cm-%06d", i) }

// payload makes each ConfigMap about 1 KiB, like the measurements in
// DESIGN.md.
var payload = strings.Repeat("x", 1000)

func newConfigMap(ns string, i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ConfigMapName(i), Labels: map[string]string{"app": "demo"}},
		Data:       map[string]string{"payload": payload, "data": "v1"},
	}
}

// CreateConfigMaps creates the namespace if needed and the ConfigMaps
// [from, to) in it, with workers concurrent creates.
func CreateConfigMaps(ctx context.Context, c kubernetes.Interface, ns string, from, to, workers int) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("bench: create namespace %s: %w", ns, err)
	}
	return parallel(ctx, workers, from, to, func(ctx context.Context, i int) error {
		cm := newConfigMap(ns, i)
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bench: create configmap %s/%s: %w", ns, cm.Name, err)
		}
		return nil
	})
}

// ChangeConfigMaps makes k changes to the n ConfigMaps of a scenario: k/2
// of them updated, k/4 deleted, and the rest created anew.
func ChangeConfigMaps(ctx context.Context, c kubernetes.Interface, ns string, n, k, workers int) (Changes, error) {
	ch := Changes{Updated: k / 2, Deleted: k / 4}
	ch.Created = k - ch.Updated - ch.Deleted
	cms := c.CoreV1().ConfigMaps(ns)
	err := parallel(ctx, workers, 0, ch.Updated, func(ctx context.Context, i int) error {
		cm := newConfigMap(ns, i)
		cm.Data["data"] = "v2"
		// No resourceVersion: an unconditional update.
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bench: update configmap %s/%s: %w", ns, cm.Name, err)
		}
		return nil
	})
	if err != nil {
		return ch, err
	}
	err = parallel(ctx, workers, ch.Updated, ch.Updated+ch.Deleted, func(ctx context.Context, i int) error {
		if err := cms.Delete(ctx, ConfigMapName(i), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("bench: delete configmap %s/%s: %w", ns, ConfigMapName(i), err)
		}
		return nil
	})
	if err != nil {
		return ch, err
	}
	return ch, CreateConfigMaps(ctx, c, ns, n, n+ch.Created, workers)
}

// parallel runs fn for every i in [from, to) on workers goroutines and
// returns the first error; the others stop at their next item.
func parallel(ctx context.Context, workers, from, to int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// WriteTable prints r as the demo's table: cold start vs restart, with
// client-go's cold start as the reference and the restart's ratio to it.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	cg, cold, rs := r.ClientGo, r.Cold, r.Restart
	row("", "client-go", "informerdb", "informerdb", "restart vs")
	row("", "cold start", "cold start", "restart", "client-go")
	row("time to synced", dur(cg.Synced), dur(cold.Synced), dur(rs.Synced), ratio(rs.Synced.Seconds(), cg.Synced.Seconds()))
	row("LIST requests", num(cg.Cost.Lists), num(cold.Cost.Lists), num(rs.Cost.Lists), "")
	if cg.Cost.WatchEvents >= 0 {
		row("watch events sent", num(cg.Cost.WatchEvents), num(cold.Cost.WatchEvents), num(rs.Cost.WatchEvents), "")
	}
	label := "bytes the API server sent"
	if cg.Cost.Source == "client" {
		label = "bytes received (client side)"
	}
	row(label, bytes(cg.Cost.Bytes), bytes(cold.Cost.Bytes), bytes(rs.Cost.Bytes), percent(rs.Cost.Bytes, cg.Cost.Bytes))
	row("handler: initial adds", num(cg.Events.Initial), num(cold.Events.Initial), num(rs.Events.Initial)+" (replayed)", "")
	row("handler: adds", num(cg.Events.Added), num(cold.Events.Added), num(rs.Events.Added), "")
	row("handler: updates", num(cg.Events.Updated), num(cold.Events.Updated), num(rs.Events.Updated), "")
	row("handler: deletes", num(cg.Events.Deleted), num(cold.Events.Deleted), num(rs.Events.Deleted), "")
	row("objects in cache at sync", num(int64(cg.Objects)), num(int64(cold.Objects)), num(int64(rs.Objects)), "")
	row("", "", "", "", "")
	step := func(label string, cold, restart time.Duration) { row(label, "", dur(cold), dur(restart), "") }
	step("open the store", cold.Steps.Open, rs.Steps.Open)
	step("start, replay to handler", cold.Steps.Start, rs.Steps.Start)
	step("first list / probe", cold.Steps.Probe, rs.Steps.Probe)
	catchUp := "catch-up (bookmark wait)"
	if rs.SyncedByState {
		catchUp = "catch-up (state list)"
	}
	step(catchUp, cold.Steps.CatchUp, rs.Steps.CatchUp)
	step("apply until synced", cold.Steps.Apply, rs.Steps.Apply)
	return tw.Flush()
}

// renewLease creates a Lease outside the watched resource and renews it
// every second, as a node's or a leader's lease is, until the returned
// function is called.
func renewLease(ctx context.Context, c kubernetes.Interface, logf func(string, ...any)) (stop func(), err error) {
	const ns = "demo-leases"
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !isAlreadyExists(err) {
		return nil, fmt.Errorf("bench: create namespace %s: %w", ns, err)
	}
	leases := c.CoordinationV1().Leases(ns)
	holder := "demo"
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-" + fmt.Sprint(time.Now().UnixNano())},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bench: create lease: %w", err)
	}
	logf("renewing lease %s/%s every second (a live cluster's writes outside the watched resource)", ns, lease.Name)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			renewed, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
			if err != nil {
				if ctx.Err() == nil {
					logf("renewing the lease failed: %v", err)
				}
				continue
			}
			lease = renewed
		}
	}()
	return func() { cancel(); <-done }, nil
}

func dur(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func num(n int64) string { return fmt.Sprintf("%d", n) }

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func percent(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}

func bytes(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// logfTo returns a printf that writes lines to w (nowhere when w is nil).
func logfTo(w io.Writer) func(format string, args ...any) {
	if w == nil {
		w = io.Discard
	}
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

// storeIn returns the store URL of backend in *dir, making *dir a new
// temporary directory (named from prefix) when it is empty; cleanup removes
// the directory it made.
func storeIn(dir *string, prefix, backend string) (url string, cleanup func(), err error) {
	cleanup = func() {}
	if *dir == "" {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", nil, fmt.Errorf("bench: store directory: %w", err)
		}
		cleanup = func() { _ = os.RemoveAll(d) }
		*dir = d
	}
	url, err = StoreURL(backend, *dir)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return url, cleanup, nil
}

// restartPause waits d before a restart, as a live cluster's restarts come a
// while after the last change: the leases renewed meanwhile then hold the
// newest revisions.
func restartPause(ctx context.Context, d time.Duration, logf func(string, ...any)) error {
	logf("pausing %v, the lease renewed meanwhile...", d)
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
