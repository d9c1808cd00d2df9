package informer

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/internal/typednil"
)

// clientsetCodecs is how a Factory's typed informers encode their requests
// and decode the answers: as the clientset's generated clients do.
var clientsetCodecs = schemeCodecs{scheme: scheme.Scheme, params: scheme.ParameterCodec, protobuf: true}

// clientsetREST returns the REST client through which a Factory's typed
// informers list and watch: the clientset's core/v1 client, whose requests
// they send to their own group version's path. Every client of a
// clientset shares its API server, HTTP client, rate limiter and codecs
// (client-go's scheme), so this is the request the resource's own typed
// client would send. It is nil for a clientset without REST clients (the
// fake clientsets).
func clientsetREST(client kubernetes.Interface) rest.Interface {
	rc := client.CoreV1().RESTClient()
	if rc == nil || typednil.Is(rc) {
		return nil
	}
	return rc
}

// apiPath is the path of gv's resources on the API server: "/api/v1",
// "/apis/apps/v1".
func apiPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// builtinKind returns the kind of gvr in client-go's scheme: the listable
// kind of gvr's group and version whose resource name is gvr.Resource
// (ConfigMap for configmaps, NetworkPolicy for networkpolicies), as the API
// server names built-in resources after their kinds.
func builtinKind(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if gvr.Version == "" || gvr.Resource == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("version and resource are required")
	}
	gv := gvr.GroupVersion()
	var kinds []string
	for kind := range scheme.Scheme.KnownTypes(gv) {
		gvk := gv.WithKind(kind)
		if !scheme.Scheme.Recognizes(gv.WithKind(kind + "List")) {
			continue // not a resource: options, subresources (Scale, Eviction), lists
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == gvr.Resource {
			kinds = append(kinds, kind)
		}
	}
	switch len(kinds) {
	case 0:
		return schema.GroupVersionKind{}, fmt.Errorf("not a resource of client-go's clientset (only built-in resources are supported; DynamicInformerFor serves the others)")
	case 1:
		return gv.WithKind(kinds[0]), nil
	}
	slices.Sort(kinds)
	return schema.GroupVersionKind{}, fmt.Errorf("resource of several kinds of client-go's scheme: %v", kinds)
}

// typedListerWatcher returns the ListerWatcher of gvr's objects as the
// clientset's Go type, an example of them, and whether it lists one
// namespace. The kind comes from client-go's scheme, whether it is
// namespaced (when FactoryOptions.Namespace is set) from the API server's
// discovery, and requests go through a REST client (clientsetREST): no
// clientset method is looked up by name, which would keep the linker from
// dropping the thousands a program does not call.
func (f *Factory) typedListerWatcher(ctx context.Context, gvr schema.GroupVersionResource) (cache.ListerWatcherWithContext, runtime.Object, bool, error) {
	fail := func(format string, args ...interface{}) (cache.ListerWatcherWithContext, runtime.Object, bool, error) {
		return nil, nil, false, fmt.Errorf("informer: factory: resource %s: "+format, append([]interface{}{StoreName(gvr)}, args...)...)
	}
	gvk, err := builtinKind(gvr)
	if err != nil {
		return fail("%w", err)
	}
	example, err := scheme.Scheme.New(gvk)
	if err != nil {
		return fail("%w", err)
	}
	if f.rest == nil && f.fake == nil {
		return fail("the clientset has no REST client (CoreV1().RESTClient() is nil)")
	}
	namespaced := false
	if f.opts.Namespace != "" {
		if namespaced, err = f.isNamespaced(ctx, gvr); err != nil {
			return fail("%w", err)
		}
	}
	ns := ""
	if namespaced {
		ns = f.opts.Namespace
	}
	if f.rest == nil {
		return &fakeClientLW{client: f.fake, gvr: gvr, gvk: gvk, namespace: ns, tweak: f.tweak}, example, namespaced, nil
	}
	m := fixedMapping{resource: gvr.Resource, namespaced: namespaced, client: f.rest, absPath: apiPath(gvr.GroupVersion())}
	return &restLW{mapper: m, codecs: clientsetCodecs, gvk: gvk, namespace: ns, tweak: f.tweak}, example, namespaced, nil
}
