package loadcheck_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/loadcheck"
)

// pod is the Pod ns/name with the labels kvs, each "key=value".
func pod(ns, name string, kvs ...string) *corev1.Pod {
	l, _ := labels.ConvertSelectorToLabelsMap(strings.Join(kvs, ","))
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
}

// mustIndexSet is the index set of ix.
func mustIndexSet(t *testing.T, ix cache.Indexers) *indexer.IndexSet {
	t.Helper()
	set, err := indexer.NewIndexSet(ix)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// failIndex fails for objects labelled fail.
func failIndex(obj interface{}) ([]string, error) {
	if _, ok := obj.(*corev1.Pod).Labels["fail"]; ok {
		return nil, errors.New("index asked to fail")
	}
	return nil, nil
}

// TestValueCheck checks what a loading store learns from a ValueCheck: the
// values the functions compute now, whatever was stored; which indexes
// differed, and for how many objects, counted across concurrent workers;
// nil and empty as the same; and the errors of a failing function and of a
// stored record of the wrong length.
func TestValueCheck(t *testing.T) {
	set := mustIndexSet(t, cache.Indexers{
		"app":                indexer.LabelIndexFunc("app"),
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"none":               func(interface{}) ([]string, error) { return nil, nil },
	})
	// Names in order: app, namespace, none.
	check := loadcheck.NewValueCheck(set)
	// Values are a set: order and repeats do not count.
	everyLabel := func(obj interface{}) ([]string, error) {
		var out []string
		for k, v := range obj.(*corev1.Pod).Labels { // map order
			out = append(out, k+"="+v)
		}
		return out, nil
	}
	labels := loadcheck.NewValueCheck(mustIndexSet(t, cache.Indexers{"labels": everyLabel}))
	if _, err := labels.Values("ns/l", pod("ns", "l", "a=1", "b=2", "c=3"), [][]string{{"c=3", "a=1", "b=2", "a=1"}}); err != nil {
		t.Fatal(err)
	}
	if s := labels.Stale(); s != nil {
		t.Errorf("Stale after the same values in another order = %q; want nil", s)
	}
	got, err := check.Values("ns/a", pod("ns", "a", "app=web"), [][]string{{"web"}, {"ns"}, {}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"web"}, {"ns"}, nil}, got); diff != "" {
		t.Errorf("Values of an object stored right (-want +got):\n%s", diff)
	}
	if s := check.Stale(); s != nil {
		t.Errorf("Stale after values that agree = %q; want nil", s)
	}

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			// The app index stored "db", the function says "web"; every
			// other object also had its namespace wrong.
			stored := [][]string{{"db"}, {"ns"}, nil}
			if i%2 == 0 {
				stored[1] = []string{"old"}
			}
			got, err := check.Values("ns/b", pod("ns", "b", "app=web"), stored)
			if err != nil {
				t.Error(err)
				return
			}
			if diff := cmp.Diff([][]string{{"web"}, {"ns"}, nil}, got); diff != "" {
				t.Errorf("Values of an object stored under another function (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff([]string{"app (20 objects)", "namespace (10 objects)"}, check.Stale()); diff != "" {
		t.Errorf("Stale (-want +got):\n%s", diff)
	}

	failing := loadcheck.NewValueCheck(mustIndexSet(t, cache.Indexers{"fail": failIndex}))
	if _, err := failing.Values("ns/f", pod("ns", "f", "fail=yes"), [][]string{nil}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Values with a failing index function: %v; want ErrInvalid", err)
	}
	if _, err := check.Values("ns/a", pod("ns", "a"), [][]string{{"web"}}); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Values with one stored value list for three indexes: %v; want ErrCorrupt", err)
	}
}

// TestKeyCheck checks what a loading store learns from a KeyCheck: nothing
// while every stored key is what the key function computes, and otherwise
// a reason naming the function, how many objects differ (counted across
// concurrent workers, a failing function included) and an example.
func TestKeyCheck(t *testing.T) {
	keys := loadcheck.NewKeyCheck(cache.MetaNamespaceKeyFunc)
	keys.Check("ns/a", pod("ns", "a"))
	keys.Check("b", pod("", "b"))
	if r := keys.Reset("namespace/name"); r != "" {
		t.Errorf("Reset after keys that agree = %q; want empty", r)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { keys.Check("name:c", pod("ns", "c")) })
	}
	wg.Wait()
	keys.Check("ns/x", "not an object") // the key function fails
	r := keys.Reset("namespace/name")
	for _, want := range []string{`key function "namespace/name" changed`, "11 objects", `"name:c" is now "ns/c"`} {
		if !strings.Contains(r, want) {
			t.Errorf("Reset = %q; want it to say %q", r, want)
		}
	}
}
