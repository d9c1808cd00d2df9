package indexer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// countingPersister persists nothing and counts what Base asks of it.
type countingPersister struct{ persists, indexes int }

func (p *countingPersister) Commit(context.Context, []Change, bool, *IndexSet, string, bool) error {
	p.persists++
	return nil
}

func (p *countingPersister) SetIndexes(context.Context, *IndexSet, map[string][][]string) error {
	p.indexes++
	return nil
}

func (p *countingPersister) Close() error { return nil }

// newNamespacedBase returns a Base over p for ConfigMaps with a namespace
// index.
func newNamespacedBase(t *testing.T, p Persister) *Base {
	t.Helper()
	o, err := (&store.Options{Name: "cms", Indexers: cache.Indexers{"namespace": NamespaceIndexFunc}}).WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBase(BaseConfig{Info: store.Info{Name: "cms"}, Persister: p, Options: o})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBaseAddIndexersNone checks that AddIndexers with no index writes
// nothing: persisting would rewrite every stored object's index values.
func TestBaseAddIndexersNone(t *testing.T) {
	p := &countingPersister{}
	b := newNamespacedBase(t, p)
	if err := b.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	for _, none := range []cache.Indexers{nil, {}} {
		if err := b.AddIndexers(none); err != nil {
			t.Fatalf("AddIndexers(%v): %v", none, err)
		}
	}
	if p.indexes != 0 {
		t.Errorf("AddIndexers with no index persisted the index values %d times; want 0", p.indexes)
	}
	if err := b.AddIndexers(cache.Indexers{"name": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.ConfigMap).Name}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	if p.indexes != 1 {
		t.Errorf("AddIndexers of one index persisted the index values %d times; want 1", p.indexes)
	}
	if keys, err := b.IndexKeys("name", "a"); err != nil || len(keys) != 1 {
		t.Errorf("IndexKeys(name, a) = %v, %v; want [ns/a]", keys, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
