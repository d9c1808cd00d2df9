package builder_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
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
	"github.com/informerdb/informerdb/test/internal/childtest"
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

// journalReconciler records every request it gets.
type journalReconciler struct {
	j    *childtest.Journal
	name string
}

func (r journalReconciler) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.j.Write(childtest.Record{Kind: "request", Controller: r.name, Key: req.String()})
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
	childtest.ExitWithParent()
	j, err := childtest.OpenJournal(os.Getenv(envJournal))
	if err != nil {
		fmt.Fprintln(os.Stderr, "builder child:", err)
		return 3
	}
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
		if i, ok := informer.Of(inf); ok {
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

	childtest.ServeStats(j, func() []*informer.Informer {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(made)
	})

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
		j.Write(childtest.Record{Kind: "synced"})
	}
	err = <-errc
	fmt.Fprintln(os.Stderr, "builder child: manager stopped:", err)
	return 3
}
