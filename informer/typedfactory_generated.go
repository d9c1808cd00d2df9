package informer

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// GeneratedFactory runs on informerdb the informers of a package that
// informer-gen wrote (the externalversions of a custom resource's
// clientset): it satisfies that package's
// internalinterfaces.SharedInformerFactory, whose InformerFor takes F, the
// package's NewInformerFunc of its clientset C. The package's group
// constructors take it where its own factory's accessors took theirs:
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
// generated clientset's scheme.
//
// A GeneratedFactory is safe for concurrent use.
type GeneratedFactory[F ~func(C, time.Duration) cache.SharedIndexInformer, C any] struct {
	*schemeFactory
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
	e, err := newSchemeFactory(ctx, "generated factory", rawURL, cfg, codecs, defaultResync, options)
	if err != nil {
		return nil, err
	}
	return &GeneratedFactory[F, C]{e}, nil
}

// InformerFor returns the informer of obj's type, making it on first use,
// as SharedInformerFactory.InformerFor does: obj's type must be in the
// factory's scheme; newFunc is called with a nil client, to learn its
// indexers.
func (f *GeneratedFactory[F, C]) InformerFor(obj runtime.Object, newFunc F) cache.SharedIndexInformer {
	return f.informerFor(obj, func(resync time.Duration) cache.Indexers {
		if newFunc == nil {
			return nil
		}
		var client C
		return indexersOf(newFunc, client, resync)
	})
}

// Namespace returns the namespace of WithNamespace, for the generated
// group constructors.
func (f *GeneratedFactory[F, C]) Namespace() string { return f.o.namespace }

// TweakListOptions returns the function of WithTweakListOptions (nil
// without), for the generated group constructors.
func (f *GeneratedFactory[F, C]) TweakListOptions() func(*metav1.ListOptions) { return f.o.tweak }
