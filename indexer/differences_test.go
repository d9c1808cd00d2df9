package indexer_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// panics reports whether fn panics.
func panics(fn func()) (did bool) {
	defer func() {
		if recover() != nil {
			did = true
		}
	}()
	fn()
	return false
}

func podRV(ns, name, rv string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: labels}}
}

// failOn is an index function that fails for pods labelled fail=yes and
// indexes the others by name.
func failOn(obj interface{}) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("%T is not a pod", obj)
	}
	if p.Labels[dLabelFail] == "yes" {
		return nil, errors.New("labelled to fail")
	}
	return []string{p.Name}, nil
}

// TestClientGoDifferences pins the deliberate differences from client-go's
// cache.NewIndexer listed in the package documentation, on both sides:
// what client-go v0.37 does (so that the list is revisited if it changes)
// and what every backend does instead.
func TestClientGoDifferences(t *testing.T) {
	bad := podRV("ns", "bad", "9", map[string]string{dLabelFail: "yes"})
	good := podRV("ns", "good", "7", nil)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: podRV("ns", "gone", "3", nil)}
	unnamed := &corev1.Pod{}
	newRef := func(indexers cache.Indexers) cache.Indexer {
		return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
	}

	t.Run("client-go", func(t *testing.T) {
		// An index function error panics in Add, Update and Replace,
		// after the object is in (the store is left inconsistent).
		ref := newRef(cache.Indexers{"f": failOn})
		for name, fn := range map[string]func(){
			"Add":     func() { _ = ref.Add(bad) },
			"Update":  func() { _ = ref.Update(bad) },
			"Replace": func() { _ = ref.Replace([]interface{}{bad}, "1") },
		} {
			if !panics(fn) {
				t.Errorf("client-go's %s with a failing index function did not panic", name)
			}
		}
		// So does AddIndexers whose function fails on a stored object,
		// which keeps the index it could not fill.
		ref = newRef(cache.Indexers{})
		if err := ref.Add(bad); err != nil {
			t.Fatal(err)
		}
		if !panics(func() { _ = ref.AddIndexers(cache.Indexers{"f": failOn}) }) {
			t.Error("client-go's AddIndexers with a failing index function did not panic")
		}
		if _, ok := ref.GetIndexers()["f"]; !ok {
			t.Error("client-go's failed AddIndexers did not keep the index")
		}
		// Replace only indexes the last object under a key: one that a
		// later one replaces may fail.
		ref = newRef(cache.Indexers{"f": failOn})
		if err := ref.Replace([]interface{}{podRV("ns", "good", "1", map[string]string{dLabelFail: "yes"}), good}, "2"); err != nil {
			t.Errorf("client-go's Replace with a failing object replaced by a later one: %v", err)
		}
		// It accepts an index named "", a tombstone and an empty key.
		ref = newRef(cache.Indexers{})
		if err := ref.AddIndexers(cache.Indexers{"": failOn}); err != nil {
			t.Errorf("client-go's AddIndexers of an index named \"\": %v", err)
		}
		ref = newRef(cache.Indexers{})
		if err := ref.Add(tomb); err != nil {
			t.Errorf("client-go's Add of a tombstone: %v", err)
		}
		if err := ref.Add(unnamed); err != nil {
			t.Errorf("client-go's Add of an object with key \"\": %v", err)
		}
		if _, ok, _ := ref.GetByKey(""); !ok {
			t.Error("client-go did not store the object with key \"\"")
		}
		// Key function errors are cache.KeyError.
		var ke cache.KeyError
		if err := ref.Add("not an object"); !errors.As(err, &ke) {
			t.Errorf("client-go's Add of a non-object: %v; want a cache.KeyError", err)
		}
		// GetIndexers returns the indexer's own map.
		ref.GetIndexers()["late"] = failOn
		if _, err := ref.ByIndex("late", "x"); err != nil {
			t.Errorf("client-go's GetIndexers returned a copy: %v", err)
		}
		// Index calls the index function even on nil.
		called := false
		ref = newRef(cache.Indexers{"n": func(obj interface{}) ([]string, error) { called = true; return nil, nil }})
		if _, err := ref.Index("n", nil); err != nil || !called {
			t.Errorf("client-go's Index(nil) = %v, index function called: %v", err, called)
		}
	})

	codec := mustCodec(t, &corev1.Pod{})
	for _, b := range diffBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, err := store.Open(t.Context(), b.url(t.TempDir()), &store.Options{Name: "pods", Codec: codec, Indexers: cache.Indexers{"f": failOn}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			wantInvalid := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, store.ErrInvalid) {
					t.Errorf("%s: %v; want an error wrapping ErrInvalid", what, err)
				}
			}
			if err := s.Replace([]interface{}{good}, "5"); err != nil {
				t.Fatal(err)
			}
			before, err := stateOf(s)
			if err != nil {
				t.Fatal(err)
			}
			// Errors where client-go panics or accepts, and no trace.
			wantInvalid("Add with a failing index function", s.Add(bad))
			wantInvalid("Update with a failing index function", s.Update(bad))
			wantInvalid("Replace with a failing index function", s.Replace([]interface{}{bad}, "6"))
			wantInvalid("Replace with a failing object replaced by a later one", s.Replace([]interface{}{podRV("ns", "good", "1", map[string]string{dLabelFail: "yes"}), good}, "6"))
			wantInvalid("Add of a tombstone", s.Add(tomb))
			wantInvalid("Add of an object with key \"\"", s.Add(unnamed))
			wantInvalid("AddIndexers of an index named \"\"", s.AddIndexers(cache.Indexers{"": failOn}))
			wantInvalid("AddIndexers of a nil function", s.AddIndexers(cache.Indexers{"nil": nil}))
			if _, err := s.Index("f", nil); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Index of nil: %v; want an error wrapping ErrInvalid", err)
			}
			var ke cache.KeyError
			if err := s.Add("not an object"); !errors.Is(err, store.ErrInvalid) || errors.As(err, &ke) {
				t.Errorf("Add of a non-object: %v; want ErrInvalid, not a cache.KeyError (as documented)", err)
			}
			s.GetIndexers()["late"] = failOn
			if _, err := s.ByIndex("late", "x"); err == nil {
				t.Error("changing the map GetIndexers returned added an index")
			}
			if err := s.Add(podRV("ns", "c", "10", nil)); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(podRV("ns", "c", "11", nil)); err != nil {
				t.Fatal(err)
			}
			after, err := stateOf(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("refused writes changed the store (-before +after):\n%s", diff)
			}
			// A failed backfill leaves no index behind.
			if err := s.Add(podRV("ns", "late", "12", map[string]string{dLabelLateFail: "yes"})); err != nil {
				t.Fatal(err)
			}
			if err := s.AddIndexers(cache.Indexers{"latefail": diffIndexFuncs["latefail"]}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("AddIndexers whose function fails on a stored object: %v; want ErrInvalid", err)
			}
			if _, ok := s.GetIndexers()["latefail"]; ok {
				t.Error("a failed AddIndexers kept its index")
			}
			// The resume point: Add/Delete leave it, "" keeps it.
			s.Bookmark("")
			if err := s.Replace([]interface{}{good}, ""); err != nil {
				t.Fatal(err)
			}
			if got := s.ResourceVersion(); got != "5" {
				t.Errorf("ResourceVersion = %q; want the resume point 5, kept by Add, Delete, Bookmark(\"\") and Replace(list, \"\")", got)
			}
		})
	}
}
