package informer

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// listRecorder records the namespace of every list a fake client serves.
type listRecorder struct {
	mu         sync.Mutex
	namespaces []string
}

func (r *listRecorder) record(a k8stesting.Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.namespaces = append(r.namespaces, a.GetNamespace())
}

func (r *listRecorder) listed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.namespaces...)
}

// fakeDynamic serves two cluster-scoped widgets at resourceVersion 10 and
// watches that send nothing.
func fakeDynamic(lists *listRecorder) *dynamicfake.FakeDynamicClient {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList"})
	c.PrependReactor("list", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lists.record(a)
		list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "WidgetList"}}
		list.SetResourceVersion("10")
		for i, name := range []string{"w1", "w2"} {
			u := unstructured.Unstructured{}
			u.SetAPIVersion("example.com/v1")
			u.SetKind("Widget")
			u.SetName(name)
			u.SetUID(types.UID("uid-" + name))
			u.SetResourceVersion(string(rune('3' + i)))
			list.Items = append(list.Items, u)
		}
		return true, list, nil
	})
	c.PrependWatchReactor("widgets", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	return c
}

// fakeMetadata serves the metadata of ConfigMap a/x at resourceVersion 10
// and watches that send nothing.
func fakeMetadata(lists *listRecorder) *metadatafake.FakeMetadataClient {
	c := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	c.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lists.record(a)
		m := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", UID: "uid-x", ResourceVersion: "5", Labels: map[string]string{"app": "x"}},
		}
		return true, &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []runtime.RawExtension{{Object: m}}}, nil
	})
	c.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	return c
}

// TestFactoryObjectKinds: one factory, one database, three kinds of
// informers: a custom resource through the dynamic client, ConfigMaps'
// metadata through the metadata client, and ConfigMaps as the clientset's
// type. Each has its own store, which a restarted factory finds again.
func TestFactoryObjectKinds(t *testing.T) {
	ctx := t.Context()
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	client, _ := fakeClientset()
	// Discovery: widgets are cluster-scoped, configmaps namespaced.
	client.Resources = []*metav1.APIResourceList{
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: false, Kind: "Widget"}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap"}}},
	}
	dynLists, metaLists := &listRecorder{}, &listRecorder{}
	opts := &FactoryOptions{
		Namespace: "a",
		Dynamic:   fakeDynamic(dynLists),
		Metadata:  fakeMetadata(metaLists),
		Informer:  testOptions(),
		Store:     store.Options{Durability: store.DurabilityNoSync},
	}
	type made struct {
		name string
		inf  *Informer
	}
	build := func(t *testing.T, f *Factory) []made {
		t.Helper()
		var out []made
		for _, mk := range []struct {
			name string
			fn   func(context.Context, schema.GroupVersionResource) (*Informer, error)
			gvr  schema.GroupVersionResource
		}{
			{"example.com/v1/widgets/unstructured", f.DynamicInformerFor, widgetsGVR},
			{"core/v1/configmaps/metadata", f.MetadataInformerFor, configMapsGVR},
			{"core/v1/configmaps", f.InformerFor, configMapsGVR},
		} {
			inf, err := mk.fn(ctx, mk.gvr)
			if err != nil {
				t.Fatalf("informer for %s: %v", mk.name, err)
			}
			if again, err := mk.fn(ctx, mk.gvr); err != nil || again != inf {
				t.Errorf("second call for %s = %p, %v; want the same informer %p", mk.name, again, err, inf)
			}
			if got := inf.Store().Info().Name; got != mk.name {
				t.Errorf("store name = %q, want %q", got, mk.name)
			}
			out = append(out, made{mk.name, inf})
		}
		return out
	}
	// keysAndTypes lists a store's keys with the Go type of each object.
	keysAndTypes := func(s interface{ List() []interface{} }) []string {
		var out []string
		for _, obj := range s.List() {
			key, err := cache.MetaNamespaceKeyFunc(obj)
			if err != nil {
				t.Fatalf("key of %T: %v", obj, err)
			}
			out = append(out, key+" "+strings.TrimPrefix(typeName(obj), "*"))
		}
		sort.Strings(out)
		return out
	}
	want := map[string][]string{
		"example.com/v1/widgets/unstructured": {"w1 unstructured.Unstructured", "w2 unstructured.Unstructured"},
		"core/v1/configmaps/metadata":         {"a/x v1.PartialObjectMetadata"},
		"core/v1/configmaps":                  {"a/x v1.ConfigMap"},
	}

	f, err := NewFactory(ctx, dbURL, client, opts)
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	infs := build(t, f)
	f.Start(ctx)
	if diff := cmp.Diff(map[schema.GroupVersionResource]bool{widgetsGVR: true, configMapsGVR: true}, f.WaitForCacheSync(ctx)); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	for _, m := range infs {
		if diff := cmp.Diff(want[m.name], keysAndTypes(m.inf.GetStore())); diff != "" {
			t.Errorf("%s holds (-want +got):\n%s", m.name, diff)
		}
	}
	// The factory's namespace applies to the namespaced resource only.
	if diff := cmp.Diff([]string{""}, dynLists.listed()); diff != "" {
		t.Errorf("namespaces of the widget lists (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, metaLists.listed()); diff != "" {
		t.Errorf("namespaces of the metadata lists (-want +got):\n%s", diff)
	}
	if err := f.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	// A restarted factory finds each store as it was left, before it runs.
	f2, err := NewFactory(ctx, dbURL, client, opts)
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer func() { _ = f2.Shutdown() }()
	for _, m := range build(t, f2) {
		if reset := m.inf.Store().Info().Reset; reset != "" {
			t.Errorf("%s reset on restart: %s", m.name, reset)
		}
		if diff := cmp.Diff(want[m.name], keysAndTypes(m.inf.GetStore())); diff != "" {
			t.Errorf("%s after the restart holds (-want +got):\n%s", m.name, diff)
		}
	}
}

func TestFactoryObjectKindsBadInput(t *testing.T) {
	ctx := t.Context()
	client, _ := fakeClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "example.com/v1"}}
	f, err := NewFactory(ctx, "memory://", client, &FactoryOptions{Cluster: "test", Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Shutdown() }()
	withDynamic, err := NewFactory(ctx, "memory://", client, &FactoryOptions{Cluster: "test", Namespace: "a", Dynamic: fakeDynamic(&listRecorder{})})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = withDynamic.Shutdown() }()
	for _, tc := range []struct {
		what string
		fn   func(context.Context, schema.GroupVersionResource) (*Informer, error)
		gvr  schema.GroupVersionResource
		want string
	}{
		{"dynamic without a dynamic client", f.DynamicInformerFor, configMapsGVR, "no dynamic client"},
		{"metadata without a metadata client", f.MetadataInformerFor, configMapsGVR, "no metadata client"},
		{"a resource discovery does not list", withDynamic.DynamicInformerFor, widgetsGVR, `does not serve "widgets"`},
		{"no version", f.MetadataInformerFor, schema.GroupVersionResource{Resource: "x"}, "version and resource are required"},
	} {
		if inf, err := tc.fn(ctx, tc.gvr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want an error containing %q", tc.what, inf, err, tc.want)
		}
	}
	if _, err := NewFactoryForConfig(ctx, "memory://", nil, nil); err == nil {
		t.Errorf("NewFactoryForConfig with a nil config succeeded")
	}
}
