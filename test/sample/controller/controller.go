// Package controller is a controller of Sites in the style of
// k8s.io/sample-controller: informers and listers of a typed factory
// (Deployments, ConfigMaps) and of a generated one (Sites), a workqueue of
// Site keys, and a sync handler that makes each Site's Deployment and
// ConfigMap match its spec and records what it did in the Site's status.
// It does not know which factories made its informers: the tests and the
// binary-size comparison run it on client-go's and on informerdb's.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/informerdb/informerdb/test/sample/apis/sample/v1alpha1"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
	sampleinformers "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/sample/v1alpha1"
	samplelisters "github.com/informerdb/informerdb/test/sample/generated/listers/sample/v1alpha1"
)

// Observer hears what the controller's handlers and sync handler see; the
// tests journal it. Its methods are called from the informers' handler
// goroutines and the workers, concurrently.
type Observer interface {
	// Event is a notification of a handler: informer is "sites",
	// "deployments" or "configmaps", op "add", "update" or "delete".
	Event(informer, op, key string)
	// Synced is a Site the sync handler made current (exists) or found
	// deleted.
	Synced(key string, exists bool)
}

// Controller makes each Site's Deployment and ConfigMap (both named
// spec.deploymentName, owned by the Site) match its spec.
type Controller struct {
	kube  kubernetes.Interface
	sites versioned.Interface

	deploymentsLister appslisters.DeploymentLister
	configMapsLister  corelisters.ConfigMapLister
	sitesLister       samplelisters.SiteLister
	synced            []cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	observer Observer
}

// New returns a controller on the given informers, adding its handlers to
// them; observer may be nil.
func New(kube kubernetes.Interface, sites versioned.Interface, deployments appsinformers.DeploymentInformer,
	configMaps coreinformers.ConfigMapInformer, siteInformer sampleinformers.SiteInformer, observer Observer) (*Controller, error) {
	c := &Controller{
		kube: kube, sites: sites,
		deploymentsLister: deployments.Lister(),
		configMapsLister:  configMaps.Lister(),
		sitesLister:       siteInformer.Lister(),
		synced: []cache.InformerSynced{
			deployments.Informer().HasSynced, configMaps.Informer().HasSynced, siteInformer.Informer().HasSynced,
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "sites"}),
		observer: observer,
	}
	if _, err := siteInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.observe("sites", "add", obj); c.enqueue(obj) },
		UpdateFunc: func(_, obj interface{}) { c.observe("sites", "update", obj); c.enqueue(obj) },
		DeleteFunc: func(obj interface{}) { c.observe("sites", "delete", obj); c.enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("site handler: %w", err)
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"deployments": deployments.Informer(), "configmaps": configMaps.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.observe(name, "add", obj); c.handleOwned(obj) },
			UpdateFunc: func(_, obj interface{}) { c.observe(name, "update", obj); c.handleOwned(obj) },
			DeleteFunc: func(obj interface{}) { c.observe(name, "delete", obj); c.handleOwned(obj) },
		}); err != nil {
			return nil, fmt.Errorf("%s handler: %w", name, err)
		}
	}
	return c, nil
}

func (c *Controller) observe(informer, op string, obj interface{}) {
	if c.observer == nil {
		return
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.observer.Event(informer, op, key)
}

func (c *Controller) enqueue(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	name, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(name)
}

// handleOwned enqueues the Site that owns obj, if any: a change or the
// deletion of a Site's Deployment or ConfigMap makes the Site sync.
func (c *Controller) handleOwned(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("handling an owned object: %T is not an object", obj))
		return
	}
	owner := metav1.GetControllerOf(o)
	if owner == nil || owner.Kind != "Site" {
		return
	}
	c.queue.Add(cache.ObjectName{Namespace: o.GetNamespace(), Name: owner.Name})
}

// Run waits for the informers to sync, runs workers until ctx ends, and
// then shuts the queue down.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("controller: the informers did not sync")
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextItem(ctx) {
	}
}

func (c *Controller) processNextItem(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		klog.FromContext(ctx).Error(err, "Syncing a Site; will retry", "site", name)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync makes the Site's Deployment and ConfigMap match its spec, and
// records the replicas in its status.
func (c *Controller) sync(ctx context.Context, name cache.ObjectName) error {
	site, err := c.sitesLister.Sites(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		c.reportSynced(name, false)
		return nil
	}
	if err != nil {
		return err
	}
	if site.Spec.DeploymentName == "" {
		return nil // invalid: nothing to do until the spec changes
	}
	replicas := int32(1)
	if site.Spec.Replicas != nil {
		replicas = *site.Spec.Replicas
	}
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(site, samplev1alpha1.SchemeGroupVersion.WithKind("Site"))}

	d, err := c.deploymentsLister.Deployments(site.Namespace).Get(site.Spec.DeploymentName)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.kube.AppsV1().Deployments(site.Namespace).Create(ctx, deploymentFor(site, replicas, owner), metav1.CreateOptions{})
	case err == nil && !metav1.IsControlledBy(d, site):
		return fmt.Errorf("deployment %s/%s is not controlled by site %s", d.Namespace, d.Name, site.Name)
	case err == nil && (d.Spec.Replicas == nil || *d.Spec.Replicas != replicas):
		d = d.DeepCopy()
		d.Spec.Replicas = &replicas
		_, err = c.kube.AppsV1().Deployments(site.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("deployment of site %s: %w", name, err)
	}

	want := strconv.Itoa(int(replicas))
	cm, err := c.configMapsLister.ConfigMaps(site.Namespace).Get(site.Spec.DeploymentName)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.kube.CoreV1().ConfigMaps(site.Namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Spec.DeploymentName, OwnerReferences: owner},
			Data:       map[string]string{"replicas": want},
		}, metav1.CreateOptions{})
	case err == nil && !metav1.IsControlledBy(cm, site):
		return fmt.Errorf("configmap %s/%s is not controlled by site %s", cm.Namespace, cm.Name, site.Name)
	case err == nil && cm.Data["replicas"] != want:
		cm = cm.DeepCopy()
		cm.Data = map[string]string{"replicas": want}
		_, err = c.kube.CoreV1().ConfigMaps(site.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("configmap of site %s: %w", name, err)
	}

	if site.Status.Replicas != replicas {
		site = site.DeepCopy()
		site.Status.Replicas = replicas
		if _, err := c.sites.SampleV1alpha1().Sites(site.Namespace).UpdateStatus(ctx, site, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of site %s: %w", name, err)
		}
	}
	c.reportSynced(name, true)
	return nil
}

func (c *Controller) reportSynced(name cache.ObjectName, exists bool) {
	if c.observer != nil {
		c.observer.Synced(name.String(), exists)
	}
}

func deploymentFor(site *samplev1alpha1.Site, replicas int32, owner []metav1.OwnerReference) *appsv1.Deployment {
	labels := map[string]string{"app": "web", "site": site.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Spec.DeploymentName, OwnerReferences: owner},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:latest"}}},
			},
		},
	}
}
