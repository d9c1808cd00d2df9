package informer

import (
	"context"
	"errors"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// GeneratedFactory runs the informers of a package that
// k8s.io/code-generator's informer-gen wrote (the externalversions of a
// custom resource's clientset) on informerdb: it satisfies that package's
// internalinterfaces.SharedInformerFactory, whose InformerFor takes the
// package's NewInformerFunc, F, a func(C, time.Duration)
// cache.SharedIndexInformer of the package's versioned clientset C. The
// package's group constructors take it where its own factory's group
// accessors took theirs:
//
//	import (
//		"github.com/example/site/pkg/generated/clientset/versioned/scheme"
//		"github.com/example/site/pkg/generated/informers/externalversions/internalinterfaces"
//		samplegroup "github.com/example/site/pkg/generated/informers/externalversions/sample"
//	)
//
//	f, err := informer.NewGeneratedFactory[internalinterfaces.NewInformerFunc](ctx, dbURL, cfg, scheme.Scheme, 30*time.Second)
//	sites := samplegroup.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Sites() // was f.Sample().V1alpha1().Sites()
//	f.Start(ctx.Done())
//
// Its informers, stores, options and differences from the generated
// factory are those of SharedInformerFactory, over the types of the
// scheme given (the generated clientset's scheme package), listed and
// watched through REST clients built from the rest.Config with that
// scheme's codecs.
//
// A GeneratedFactory is safe for concurrent use.
type GeneratedFactory[F ~func(C, time.Duration) cache.SharedIndexInformer, C any] struct {
	e *schemeFactory
}

// NewGeneratedFactory returns a factory of informerdb informers of the
// types of sch that keep their objects in the database at rawURL, list and
// watch through cfg, and resync their handlers every defaultResync, as the
// generated NewSharedInformerFactoryWithOptions(client, defaultResync,
// options...) does. F is the generated package's NewInformerFunc (C, its
// clientset, is inferred from it). It identifies the cluster as
// NewSharedInformerFactory does.
func NewGeneratedFactory[F ~func(C, time.Duration) cache.SharedIndexInformer, C any](ctx context.Context, rawURL string, cfg *rest.Config, sch *runtime.Scheme, defaultResync time.Duration, options ...SharedInformerOption) (*GeneratedFactory[F, C], error) {
	if sch == nil {
		return nil, errors.New("informer: new generated factory: nil scheme")
	}
	codecs := schemeCodecs{
		scheme:     sch,
		serializer: serializer.NewCodecFactory(sch).WithoutConversion(),
		params:     runtime.NewParameterCodec(sch),
	}
	e, err := newSchemeFactory(ctx, "new generated factory", rawURL, cfg, codecs, defaultResync, options)
	if err != nil {
		return nil, err
	}
	return &GeneratedFactory[F, C]{e: e}, nil
}

// InformerFor returns the informer of obj's type, making it on first use,
// as SharedInformerFactory.InformerFor does: obj's type must be in the
// factory's scheme; newFunc is called with a nil client, to learn its
// indexers.
func (f *GeneratedFactory[F, C]) InformerFor(obj runtime.Object, newFunc F) cache.SharedIndexInformer {
	return f.e.informerFor(obj, func(resync time.Duration) cache.Indexers {
		if newFunc == nil {
			return nil
		}
		var client C
		return indexersOf(newFunc, client, resync)
	})
}

// Namespace returns the namespace of WithNamespace, for the generated
// group constructors.
func (f *GeneratedFactory[F, C]) Namespace() string { return f.e.o.namespace }

// TweakListOptions returns the function of WithTweakListOptions (nil
// without), for the generated group constructors.
func (f *GeneratedFactory[F, C]) TweakListOptions() func(*metav1.ListOptions) { return f.e.o.tweak }

// InformerName returns nil, as SharedInformerFactory.InformerName does.
func (f *GeneratedFactory[F, C]) InformerName() *cache.InformerName { return nil }

// Start runs every informer made so far that is not running yet, until
// stopCh is closed or Shutdown.
func (f *GeneratedFactory[F, C]) Start(stopCh <-chan struct{}) {
	f.e.start(wait.ContextForChannel(stopCh))
}

// StartWithContext runs every informer made so far that is not running
// yet, until ctx is done or Shutdown.
func (f *GeneratedFactory[F, C]) StartWithContext(ctx context.Context) { f.e.start(ctx) }

// WaitForCacheSync waits until every started informer has synced, or
// stopCh is closed, and reports which have.
func (f *GeneratedFactory[F, C]) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.e.waitForCacheSync(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext is SharedInformerFactory.WaitForCacheSyncWithContext.
func (f *GeneratedFactory[F, C]) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return f.e.waitForCacheSync(ctx)
}

// ForResource returns the informer of resource's kind, which must be in
// the factory's scheme, and a lister, as SharedInformerFactory.ForResource
// does. The result is also the generated package's GenericInformer.
func (f *GeneratedFactory[F, C]) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	g, err := f.e.forResource(resource)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Shutdown is SharedInformerFactory.Shutdown.
func (f *GeneratedFactory[F, C]) Shutdown() {
	if err := f.Close(); err != nil {
		logger := klog.Background()
		if l := f.e.o.factory.Informer.Logger; l != nil {
			logger = *l
		}
		logger.Error(err, "Shutting down the generated informer factory")
	}
}

// Close is Shutdown, returning the errors of closing the stores.
func (f *GeneratedFactory[F, C]) Close() error { return f.e.shutdown() }

// CheckCommits is SharedInformerFactory.CheckCommits.
func (f *GeneratedFactory[F, C]) CheckCommits(maxFailing time.Duration) error {
	return f.e.checkCommits(maxFailing)
}
