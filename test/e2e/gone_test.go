package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/test/apiserver"
)

var (
	widgetGVR = schema.GroupVersionResource{Group: "e2e.informerdb.io", Version: "v1", Resource: "widgets"}
)

// TestResourceGone: custom resources cached by a persistent informer whose
// CRD is deleted while the process is down. On restart the API server
// answers 404 for the resource; the store must be emptied with every object
// reaching handlers as deleted (a tombstone carrying the last stored
// object), not served as if the objects still existed (DESIGN invariant 5).
// Once the CRD is created again, the informer lists it afresh.
func TestResourceGone(t *testing.T) {
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range persistentBackends {
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t.TempDir())
			apiserver.CreateCRD(t, dyn, widgetGVR, "Widget", false)
			for i := range 3 {
				createWidget(t, dyn, fmt.Sprintf("w-%d", i))
			}
			first := startWidgetInformer(t, url, dyn)
			first.rec.waitFor(t, "3 adds", func(evs []string) bool { return len(evs) >= 3 })
			first.waitSynced(t)
			first.stop(t)

			deleteWidgetCRD(t, dyn)

			second := startWidgetInformer(t, url, dyn)
			want := []string{"add w-0 initial", "add w-1 initial", "add w-2 initial", "delete w-0 tombstone", "delete w-1 tombstone", "delete w-2 tombstone"}
			got := second.rec.waitFor(t, "replay and tombstones", func(evs []string) bool { return len(evs) >= len(want) })
			sort.Strings(got[:3])
			sort.Strings(got[3:])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events after a restart with the CRD gone (-want +got):\n%s", diff)
			}
			second.waitSynced(t)
			if keys := second.store.ListKeys(); len(keys) != 0 {
				t.Errorf("store serves %v after the CRD was deleted, want nothing", keys)
			}
			if st := second.inf.Stats().Reflector; st.Relists.Gone != 1 {
				t.Errorf("reflector stats %+v: want one relist for gone", st)
			}

			// Served again: listed afresh.
			apiserver.CreateCRD(t, dyn, widgetGVR, "Widget", false)
			createWidget(t, dyn, "w-new")
			got = second.rec.waitFor(t, "the new widget", func(evs []string) bool { return len(evs) > len(want) })
			if diff := cmp.Diff("add w-new", got[len(want)]); diff != "" {
				t.Errorf("event once the CRD is back (-want +got):\n%s", diff)
			}
			if keys := second.store.ListKeys(); !cmp.Equal(keys, []string{"default/w-new"}) {
				t.Errorf("store keys %v once the CRD is back, want [default/w-new]", keys)
			}
			second.stop(t)
			deleteWidgetCRD(t, dyn)
		})
	}
}

// widgetInformer is a running informer of widgets with a recorder of
// "op name [initial|tombstone]" lines.
type widgetInformer struct {
	inf    *informer.Informer
	store  store.Store
	rec    *lineRecorder
	reg    cache.ResourceEventHandlerRegistration
	cancel context.CancelFunc
	done   chan struct{}
}

func startWidgetInformer(t *testing.T, url string, dyn dynamic.Interface) *widgetInformer {
	t.Helper()
	codec, err := indexer.NewCodec(&unstructured.Unstructured{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(t.Context(), url, &store.Options{
		Name: "e2e.informerdb.io/v1/widgets", Codec: codec,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		t.Fatalf("open store %s: %v", url, err)
	}
	ri := dyn.Resource(widgetGVR)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	}
	inf, err := informer.New(lw, &unstructured.Unstructured{}, s, &informer.Options{
		Reflector: reflector.Options{
			Name:                "e2e-widgets",
			CatchUpWatchTimeout: 3 * time.Second,
			Backoff:             reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		},
	})

	if err != nil {
		t.Fatalf("informer.New: %v", err)
	}
	w := &widgetInformer{inf: inf, store: s, rec: &lineRecorder{newEventLog[string]()}, done: make(chan struct{})}
	if w.reg, err = inf.AddEventHandler(w.rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	w.cancel = cancel
	go func() {
		defer close(w.done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop stops the informer and closes its store; it is idempotent.
func (w *widgetInformer) stop(t *testing.T) {
	t.Helper()
	stopInformer(t, w.cancel, w.done, w.store)
}

func (w *widgetInformer) waitSynced(t *testing.T) {
	t.Helper()
	waitAllSynced(t, w.inf, w.reg)
}

// lineRecorder records handler calls as "op name [initial|tombstone]".
type lineRecorder struct{ eventLog[string] }

func (r *lineRecorder) add(line string) { r.record(line) }

func nameOf(obj interface{}) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return m.GetName()
}

func (r *lineRecorder) OnAdd(obj interface{}, initial bool) {
	line := "add " + nameOf(obj)
	if initial {
		line += " initial"
	}
	r.add(line)
}

func (r *lineRecorder) OnUpdate(_, obj interface{}) { r.add("update " + nameOf(obj)) }

func (r *lineRecorder) OnDelete(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if tomb.Obj == nil {
			r.add("delete " + tomb.Key + " tombstone without object")
			return
		}
		r.add("delete " + nameOf(tomb.Obj) + " tombstone")
		return
	}
	r.add("delete " + nameOf(obj))
}

// deleteWidgetCRD deletes the CRD (and so every widget) and waits until the
// API server answers 404 for the resource.
func deleteWidgetCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	if err := dyn.Resource(apiserver.CRDResource).Delete(t.Context(), "widgets.e2e.informerdb.io", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD: %v", err)
	}
	waitUntil(t, "the CRD is gone", func() (bool, error) {
		_, err := dyn.Resource(apiserver.CRDResource).Get(t.Context(), "widgets.e2e.informerdb.io", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = dyn.Resource(widgetGVR).Namespace("default").List(t.Context(), metav1.ListOptions{Limit: 1})
			return apierrors.IsNotFound(err), nil
		}
		return false, err
	})
}

func createWidget(t *testing.T, dyn dynamic.Interface, name string) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "e2e.informerdb.io/v1",
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": name, "namespace": "default"},
		"spec":       map[string]interface{}{"size": int64(len(name))},
	}}
	if _, err := dyn.Resource(widgetGVR).Namespace("default").Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create widget %s: %v", name, err)
	}
}

// waitUntil polls cond every 100ms until it holds, fails, or waitLimit
// passes.
func waitUntil(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting until %s: gave up after %v", what, waitLimit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
