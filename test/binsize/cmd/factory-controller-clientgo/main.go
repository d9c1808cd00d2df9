// Command factory-controller-clientgo runs the controller of
// test/binsize/controller on client-go's SharedInformerFactory: the
// reference of factory-controller, which runs it on informerdb's Factory,
// for the binary-size comparison in BENCHMARKS.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/test/binsize/controller"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; without one, the in-cluster configuration")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *kubeconfig)
	stop()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Controller")
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("rest config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	f := informers.NewSharedInformerFactory(client, 0)
	defer f.Shutdown()
	c, err := controller.New(
		f.Core().V1().ConfigMaps().Informer(),
		f.Apps().V1().Deployments().Informer(),
		f.Core().V1().Services().Informer())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	f.Start(ctx.Done())
	return c.Run(ctx, 2)
}
