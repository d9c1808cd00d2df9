package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/informerdb/informerdb/test/apiserver"
)

// controller is the smallest controller a user writes with client-go: an
// event handler that queues keys, a workqueue, and a worker that reads the
// generated lister. It reconciles by recording, per key, the
// resourceVersion it saw, or "deleted". It is safe for concurrent use.
type controller struct {
	lister listersv1.ConfigMapLister
	queue  workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex // guards seen and changed
	seen    map[string]string
	changed chan struct{}
}

func newController(indexer cache.Indexer) *controller {
	return &controller{
		lister:  listersv1.NewConfigMapLister(indexer),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		seen:    map[string]string{},
		changed: make(chan struct{}),
	}
}

func (c *controller) enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err) // ConfigMaps and tombstones always have keys
	}
	c.queue.Add(key)
}

func (c *controller) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}
}

// run works the queue until it is shut down.
func (c *controller) run() {
	for c.processNext() {
	}
}

func (c *controller) processNext() bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		panic(err)
	}
	result := ""
	cm, err := c.lister.ConfigMaps(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		result = "deleted"
	case err != nil:
		c.queue.AddRateLimited(key)
		return true
	default:
		result = cm.ResourceVersion
	}
	c.queue.Forget(key)
	c.mu.Lock()
	c.seen[key] = result
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return true
}

// waitSeen waits until the controller has reconciled exactly want.
func (c *controller) waitSeen(t *testing.T, want map[string]string) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		got, changed := make(map[string]string, len(c.seen)), c.changed
		for k, v := range c.seen {
			got[k] = v
		}
		c.mu.Unlock()
		diff := cmp.Diff(want, got)
		if diff == "" {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("controller did not reconcile the expected state within %v (-want +got):\n%s", waitLimit, diff)
		}
	}
}

// startController runs a controller over a new informer on url.
func startController(t *testing.T, srv *apiserver.Server, url string, sel selection) (*running, *controller, func()) {
	t.Helper()
	s := openStore(t, srv, url, sel)
	r := startInformerOn(t, srv, s, sel)
	ctl := newController(r.inf.GetIndexer())
	if _, err := r.inf.AddEventHandler(ctl.handler()); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), r.inf.HasSynced) {
		t.Fatalf("informer did not sync within %v", waitLimit)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(ctl.run)
	}
	stop := func() {
		ctl.queue.ShutDown()
		wg.Wait()
		r.stop(t)
	}
	t.Cleanup(stop)
	return r, ctl, stop
}

// TestControllerRestart: a controller built on the generated lister and a
// workqueue is stopped, ConfigMaps change, and a restarted controller on
// the same store serves the persisted objects through its lister before it
// starts, resumes without a full LIST, and reconciles exactly the current
// state, deletes included.
func TestControllerRestart(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	for _, b := range persistentBackends[:2] {
		t.Run(b.name, func(t *testing.T) {
			sel := selection{namespace: "controller-" + b.name}
			createNamespace(t, c, sel.namespace)
			createConfigMaps(t, c, sel.namespace, 50)
			url := b.url(t.TempDir())

			_, ctl, stop := startController(t, srv, url, sel)
			ctl.waitSeen(t, reconciled(serverState(t, c, sel), sel.namespace, nil))
			stop()

			changes := changeWhileDown(t, c, sel.namespace, 2000)
			var deleted []string
			for _, e := range changes {
				if e.Op == "delete" {
					deleted = append(deleted, e.Name)
				}
			}

			// Before the informer runs, the lister already serves what
			// was persisted.
			persistedStore := openStore(t, srv, url, sel)
			lister := listersv1.NewConfigMapLister(persistedStore)
			list, err := lister.ConfigMaps(sel.namespace).List(labels.Everything())
			if err != nil {
				t.Fatalf("lister List: %v", err)
			}
			if got := len(list); got != 50 {
				t.Errorf("lister over the reopened store lists %d ConfigMaps, want the 50 persisted", got)
			}
			if err := persistedStore.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}

			server := serverState(t, c, sel) // nothing changes from here on
			before := srv.Metrics(t)
			r, ctl, stop := startController(t, srv, url, sel)
			ctl.waitSeen(t, reconciled(server, sel.namespace, deleted))
			cost := srv.Metrics(t).Sub(before)
			if got := cost.Lists["configmaps"]; got != 1 {
				t.Errorf("controller restart made %d LISTs, want 1 (the probe); metrics delta %+v", got, cost)
			}
			list, err = ctl.lister.ConfigMaps(sel.namespace).List(labels.Everything())
			if err != nil {
				t.Fatalf("lister List: %v", err)
			}
			got := state{}
			for _, cm := range list {
				got[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
			}
			if diff := cmp.Diff(server, got); diff != "" {
				t.Errorf("lister after the restart (-server +lister):\n%s", diff)
			}
			if diff := cmp.Diff(server, storeState(t, r.store)); diff != "" {
				t.Errorf("store after the restart (-server +store):\n%s", diff)
			}
			stop()
		})
	}
}

// reconciled is what the controller records for the objects of st, plus
// "deleted" for the names in deleted that st does not hold.
func reconciled(st state, ns string, deleted []string) map[string]string {
	out := map[string]string{}
	for name, v := range st {
		out[fmt.Sprintf("%s/%s", ns, name)] = v.RV
	}
	for _, name := range deleted {
		if _, ok := st[name]; !ok {
			out[fmt.Sprintf("%s/%s", ns, name)] = "deleted"
		}
	}
	return out
}
