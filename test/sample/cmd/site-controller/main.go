// Command site-controller runs the Site controller (package
// test/sample/controller) on informerdb's factories: site-controller-clientgo
// with its two factory constructors changed, as README's "From client-go"
// shows. Its caches persist in the bolt database -db.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/informer"
	_ "github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/test/sample/controller"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned/scheme"
	"github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/internalinterfaces"
	samplegroup "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/sample"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; without one, the in-cluster configuration")
	db := flag.String("db", "bolt:///var/lib/site-controller/cache.db", "the database of the informers' caches")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *kubeconfig, *db)
	stop()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Site controller")
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, db string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("rest config: %w", err)
	}
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	siteClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("site clientset: %w", err)
	}

	kubeInformerFactory, err := informer.NewSharedInformerFactory(ctx, db, cfg, 30*time.Second)
	if err != nil {
		return fmt.Errorf("informer factory: %w", err)
	}
	defer kubeInformerFactory.Shutdown()
	siteInformerFactory, err := informer.NewGeneratedFactory[internalinterfaces.NewInformerFunc](ctx, db, cfg, scheme.Scheme, 30*time.Second)
	if err != nil {
		return fmt.Errorf("site informer factory: %w", err)
	}
	defer siteInformerFactory.Shutdown()

	c, err := controller.New(kubeClient, siteClient,
		kubeInformerFactory.Apps().V1().Deployments(),
		kubeInformerFactory.Core().V1().ConfigMaps(),
		samplegroup.New(siteInformerFactory, "", nil).V1alpha1().Sites(), nil)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	kubeInformerFactory.Start(ctx.Done())
	siteInformerFactory.Start(ctx.Done())
	return c.Run(ctx, 2)
}
