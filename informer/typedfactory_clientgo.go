package informer

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
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
// Each informer has its own store in the database, named after its group,
// version and kind ("apps/v1/Deployment", with "@ns=<namespace>" under
// WithNamespace and "@sel=<digest>" when WithTweakListOptions sets
// selectors); its scope records the cluster, the type, the namespace and
// the selectors, so a change of any of them relists into an empty store.
//
// The differences from client-go's factory:
//
//   - Its options are this package's SharedInformerOptions, with
//     client-go's names and meanings, and WithFactoryOptions.
//   - An informer it cannot make (its store cannot be opened) fails the
//     methods that can fail, never syncs, and WaitForCacheSync reports it
//     (SyncResult.Err holds the error).
//   - Shutdown stops the informers Start started (client-go's waits for
//     the stop channel given to Start to close), as it closes their stores.
//   - InformerName returns nil: informerdb's metrics are configured with
//     FactoryOptions.Informer.Metrics.
//
// A SharedInformerFactory is safe for concurrent use.
type SharedInformerFactory struct {
	*schemeFactory
}

var _ informers.SharedInformerFactory = (*SharedInformerFactory)(nil)

// NewSharedInformerFactory returns a factory of informerdb informers of
// client-go's built-in types that keep their objects in the database at
// rawURL (see store.Open), list and watch through cfg, and resync their
// handlers every defaultResync (0: never), as
// informers.NewSharedInformerFactoryWithOptions does. It identifies the
// cluster as NewFactory does (within ctx); it sends no other request.
func NewSharedInformerFactory(ctx context.Context, rawURL string, cfg *rest.Config, defaultResync time.Duration, options ...SharedInformerOption) (*SharedInformerFactory, error) {
	codecs := schemeCodecs{
		scheme:     scheme.Scheme,
		serializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(),
		params:     scheme.ParameterCodec,
		protobuf:   true,
	}
	e, err := newSchemeFactory(ctx, "shared informer factory", rawURL, cfg, codecs, defaultResync, options)
	if err != nil {
		return nil, err
	}
	return &SharedInformerFactory{e}, nil
}

// InformerFor returns the informer of obj's type, which must be in
// client-go's scheme, making it on first use, as client-go's factory does,
// with the indexers of the informer newFunc makes (called with a nil
// client, to learn them).
func (f *SharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return f.informerFor(obj, func(resync time.Duration) cache.Indexers {
		if newFunc == nil {
			return nil
		}
		return indexersOf[kubernetes.Interface](newFunc, nil, resync)
	})
}

// tweak is the factory's WithTweakListOptions, for the generated groups.
func (f *SharedInformerFactory) tweak() internalinterfaces.TweakListOptionsFunc {
	return internalinterfaces.TweakListOptionsFunc(f.o.tweak)
}

// Admissionregistration returns the informers of group admissionregistration.k8s.io.
func (f *SharedInformerFactory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.o.namespace, f.tweak())
}

// Internal returns the informers of group internal.apiserver.k8s.io.
func (f *SharedInformerFactory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.o.namespace, f.tweak())
}

// Apps returns the informers of group apps.
func (f *SharedInformerFactory) Apps() apps.Interface {
	return apps.New(f, f.o.namespace, f.tweak())
}

// Autoscaling returns the informers of group autoscaling.
func (f *SharedInformerFactory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.o.namespace, f.tweak())
}

// Batch returns the informers of group batch.
func (f *SharedInformerFactory) Batch() batch.Interface {
	return batch.New(f, f.o.namespace, f.tweak())
}

// Certificates returns the informers of group certificates.k8s.io.
func (f *SharedInformerFactory) Certificates() certificates.Interface {
	return certificates.New(f, f.o.namespace, f.tweak())
}

// Coordination returns the informers of group coordination.k8s.io.
func (f *SharedInformerFactory) Coordination() coordination.Interface {
	return coordination.New(f, f.o.namespace, f.tweak())
}

// Core returns the informers of the core group.
func (f *SharedInformerFactory) Core() core.Interface {
	return core.New(f, f.o.namespace, f.tweak())
}

// Discovery returns the informers of group discovery.k8s.io.
func (f *SharedInformerFactory) Discovery() discoveryinformers.Interface {
	return discoveryinformers.New(f, f.o.namespace, f.tweak())
}

// Events returns the informers of group events.k8s.io.
func (f *SharedInformerFactory) Events() events.Interface {
	return events.New(f, f.o.namespace, f.tweak())
}

// Extensions returns the informers of group extensions.
func (f *SharedInformerFactory) Extensions() extensions.Interface {
	return extensions.New(f, f.o.namespace, f.tweak())
}

// Flowcontrol returns the informers of group flowcontrol.apiserver.k8s.io.
func (f *SharedInformerFactory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.o.namespace, f.tweak())
}

// Lifecycle returns the informers of group lifecycle.k8s.io.
func (f *SharedInformerFactory) Lifecycle() lifecycle.Interface {
	return lifecycle.New(f, f.o.namespace, f.tweak())
}

// Networking returns the informers of group networking.k8s.io.
func (f *SharedInformerFactory) Networking() networking.Interface {
	return networking.New(f, f.o.namespace, f.tweak())
}

// Node returns the informers of group node.k8s.io.
func (f *SharedInformerFactory) Node() node.Interface {
	return node.New(f, f.o.namespace, f.tweak())
}

// Policy returns the informers of group policy.
func (f *SharedInformerFactory) Policy() policy.Interface {
	return policy.New(f, f.o.namespace, f.tweak())
}

// Rbac returns the informers of group rbac.authorization.k8s.io.
func (f *SharedInformerFactory) Rbac() rbac.Interface {
	return rbac.New(f, f.o.namespace, f.tweak())
}

// Resource returns the informers of group resource.k8s.io.
func (f *SharedInformerFactory) Resource() resource.Interface {
	return resource.New(f, f.o.namespace, f.tweak())
}

// Scheduling returns the informers of group scheduling.k8s.io.
func (f *SharedInformerFactory) Scheduling() scheduling.Interface {
	return scheduling.New(f, f.o.namespace, f.tweak())
}

// Storage returns the informers of group storage.k8s.io.
func (f *SharedInformerFactory) Storage() storage.Interface {
	return storage.New(f, f.o.namespace, f.tweak())
}

// Storagemigration returns the informers of group storagemigration.k8s.io.
func (f *SharedInformerFactory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.o.namespace, f.tweak())
}
