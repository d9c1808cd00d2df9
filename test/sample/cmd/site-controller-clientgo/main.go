// Command site-controller-clientgo runs the Site controller (package
// test/sample/controller) on client-go's informer factories: the reference
// of site-controller, which runs it on informerdb's, for the binary-size
// comparison in BENCHMARKS.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/test/sample/controller"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
	siteinformers "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; without one, the in-cluster configuration")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *kubeconfig)
	stop()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Site controller")
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
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

	kubeInformerFactory := kubeinformers.NewSharedInformerFactory(kubeClient, 30*time.Second)
	siteInformerFactory := siteinformers.NewSharedInformerFactory(siteClient, 30*time.Second)

	c, err := controller.New(kubeClient, siteClient,
		kubeInformerFactory.Apps().V1().Deployments(),
		kubeInformerFactory.Core().V1().ConfigMaps(),
		siteInformerFactory.Sample().V1alpha1().Sites(), nil)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	kubeInformerFactory.Start(ctx.Done())
	siteInformerFactory.Start(ctx.Done())
	return c.Run(ctx, 2)
}
