package informer_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/informerdb/informerdb/informer"
	_ "github.com/informerdb/informerdb/store/bolt"
)

// A controller-runtime manager whose cache keeps its objects in a bolt file:
// after a restart its informers resume their watches from where they
// stopped instead of listing everything again. The manager is built from
// the constructor's REST config, so the constructor can tell the informers
// of a multi-namespace cache apart; each namespace gets its own store.
//
// NewInformerConstructor identifies the cluster by its kube-system
// namespace's UID, so a cluster recreated behind the same URL is listed
// anew, never served from the old cache, and it opens the database, so an
// unusable URL or path, or a database another process holds, is its error.
// An informer the constructor cannot make persistent stops the manager with
// that error (mgr.Add(c)) rather than run without persistence.
func ExampleInformerConstructor() {
	ctx := ctrl.SetupSignalHandler()
	c, err := informer.NewInformerConstructor(ctx, "bolt:///var/lib/configmap-controller/cache.db", ctrl.GetConfigOrDie(), nil)
	if err != nil {
		panic(err)
	}
	// Close the stores once the manager has stopped.
	defer func() { _ = c.Close() }()

	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{
		Cache: crcache.Options{
			NewInformer:       c.NewInformer,
			DefaultNamespaces: map[string]crcache.Config{"team-a": {}, "team-b": {}},
		},
		HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		panic(err)
	}
	// An informer the constructor could not make ends mgr.Start with its
	// error.
	if err := mgr.Add(c); err != nil {
		panic(err)
	}
	// The pod's liveness probe (/healthz) restarts the process when the
	// informers' commits stop getting through: at once when the store
	// refuses writes after a failed fsync, or after two minutes of another
	// failure, such as a full disk.
	err = mgr.AddHealthzCheck("informerdb", func(*http.Request) error { return c.CheckCommits(2 * time.Minute) })
	if err != nil {
		panic(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(
		reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil {
				// Deleted while the controller was down: the builder adds
				// its handler after the informer synced, and the handler
				// first receives every delete since the informer started
				// (Options.TombstoneRetention), so the request lands here.
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			fmt.Println("reconcile", req.NamespacedName, cm.ResourceVersion)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}
