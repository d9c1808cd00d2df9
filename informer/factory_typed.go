package informer

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/informerdb/informerdb/internal/typednil"
)

// clientsetCodecs is how a Factory's typed informers encode their requests
// and decode the answers: as the clientset's generated clients do.
var clientsetCodecs = schemeCodecs{scheme: scheme.Scheme, params: scheme.ParameterCodec, protobuf: true}

// clientsetREST returns the REST client through which a Factory's typed
// informers list and watch, sending their requests to their own group
// version's path: the clientset's core/v1 client, whose API server, HTTP
// client, rate limiter and codecs every client of the clientset shares.
// It is nil for a fake clientset.
func clientsetREST(client kubernetes.Interface) rest.Interface {
	rc := client.CoreV1().RESTClient()
	if rc == nil || typednil.Is(rc) {
		return nil
	}
	return rc
}

// builtinKind returns the kind of gvr in client-go's scheme: the listable
// kind of gvr's group and version whose resource name is gvr.Resource
// (ConfigMap for configmaps, NetworkPolicy for networkpolicies), as the API
// server names built-in resources after their kinds.
func builtinKind(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
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
