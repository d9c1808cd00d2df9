// Package controller is the controller whose binary size BENCHMARKS.md
// compares (section "Binary size"): informers and listers of ConfigMaps,
// Deployments and Services, and a workqueue of Deployment keys whose sync
// handler reads the three listers. It does not know which factory made its
// informers: cmd/factory-controller runs it on informerdb's Factory,
// cmd/factory-controller-clientgo on client-go's SharedInformerFactory.
package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Controller logs, for every Deployment, the ConfigMaps and Services of its
// namespace.
type Controller struct {
	configMaps  corelisters.ConfigMapLister
	deployments appslisters.DeploymentLister
	services    corelisters.ServiceLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

// New returns a controller on the three informers, adding its handler to
// the Deployments' one.
func New(configMaps, deployments, services cache.SharedIndexInformer) (*Controller, error) {
	c := &Controller{
		configMaps:  corelisters.NewConfigMapLister(configMaps.GetIndexer()),
		deployments: appslisters.NewDeploymentLister(deployments.GetIndexer()),
		services:    corelisters.NewServiceLister(services.GetIndexer()),
		synced:      []cache.InformerSynced{configMaps.HasSynced, deployments.HasSynced, services.HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "deployments"}),
	}
	enqueue := func(obj interface{}) {
		if name, err := cache.DeletionHandlingObjectToName(obj); err == nil {
			c.queue.Add(name)
		}
	}
	if _, err := deployments.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, fmt.Errorf("deployments handler: %w", err)
	}
	return c, nil
}

// Run waits for the informers to sync, then syncs Deployments with workers
// goroutines until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync: %w", context.Cause(ctx))
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.work, 0)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for {
		name, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if err := c.sync(ctx, name); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Sync", "deployment", name)
			c.queue.AddRateLimited(name)
		} else {
			c.queue.Forget(name)
		}
		c.queue.Done(name)
	}
}

func (c *Controller) sync(ctx context.Context, name cache.ObjectName) error {
	d, err := c.deployments.Deployments(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Info("Deployment deleted", "deployment", name)
		return nil
	}
	if err != nil {
		return err
	}
	cms, err := c.configMaps.ConfigMaps(d.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	svcs, err := c.services.Services(d.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Deployment", "deployment", name, "replicas", replicas(d), "configMaps", len(cms), "services", len(svcs))
	return nil
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
