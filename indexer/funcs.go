package indexer

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Index names used by the helpers below.
const (
	NamespaceIndex  = cache.NamespaceIndex
	OwnerUIDIndex   = "owner-uid"
	ControllerIndex = "controller"
)

// NamespaceIndexFunc indexes objects by namespace, as client-go's
// cache.MetaNamespaceIndexFunc.
func NamespaceIndexFunc(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("namespace index: %w", err)
	}
	return []string{m.GetNamespace()}, nil
}

// LabelIndexFunc returns an index function that indexes objects by the value
// of one label. Objects without the label have no entry.
func LabelIndexFunc(labelKey string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("label %q index: %w", labelKey, err)
		}
		if v, ok := m.GetLabels()[labelKey]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}

// OwnerUIDIndexFunc indexes objects by the UIDs of all their owners: the
// lookup a controller does to find what an object owns.
func OwnerUIDIndexFunc(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("owner index: %w", err)
	}
	refs := m.GetOwnerReferences()
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, string(r.UID))
	}
	return out, nil
}

// ControllerIndexFunc indexes objects by their controlling owner as
// "Kind/namespace/name" (the namespace is the object's own, since owners live
// in the same namespace or are cluster-scoped, "Kind//name"). Objects without
// a controller have no entry.
func ControllerIndexFunc(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("controller index: %w", err)
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil {
		return nil, nil
	}
	return []string{ControllerIndexValue(ref.Kind, m.GetNamespace(), ref.Name)}, nil
}

// ControllerIndexValue is the value ControllerIndexFunc gives objects
// controlled by the named owner.
func ControllerIndexValue(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// FieldIndexFunc returns an index function that indexes objects by the value
// of a field given as a dotted path ("spec.nodeName", "metadata.name").
// String, boolean and integer fields are indexed; objects where the field is
// absent have no entry. Metadata fields are read through the object's
// accessor; other fields of typed objects go through a conversion to
// unstructured, which costs tens of microseconds per object: for hot indexes
// on typed objects, write a typed index function instead.
func FieldIndexFunc(path string) cache.IndexFunc {
	fields := strings.Split(path, ".")
	return func(obj interface{}) ([]string, error) {
		if len(fields) == 2 && fields[0] == "metadata" {
			if m, err := meta.Accessor(obj); err == nil {
				switch fields[1] {
				case "name":
					return []string{m.GetName()}, nil
				case "namespace":
					return []string{m.GetNamespace()}, nil
				case "uid":
					return []string{string(m.GetUID())}, nil
				}
			}
		}
		var content map[string]interface{}
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			content = o.Object
		case runtime.Object:
			var err error
			content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return nil, fmt.Errorf("field %q index: %w", path, err)
			}
		default:
			return nil, fmt.Errorf("field %q index: %T is not a runtime.Object", path, obj)
		}
		v, found, err := unstructured.NestedFieldNoCopy(content, fields...)
		if err != nil {
			return nil, fmt.Errorf("field %q index: %w", path, err)
		}
		if !found || v == nil {
			return nil, nil
		}
		switch x := v.(type) {
		case string:
			return []string{x}, nil
		case bool:
			return []string{strconv.FormatBool(x)}, nil
		case int64:
			return []string{strconv.FormatInt(x, 10)}, nil
		case float64:
			return []string{strconv.FormatFloat(x, 'g', -1, 64)}, nil
		}
		return nil, fmt.Errorf("field %q index: value of type %T cannot be indexed", path, v)
	}
}
