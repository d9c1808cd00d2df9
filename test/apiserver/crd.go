package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// CRDResource is the resource of CustomResourceDefinitions.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CreateCRD creates a namespaced custom resource served as gvr, of kind
// kind, whose objects keep any field (and have a status subresource when
// status is set), and waits until the API server serves it. A failure
// fails the test.
func CreateCRD(t testing.TB, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string, status bool) {
	t.Helper()
	version := map[string]interface{}{
		"name": gvr.Version, "served": true, "storage": true,
		"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
			"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		}},
	}
	if status {
		version["subresources"] = map[string]interface{}{"status": map[string]interface{}{}}
	}
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": gvr.Resource + "." + gvr.Group},
		"spec": map[string]interface{}{
			"group": gvr.Group,
			"names": map[string]interface{}{
				"plural": gvr.Resource, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List",
			},
			"scope":    "Namespaced",
			"versions": []interface{}{version},
		},
	}}
	if _, err := dyn.Resource(CRDResource).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("apiserver: create the CRD of %s: %v", gvr, err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("apiserver: %s is not served: %v", gvr, err)
	}
}
