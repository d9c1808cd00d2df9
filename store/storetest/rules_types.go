package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

var _ = addRules(
	rule{name: "Types/Unstructured", contract: "unstructured objects with a JSON codec are stored, indexed and returned with their int64 numbers", fn: testUnstructured},
	rule{name: "Types/PlainStruct", contract: "plain Go struct values with a custom named key function and a JSON codec are stored and indexed", fn: testPlainStruct},
	rule{name: "Codec/AnotherType", contract: "an object of another type than the codec's (what a transform may return): backends that encode objects refuse it with ErrInvalid wrapping indexer.ErrWrongType, naming the type the codec wants and the one given; the others keep it as given", fn: testAnotherType},
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

func unstructuredOptions(name string) *store.Options {
	return &store.Options{
		Name:     name,
		Codec:    indexer.NewUnstructuredCodec(widgetGVK),
		Indexers: cache.Indexers{idxApp: labelIndex("app")},
	}
}

func newUnstructured(ns, name, rv, app string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata": map[string]interface{}{
			"namespace":       ns,
			"name":            name,
			"resourceVersion": rv,
			"labels":          map[string]interface{}{"app": app},
		},
		"spec": map[string]interface{}{"replicas": replicas, "ratio": 0.5, "on": true},
	}}
}

// checkUnstructured checks that the stored object has spec.replicas as an
// int64, as the dynamic client delivers it.
func checkUnstructured(t *testing.T, s store.Store, key string, replicas int64) {
	t.Helper()
	obj, ok, err := s.GetByKey(key)
	if err != nil || !ok {
		t.Fatalf("GetByKey(%q) = _, %v, %v", key, ok, err)
	}
	u, isU := obj.(*unstructured.Unstructured)
	if !isU {
		t.Fatalf("GetByKey(%q) returned %T; want *unstructured.Unstructured", key, obj)
	}
	got, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
	if err != nil || !found {
		t.Fatalf("spec.replicas of %q: found %v, %v", key, found, err)
	}
	if diff := cmp.Diff(interface{}(replicas), got); diff != "" {
		t.Errorf("spec.replicas of %q (-want +got; must be int64):\n%s", key, diff)
	}
}

func testUnstructured(t *testing.T, h *harness) {
	s := h.open(t, h.url(t), unstructuredOptions("widgets"))
	a, b := newUnstructured("ns", "a", "1", "web", 3), newUnstructured("", "b", "2", "web", 1<<53+1)
	mustOK(t, "Commit", s.Commit(t.Context(), store.Batch{ResourceVersion: "2", Ops: []store.Op{
		{Type: store.OpPut, Object: a}, {Type: store.OpPut, Object: b},
	}}))
	checkContents(t, s, want(t, a, b))
	checkUnstructured(t, s, "ns/a", 3)
	checkUnstructured(t, s, "b", 1<<53+1)
	checkDiff(t, []string{"b", "ns/a"}, indexKeys(t, s, idxApp, "web"), "IndexKeys(app, web)")
	CheckIndexes(t, s)
}

// widget is a plain Go struct stored by value, keyed by Name.
type widget struct {
	Name  string   `json:"name"`
	Size  int64    `json:"size"`
	Tags  []string `json:"tags"`
	Owner string   `json:"owner,omitempty"`
}

func widgetKey(obj interface{}) (string, error) {
	w, ok := obj.(widget)
	if !ok {
		return "", fmt.Errorf("storetest: widget key of %T", obj)
	}
	return w.Name, nil
}

func widgetTags(obj interface{}) ([]string, error) {
	w, ok := obj.(widget)
	if !ok {
		return nil, fmt.Errorf("storetest: widget tags of %T", obj)
	}
	return w.Tags, nil
}

func widgetOptions(t testing.TB, name string) *store.Options {
	t.Helper()
	c, err := indexer.NewCodec(widget{})
	mustOK(t, "indexer.NewCodec(widget{})", err)
	return &store.Options{
		Name: name, Codec: c,
		KeyFunc: widgetKey, KeyFuncName: "storetest-widget-name",
		Indexers: cache.Indexers{"tags": widgetTags},
	}
}

// widgetContents returns name -> widget of s.
func widgetContents(t *testing.T, s store.Store) map[string]widget {
	t.Helper()
	out := map[string]widget{}
	for _, obj := range s.List() {
		w, ok := obj.(widget)
		if !ok {
			t.Fatalf("List returned %T; want widget", obj)
		}
		out[w.Name] = w
	}
	return out
}

func testPlainStruct(t *testing.T, h *harness) {
	s := h.open(t, h.url(t), widgetOptions(t, "widgets"))
	w1 := widget{Name: "w1", Size: 1, Tags: []string{"red", "big"}}
	w2 := widget{Name: "w2", Size: 2, Tags: []string{"red"}, Owner: "me"}
	mustOK(t, "Add", s.Add(w1))
	mustOK(t, "Add", s.Add(w2))
	mustOK(t, "Update", s.Update(widget{Name: "w1", Size: 10, Tags: []string{"blue"}}))
	want := map[string]widget{"w1": {Name: "w1", Size: 10, Tags: []string{"blue"}}, "w2": w2}
	checkDiff(t, want, widgetContents(t, s), "widgets")
	checkDiff(t, []string{"w2"}, indexKeys(t, s, "tags", "red"), "IndexKeys(tags, red)")
	wantErr(t, "Add of a pointer to a widget (the key function rejects it)", s.Add(&w1), store.ErrInvalid)
	CheckIndexes(t, s)
}

func testAnotherType(t *testing.T, h *harness) {
	// No index: index functions would refuse the string before the codec.
	s := h.open(t, h.url(t), &store.Options{Name: "pods", Codec: podCodec(t)})
	err := s.Commit(t.Context(), store.Batch{ResourceVersion: "5", Ops: []store.Op{{Type: store.OpPut, Key: "ns/a", Object: "a string"}}})
	if !h.b.Persistent {
		// memory:// and memdb:// keep objects without encoding them.
		mustOK(t, "Commit of a string", err)
		if got, ok, err := s.GetByKey("ns/a"); err != nil || !ok || got != "a string" {
			t.Errorf("GetByKey = %v, %v, %v; want the string as given", got, ok, err)
		}
		return
	}
	wantErr(t, "Commit of a string", err, store.ErrInvalid)
	wantErr(t, "Commit of a string", err, indexer.ErrWrongType, "got string", "want *k8s.io/api/core/v1.Pod")
	checkRV(t, s, "")
	if _, ok, _ := s.GetByKey("ns/a"); ok {
		t.Error("the refused object is stored")
	}
}
