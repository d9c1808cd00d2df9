package typedfactory_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	_ "github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/test/internal/childtest"
	samplev1alpha1 "github.com/informerdb/informerdb/test/sample/apis/sample/v1alpha1"
	"github.com/informerdb/informerdb/test/sample/controller"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned/scheme"
	"github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/internalinterfaces"
	samplegroup "github.com/informerdb/informerdb/test/sample/generated/informers/externalversions/sample"
)

// Environment of the child process: the Site controller on informerdb's
// factories. The parent owns the API server and passes its address and
// token.
const (
	envMode     = "INFORMERDB_TYPEDFACTORY_CHILD" // "run" or "cache-only" selects child mode in TestMain
	envStoreURL = "INFORMERDB_TYPEDFACTORY_STORE_URL"
	envServer   = "INFORMERDB_TYPEDFACTORY_SERVER"
	envToken    = "INFORMERDB_TYPEDFACTORY_TOKEN"
	envJournal  = "INFORMERDB_TYPEDFACTORY_JOURNAL"
)

// The child's journal holds: "delete" records of the deletes a handler
// received (Handler "early": the controller's, added before the factories
// started; "late": added after they synced; Informer sites, deployments or
// configmaps), "sync" records of the Sites the controller synced (Exists
// false when it found one gone), "synced" once the factories synced, and
// the informers' stats (childtest.ServeStats).

// observer journals the controller's deletes and syncs.
type observer struct{ j *childtest.Journal }

func (o observer) Event(informer, op, key string) {
	if op == "delete" {
		o.j.Write(childtest.Record{Kind: "delete", Handler: "early", Informer: informer, Key: key})
	}
}

func (o observer) Synced(key string, exists bool) {
	o.j.Write(childtest.Record{Kind: "sync", Key: key, Exists: exists})
}

// child runs the Site controller on informerdb's factories until it is
// killed. In "run" mode the controller's handlers are added before the
// factories start, and a second handler per informer after they synced; in
// "cache-only" mode the informers run without any handler and the child
// writes "synced" once they synced: a process killed then has committed
// what changed while it was down and handed it to no handler.
func child(mode string) int {
	ctx := context.Background()
	childtest.ExitWithParent()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "typedfactory child: %s: %v\n", what, err)
		return 3
	}
	j, err := childtest.OpenJournal(os.Getenv(envJournal))
	if err != nil {
		return fail("journal", err)
	}
	ctx = klog.NewContext(ctx, klog.Background())

	cfg := &rest.Config{
		Host:            os.Getenv(envServer),
		BearerToken:     os.Getenv(envToken),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1,
		UserAgent:       "informerdb-typedfactory-child",
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail("clientset", err)
	}
	sites, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fail("site clientset", err)
	}
	// Catch-up watches that end soon after the bookmark kube-apiserver
	// sends about 2 s before a watch's timeout.
	fo := informer.FactoryOptions{}
	fo.Informer.Reflector = reflector.Options{CatchUpWatchTimeout: 3 * time.Second}
	dbURL := os.Getenv(envStoreURL)

	// What a client-go controller changes: these two constructors.
	kubeFactory, err := informer.NewSharedInformerFactory(ctx, dbURL, cfg, 0,
		informer.WithNamespace(namespace), informer.WithFactoryOptions(fo))
	if err != nil {
		return fail("shared informer factory", err)
	}
	siteFactory, err := informer.NewGeneratedFactory[internalinterfaces.NewInformerFunc](ctx, dbURL, cfg, scheme.Scheme, 0,
		informer.WithNamespace(namespace), informer.WithFactoryOptions(fo))
	if err != nil {
		return fail("generated factory", err)
	}
	deployments := kubeFactory.Apps().V1().Deployments()
	configMaps := kubeFactory.Core().V1().ConfigMaps()
	siteInformer := samplegroup.New(siteFactory, siteFactory.Namespace(), siteFactory.TweakListOptions()).V1alpha1().Sites()

	var c *controller.Controller
	if mode == "run" {
		if c, err = controller.New(kube, sites, deployments, configMaps, siteInformer, observer{j}); err != nil {
			return fail("controller", err)
		}
	} else {
		deployments.Informer()
		configMaps.Informer()
		siteInformer.Informer()
	}
	infs := map[string]*informer.Informer{}
	for name, inf := range map[string]cache.SharedIndexInformer{
		"deployments": kubeFactory.InformerFor(&appsv1.Deployment{}, nil),
		"configmaps":  kubeFactory.InformerFor(&corev1.ConfigMap{}, nil),
		"sites":       siteFactory.InformerFor(&samplev1alpha1.Site{}, nil),
	} {
		i, ok := inf.(*informer.Informer)
		if !ok {
			return fail("informer "+name, fmt.Errorf("%T is not an informerdb informer", inf))
		}
		infs[name] = i
	}

	childtest.ServeStats(j, func() []*informer.Informer { return slices.Collect(maps.Values(infs)) })

	kubeFactory.Start(ctx.Done())
	siteFactory.Start(ctx.Done())
	for name, res := range map[string]cache.SyncResult{
		"shared informer factory": kubeFactory.WaitForCacheSyncWithContext(ctx),
		"generated factory":       siteFactory.WaitForCacheSyncWithContext(ctx),
	} {
		if res.Err != nil {
			return fail(name+": wait for cache sync", res.Err)
		}
	}
	if mode == "run" {
		for name, inf := range infs {
			late := func(obj interface{}) {
				key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
				if err != nil {
					fmt.Fprintln(os.Stderr, "typedfactory child: key:", err)
					os.Exit(3)
				}
				j.Write(childtest.Record{Kind: "delete", Handler: "late", Informer: name, Key: key})
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: late}); err != nil {
				return fail("late handler of "+name, err)
			}
		}
		go func() {
			if err := c.Run(ctx, 2); err != nil {
				fmt.Fprintln(os.Stderr, "typedfactory child: controller:", err)
				os.Exit(3)
			}
		}()
	}
	j.Write(childtest.Record{Kind: "synced"})
	<-ctx.Done()
	return 3
}
