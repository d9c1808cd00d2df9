// Command factory-controller runs the controller of test/binsize/controller
// on informerdb's Factory (informer.NewFactory, the bolt backend), for the
// binary-size comparison in BENCHMARKS.md with factory-controller-clientgo,
// which runs it on client-go's SharedInformerFactory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/informer"
	_ "github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/test/binsize/controller"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; without one, the in-cluster configuration")
	db := flag.String("db", "bolt:///var/lib/factory-controller/cache.db", "URL of the informers' database")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *kubeconfig, *db)
	stop()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Controller")
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, db string) (err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("rest config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	f, err := informer.NewFactory(ctx, db, client, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Shutdown()) }()
	configMaps, err := f.InformerFor(ctx, corev1.SchemeGroupVersion.WithResource("configmaps"))
	if err != nil {
		return err
	}
	deployments, err := f.InformerFor(ctx, appsv1.SchemeGroupVersion.WithResource("deployments"))
	if err != nil {
		return err
	}
	services, err := f.InformerFor(ctx, corev1.SchemeGroupVersion.WithResource("services"))
	if err != nil {
		return err
	}
	c, err := controller.New(configMaps, deployments, services)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	f.Start(ctx)
	return c.Run(ctx, 2)
}
