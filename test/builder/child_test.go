package builder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/informerdb/informerdb/informer"
	_ "github.com/informerdb/informerdb/store/bolt"
)

// Environment of the child process: a controller-runtime manager whose
// controllers are built the way users build them. The parent owns the API
// server and passes its address and token.
const (
	envMode       = "INFORMERDB_BUILDER_CHILD" // "run" or "cache-only" selects child mode in TestMain
	envStoreURL   = "INFORMERDB_BUILDER_STORE_URL"
	envServer     = "INFORMERDB_BUILDER_SERVER"
	envToken      = "INFORMERDB_BUILDER_TOKEN"
	envNamespaces = "INFORMERDB_BUILDER_NAMESPACES" // comma-separated
	envJournal    = "INFORMERDB_BUILDER_JOURNAL"
)

// Controllers of the child, as named in the journal.
const (
	ctrlConfigMaps = "configmaps" // For(&corev1.ConfigMap{})
	ctrlOwner      = "owner"      // For(ConfigMap, no events).Owns(&corev1.Secret{}, builder.OnlyMetadata)
	ctrlWidgets    = "widgets"    // For(Widget as unstructured)
)

// ownedLabel selects the Secrets the child's cache holds (ByObject).
var ownedLabel = map[string]string{"informerdb-e2e": "owned"}

// record is one line of a child's journal: a reconcile request, the mark
// that the cache synced (cache-only mode), or an informer's reflector
// counters (on SIGUSR1, then "stats-end").
type record struct {
	Kind       string `json:"kind"` // request, synced, stats, stats-end
	Controller string `json:"controller,omitempty"`
	Key        string `json:"key,omitempty"` // namespace/name
	Informer   string `json:"informer,omitempty"`
	Lists      int64  `json:"lists,omitempty"`
	Resumes    int64  `json:"resumes,omitempty"`
	Relists    int64  `json:"relists,omitempty"`
	// Batch numbers the answers to SIGUSR1: a batch's stats lines and its
	// stats-end carry the same one (reconcilers write meanwhile).
	Batch int `json:"batch,omitempty"`
}

// journal appends records to a file, one write and one fdatasync each, so
// that what a reconciler received before a SIGKILL is on disk.
type journal struct {
	mu sync.Mutex // guards f
	f  *os.File
}

func (j *journal) write(r record) {
	line, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and integers only
	}
	// On a failure the child exits holding the lock, so that no record
	// follows one that may be missing; hence no deferred Unlock.
	j.mu.Lock()
	_, err = j.f.Write(append(line, '\n'))
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "builder child: journal:", err)
		os.Exit(3)
	}
	j.mu.Unlock()
}

// journalReconciler records every request it gets.
type journalReconciler struct {
	j    *journal
	name string
}

func (r journalReconciler) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.j.write(record{Kind: "request", Controller: r.name, Key: req.String()})
	return reconcile.Result{}, nil
}

func widget() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVR.GroupVersion().WithKind("Widget"))
	return u
}

// child runs a manager until it is killed. In "run" mode it runs three
// controllers built with ctrl.NewControllerManagedBy; in "cache-only" mode
// it runs the manager's cache alone, with the informers those controllers
// use, writes "synced" once they synced, and adds no handler: a process
// killed then has committed what changed while it was down and handed it
// to no reconciler.
func child(mode string) int {
	ctx := context.Background()
	go func() {
		// The parent holds our stdin open; EOF means it died.
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "builder child: parent gone (stdin closed)")
		os.Exit(3)
	}()
	f, err := os.OpenFile(os.Getenv(envJournal), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "builder child: journal:", err)
		return 3
	}
	j := &journal{f: f}
	ctrl.SetLogger(klog.Background())

	cfg := &rest.Config{
		Host:            os.Getenv(envServer),
		BearerToken:     os.Getenv(envToken),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1,
		UserAgent:       "informerdb-builder-child",
	}
	// The defaults, as users have them.
	c, err := informer.NewInformerConstructor(ctx, os.Getenv(envStoreURL), cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "builder child: constructor:", err)
		return 3
	}
	var mu sync.Mutex
	var made []*informer.Informer
	newInformer := func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		inf := c.NewInformer(lw, obj, resync, indexers)
		if i, ok := inf.(*informer.Informer); ok {
			mu.Lock()
			made = append(made, i)
			mu.Unlock()
		}
		return inf
	}
	namespaces := map[string]crcache.Config{}
	for _, ns := range strings.Split(os.Getenv(envNamespaces), ",") {
		namespaces[ns] = crcache.Config{}
	}
	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: crcache.Options{
			NewInformer:       newInformer,
			DefaultNamespaces: namespaces,
			ByObject: map[client.Object]crcache.ByObject{
				&corev1.Secret{}: {Label: labels.SelectorFromSet(ownedLabel)},
			},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "builder child: manager:", err)
		return 3
	}
	if err := mgr.Add(c); err != nil {
		fmt.Fprintln(os.Stderr, "builder child: adding the constructor:", err)
		return 3
	}
	if mode == "run" {
		none := predicate.NewPredicateFuncs(func(client.Object) bool { return false })
		for _, err := range []error{
			ctrl.NewControllerManagedBy(mgr).Named(ctrlConfigMaps).For(&corev1.ConfigMap{}).
				Complete(journalReconciler{j, ctrlConfigMaps}),
			ctrl.NewControllerManagedBy(mgr).Named(ctrlOwner).For(&corev1.ConfigMap{}, builder.WithPredicates(none)).Owns(&corev1.Secret{}, builder.OnlyMetadata).
				Complete(journalReconciler{j, ctrlOwner}),
			ctrl.NewControllerManagedBy(mgr).Named(ctrlWidgets).For(widget()).
				Complete(journalReconciler{j, ctrlWidgets}),
		} {
			if err != nil {
				fmt.Fprintln(os.Stderr, "builder child: controller:", err)
				return 3
			}
		}
	}

	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		batch := 0
		for range usr1 {
			batch++
			mu.Lock()
			infs := slices.Clone(made)
			mu.Unlock()
			for _, inf := range infs {
				st := inf.Stats().Reflector
				rl := st.Relists
				j.write(record{Kind: "stats", Batch: batch, Informer: inf.Name(), Lists: st.Lists, Resumes: st.Resumes,
					Relists: rl.Cold + rl.Expired + rl.TooLarge + rl.TimeTravel + rl.CatchUp + rl.ScopeChange + rl.Corrupt + rl.Gone})
			}
			j.write(record{Kind: "stats-end", Batch: batch})
		}
	}()

	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	if mode == "cache-only" {
		secrets := &metav1.PartialObjectMetadata{}
		secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		for _, obj := range []client.Object{&corev1.ConfigMap{}, secrets, widget()} {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				fmt.Fprintln(os.Stderr, "builder child: informer:", err)
				return 3
			}
		}
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			fmt.Fprintln(os.Stderr, "builder child: cache did not sync")
			return 3
		}
		j.write(record{Kind: "synced"})
	}
	err = <-errc
	fmt.Fprintln(os.Stderr, "builder child: manager stopped:", err)
	return 3
}
