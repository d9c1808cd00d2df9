package informer

import (
	"context"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	discoveryinformers "k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SharedInformerFactory is client-go's informers.SharedInformerFactory
// whose informers are informerdb informers, all kept in one database: a
// controller written for client-go's typed factory becomes persistent by
// changing its constructor only.
//
//	f, err := informer.NewSharedInformerFactory(ctx, "bolt:///var/lib/ctrl/cache.db", cfg, 30*time.Second)
//	deployments := f.Apps().V1().Deployments() // .Informer(), .Lister(), as with client-go
//	f.Start(ctx.Done())
//	f.WaitForCacheSync(ctx.Done())
//
// Every group of the interface works: its generated informers call
// InformerFor, which makes an informerdb informer of the object's type (see
// InformerFor). Each informer has its own store in the database, named
// after its group, version and kind ("apps/v1/Deployment", with
// "@ns=<namespace>" under WithNamespace and "@sel=<digest>" when
// WithTweakListOptions sets selectors); its scope records the cluster (see
// FactoryOptions.Cluster), the type, the namespace and the selectors, so a
// change of any of them relists into an empty store.
//
// The differences from client-go's factory:
//
//   - Its options are this package's SharedInformerOptions (WithNamespace,
//     WithTweakListOptions, WithCustomResyncConfig, WithTransform, with
//     client-go's meanings), not client-go's, whose values no other package
//     can read; WithFactoryOptions adds informerdb's (metrics, store options,
//     encryption, cluster identity).
//   - An informer it cannot make (its store cannot be opened: another
//     process holds the database beyond store.Options.LockTimeout) fails
//     the methods that can fail, never syncs, and WaitForCacheSync reports
//     it (SyncResult.Err holds the error).
//   - Shutdown stops the informers Start started (client-go's waits for
//     the stop channel given to Start to close), as it closes their stores.
//   - InformerName returns nil: informerdb's metrics are configured with
//     FactoryOptions.Informer.Metrics.
//
// A SharedInformerFactory is safe for concurrent use.
type SharedInformerFactory struct {
	e *schemeFactory
}

var _ informers.SharedInformerFactory = (*SharedInformerFactory)(nil)

// NewSharedInformerFactory returns a factory of informerdb informers of
// client-go's built-in types that keep their objects in the database at
// rawURL (see store.Open; the backend must be imported), list and watch
// through cfg, and resync their handlers every defaultResync (0: never), as
// informers.NewSharedInformerFactoryWithOptions(client, defaultResync,
// options...) does. It identifies the cluster as NewFactory does (ctx
// bounds the wait for an unreachable API server; FactoryOptions.Cluster
// skips it); it sends no other request.
func NewSharedInformerFactory(ctx context.Context, rawURL string, cfg *rest.Config, defaultResync time.Duration, options ...SharedInformerOption) (*SharedInformerFactory, error) {
	codecs := schemeCodecs{
		scheme:     scheme.Scheme,
		serializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(),
		params:     scheme.ParameterCodec,
		protobuf:   true,
	}
	e, err := newSchemeFactory(ctx, "new shared informer factory", rawURL, cfg, codecs, defaultResync, options)
	if err != nil {
		return nil, err
	}
	return &SharedInformerFactory{e: e}, nil
}

// InformerFor returns the informer of obj's type, as client-go's factory
// does, making it on first use: an informerdb informer of the type of obj,
// which must be one of client-go's scheme, listed and watched in the
// factory's namespace, with the indexers of the informer newFunc makes
// (newFunc is called with a nil client, to learn them; generated informers
// use their client only when they run).
func (f *SharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return f.e.informerFor(obj, func(resync time.Duration) cache.Indexers {
		if newFunc == nil {
			return nil
		}
		return indexersOf[kubernetes.Interface](newFunc, nil, resync)
	})
}

// InformerName returns nil: informerdb informers report their metrics
// through FactoryOptions.Informer.Metrics, under their store's name.
func (f *SharedInformerFactory) InformerName() *cache.InformerName { return nil }

// Start runs every informer made so far that is not running yet, until
// stopCh is closed or Shutdown.
func (f *SharedInformerFactory) Start(stopCh <-chan struct{}) {
	f.e.start(wait.ContextForChannel(stopCh))
}

// StartWithContext runs every informer made so far that is not running
// yet, until ctx is done or Shutdown.
func (f *SharedInformerFactory) StartWithContext(ctx context.Context) { f.e.start(ctx) }

// WaitForCacheSync waits until every started informer has synced, or
// stopCh is closed, and reports which have.
func (f *SharedInformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.e.waitForCacheSync(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext waits until every started informer has
// synced or stopped, or ctx is done, and reports which have synced; Err
// says why not all have (the errors of informers the factory could not
// make, ctx's cause).
func (f *SharedInformerFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return f.e.waitForCacheSync(ctx)
}

// ForResource returns the informer of resource's kind, and a lister, as
// client-go's factory does. The kind comes from the API server's
// discovery, which waits for an unreachable API server up to a minute.
func (f *SharedInformerFactory) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	g, err := f.e.forResource(resource)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Shutdown stops the informers Start started, waits for them to return,
// and closes the stores of every informer the factory made; the factory
// makes no informer afterwards. An error closing a store is logged (Close
// returns it). It may be called more than once.
func (f *SharedInformerFactory) Shutdown() {
	if err := f.Close(); err != nil {
		logger := klog.Background()
		if l := f.e.o.factory.Informer.Logger; l != nil {
			logger = *l
		}
		logger.Error(err, "Shutting down the shared informer factory")
	}
}

// Close is Shutdown, returning the errors of closing the stores.
func (f *SharedInformerFactory) Close() error { return f.e.shutdown() }

// CheckCommits is Informer.CheckCommits over every informer the factory
// made: nil while all of their commits get through. It is a liveness check
// for the process.
func (f *SharedInformerFactory) CheckCommits(maxFailing time.Duration) error {
	return f.e.checkCommits(maxFailing)
}

// tweak is the factory's WithTweakListOptions, for the generated groups.
func (f *SharedInformerFactory) tweak() internalinterfaces.TweakListOptionsFunc {
	return internalinterfaces.TweakListOptionsFunc(f.e.o.tweak)
}

// Admissionregistration returns the informers of group admissionregistration.k8s.io.
func (f *SharedInformerFactory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.e.o.namespace, f.tweak())
}

// Internal returns the informers of group internal.apiserver.k8s.io.
func (f *SharedInformerFactory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.e.o.namespace, f.tweak())
}

// Apps returns the informers of group apps.
func (f *SharedInformerFactory) Apps() apps.Interface {
	return apps.New(f, f.e.o.namespace, f.tweak())
}

// Autoscaling returns the informers of group autoscaling.
func (f *SharedInformerFactory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.e.o.namespace, f.tweak())
}

// Batch returns the informers of group batch.
func (f *SharedInformerFactory) Batch() batch.Interface {
	return batch.New(f, f.e.o.namespace, f.tweak())
}

// Certificates returns the informers of group certificates.k8s.io.
func (f *SharedInformerFactory) Certificates() certificates.Interface {
	return certificates.New(f, f.e.o.namespace, f.tweak())
}

// Coordination returns the informers of group coordination.k8s.io.
func (f *SharedInformerFactory) Coordination() coordination.Interface {
	return coordination.New(f, f.e.o.namespace, f.tweak())
}

// Core returns the informers of the core group.
func (f *SharedInformerFactory) Core() core.Interface {
	return core.New(f, f.e.o.namespace, f.tweak())
}

// Discovery returns the informers of group discovery.k8s.io.
func (f *SharedInformerFactory) Discovery() discoveryinformers.Interface {
	return discoveryinformers.New(f, f.e.o.namespace, f.tweak())
}

// Events returns the informers of group events.k8s.io.
func (f *SharedInformerFactory) Events() events.Interface {
	return events.New(f, f.e.o.namespace, f.tweak())
}

// Extensions returns the informers of group extensions.
func (f *SharedInformerFactory) Extensions() extensions.Interface {
	return extensions.New(f, f.e.o.namespace, f.tweak())
}

// Flowcontrol returns the informers of group flowcontrol.apiserver.k8s.io.
func (f *SharedInformerFactory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.e.o.namespace, f.tweak())
}

// Lifecycle returns the informers of group lifecycle.k8s.io.
func (f *SharedInformerFactory) Lifecycle() lifecycle.Interface {
	return lifecycle.New(f, f.e.o.namespace, f.tweak())
}

// Networking returns the informers of group networking.k8s.io.
func (f *SharedInformerFactory) Networking() networking.Interface {
	return networking.New(f, f.e.o.namespace, f.tweak())
}

// Node returns the informers of group node.k8s.io.
func (f *SharedInformerFactory) Node() node.Interface {
	return node.New(f, f.e.o.namespace, f.tweak())
}

// Policy returns the informers of group policy.
func (f *SharedInformerFactory) Policy() policy.Interface {
	return policy.New(f, f.e.o.namespace, f.tweak())
}

// Rbac returns the informers of group rbac.authorization.k8s.io.
func (f *SharedInformerFactory) Rbac() rbac.Interface {
	return rbac.New(f, f.e.o.namespace, f.tweak())
}

// Resource returns the informers of group resource.k8s.io.
func (f *SharedInformerFactory) Resource() resource.Interface {
	return resource.New(f, f.e.o.namespace, f.tweak())
}

// Scheduling returns the informers of group scheduling.k8s.io.
func (f *SharedInformerFactory) Scheduling() scheduling.Interface {
	return scheduling.New(f, f.e.o.namespace, f.tweak())
}

// Storage returns the informers of group storage.k8s.io.
func (f *SharedInformerFactory) Storage() storage.Interface {
	return storage.New(f, f.e.o.namespace, f.tweak())
}

// Storagemigration returns the informers of group storagemigration.k8s.io.
func (f *SharedInformerFactory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.e.o.namespace, f.tweak())
}
