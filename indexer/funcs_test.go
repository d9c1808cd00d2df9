package indexer_test

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/indexer"
)

func ownedPod() *corev1.Pod {
	p := pod("ns", "p", "app=web")
	p.OwnerReferences = []metav1.OwnerReference{
		{Kind: "ReplicaSet", Name: "rs-1", UID: "uid-rs", Controller: ptr.To(true)},
		{Kind: "ConfigMap", Name: "cm", UID: "uid-cm"},
	}
	p.Spec.NodeName = "node-7"
	p.Spec.Priority = ptr.To[int32](5)
	p.Spec.HostNetwork = true
	p.UID = "uid-p"
	return p
}

func ownedUnstructured() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{
			"namespace": "ns", "name": "p", "uid": "uid-p",
			"labels": map[string]interface{}{"app": "web"},
			"ownerReferences": []interface{}{
				map[string]interface{}{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-1", "uid": "uid-rs", "controller": true},
				map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "uid-cm"},
			},
		},
		"spec": map[string]interface{}{"nodeName": "node-7", "priority": int64(5), "hostNetwork": true, "ratio": 0.5, "list": []interface{}{"x"}},
	}}
}

func TestIndexFuncs(t *testing.T) {
	for _, obj := range []struct {
		name string
		obj  interface{}
	}{{"typed", ownedPod()}, {"unstructured", ownedUnstructured()}} {
		t.Run(obj.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				fn   cache.IndexFunc
				want []string
			}{
				{"namespace", indexer.NamespaceIndexFunc, []string{"ns"}},
				{"label present", indexer.LabelIndexFunc("app"), []string{"web"}},
				{"label absent", indexer.LabelIndexFunc("tier"), nil},
				{"owner uids", indexer.OwnerUIDIndexFunc, []string{"uid-cm", "uid-rs"}},
				{"controller", indexer.ControllerIndexFunc, []string{indexer.ControllerIndexValue("ReplicaSet", "ns", "rs-1")}},
				{"field string", indexer.FieldIndexFunc("spec.nodeName"), []string{"node-7"}},
				{"field integer", indexer.FieldIndexFunc("spec.priority"), []string{"5"}},
				{"field bool", indexer.FieldIndexFunc("spec.hostNetwork"), []string{"true"}},
				{"field absent", indexer.FieldIndexFunc("spec.schedulerName.x"), nil},
				{"metadata name", indexer.FieldIndexFunc("metadata.name"), []string{"p"}},
				{"metadata uid", indexer.FieldIndexFunc("metadata.uid"), []string{"uid-p"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got, err := tc.fn(obj.obj)
					if err != nil {
						t.Fatalf("index function: %v", err)
					}
					sort.Strings(got)
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("(-want +got):\n%s", diff)
					}
				})
			}
		})
	}
	if got := indexer.ControllerIndexValue("Node", "", "n1"); got != "Node//n1" {
		t.Errorf("ControllerIndexValue of a cluster-scoped owner = %q", got)
	}
}

func TestIndexFuncsNoOwners(t *testing.T) {
	p := pod("ns", "p")
	for name, fn := range map[string]cache.IndexFunc{"owner": indexer.OwnerUIDIndexFunc, "controller": indexer.ControllerIndexFunc} {
		got, err := fn(p)
		if err != nil || got != nil {
			t.Errorf("%s index of an object without owners = %q, %v; want no entry", name, got, err)
		}
	}
}

func TestIndexFuncErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   cache.IndexFunc
		obj  interface{}
	}{
		{"namespace of a string", indexer.NamespaceIndexFunc, "x"},
		{"label of a number", indexer.LabelIndexFunc("a"), 3},
		{"owner of a string", indexer.OwnerUIDIndexFunc, "x"},
		{"controller of a string", indexer.ControllerIndexFunc, "x"},
		{"field of a non-object", indexer.FieldIndexFunc("spec.x"), struct{}{}},
		{"field holding a map", indexer.FieldIndexFunc("metadata.labels"), ownedUnstructured()},
		{"field holding a list", indexer.FieldIndexFunc("spec.list"), ownedUnstructured()},
		{"field through a string", indexer.FieldIndexFunc("spec.nodeName.deeper"), ownedUnstructured()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.fn(tc.obj); err == nil {
				t.Errorf("no error; got values %q", got)
			}
		})
	}
	// A float field is indexed in its shortest form.
	got, err := indexer.FieldIndexFunc("spec.ratio")(ownedUnstructured())
	if err != nil || !cmp.Equal(got, []string{"0.5"}) {
		t.Errorf("float field = %q, %v; want 0.5", got, err)
	}
}
