package informer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// routedThrough is listedThrough whose watches go through cfg too, as
// controller-runtime's do, so that the constructor may resume its
// informer's siblings ahead; lw serves the objects.
func routedThrough(t *testing.T, cfg *rest.Config, ns string, lw *fakeLW) *cache.ListWatch {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := listedThrough(t, cfg, ns, "", lw)
	l.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
		if err != nil {
			return nil, err
		}
		w.Stop()
		return lw.WatchWithContext(ctx, opts)
	}
	return l
}

// TestUnclaimedAheadStops: an informer resumed ahead for a namespace whose
// informer is never asked for (a namespace the controller stopped
// watching) commits nothing and stops after the claim window, freeing its
// store: a later NewInformer of that namespace makes an informer of its
// own, which resumes from the store as it was.
func TestUnclaimedAheadStops(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions()}
	lws := map[string]*fakeLW{"a": newFakeLW(), "b": newFakeLW()}
	lws["a"].create("a", "one", "a1")
	lws["b"].create("b", "one", "b1")

	run := func(c *InformerConstructor, ns string) (*Informer, *running) {
		t.Helper()
		si := c.NewInformer(routedThrough(t, c.Config(), ns, lws[ns]), &corev1.ConfigMap{}, 0, cache.Indexers{})
		inf, ok := si.(*Informer)
		if !ok {
			t.Fatalf("NewInformer(%s) returned a %T, want an informer of its own", ns, si)
		}
		r := start(t, inf)
		waitDone(t, "informer sync", inf.HasSyncedChecker())
		return inf, r
	}

	// First process: both namespaces, persisted.
	c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	_, ra := run(c, "a")
	_, rb := run(c, "b")
	ra.stop()
	rb.stop()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	lws["b"].update("b", "one", "b2") // while down

	// Second process: only namespace a is asked for.
	c = reopenConstructor(t, dbURL, srv, opts)
	c.claimWindow = 100 * time.Millisecond
	_, ra = run(c, "a")
	defer ra.stop()
	var ah *ahead
	deadline := time.Now().Add(waitLimit)
	for ah == nil {
		c.mu.Lock()
		if len(c.started) > 0 {
			ah = c.started[0]
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no informer was resumed ahead for namespace b within %v", waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-ah.ready
	if ah.inf == nil {
		t.Fatalf("resuming %s ahead failed", ah.name)
	}
	if ah.name != "core/v1/ConfigMap@ns=b" || !ah.inf.Stats().StartedAhead {
		t.Fatalf("resumed ahead: %s (StartedAhead %v), want core/v1/ConfigMap@ns=b", ah.name, ah.inf.Stats().StartedAhead)
	}
	rv := ah.inf.Store().ResourceVersion()
	select {
	case <-ah.inf.ended:
	case <-time.After(waitLimit):
		t.Fatalf("the informer resumed ahead and never asked for still runs after %v", waitLimit)
	}
	if got := ah.inf.Stats().Commits; got != 0 {
		t.Errorf("the informer resumed ahead and never asked for made %d commits, want 0", got)
	}

	// Asked for at last: an informer of its own, on the store as it was.
	b, rb := run(c, "b")
	defer rb.stop()
	if b == ah.inf || b.Stats().StartedAhead {
		t.Errorf("NewInformer(b) after the claim window returned the informer started ahead")
	}
	if got := b.Stats().Reflector.Resumes; got != 1 {
		t.Errorf("NewInformer(b): %d resumes, want 1 (from %s)", got, rv)
	}
	want := map[string]string{"b/one": "b2"}
	got := storeValues(b.GetStore())
	if len(got) != 1 || got["b/one"] != want["b/one"] {
		t.Errorf("store of b = %v, want %v", got, want)
	}
}

// TestResumeStartsWithTheStoreOpen: the probe and the catch-up watch of a
// resumable store start when NewInformer opens the store, before the
// informer runs (invariant 10), and the informer's reflector resumes with
// them: one probe and one watch in all, the changes made while down
// applied.
func TestResumeStartsWithTheStoreOpen(t *testing.T) {
	ctx := t.Context()
	srv := newAPIServerStub(t)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions()}
	lw := newFakeLW()
	lw.create("a", "one", "v1")

	c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	inf := c.NewInformer(listedThrough(t, c.Config(), "a", "", lw), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
	r := start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	r.stop()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	lw.update("a", "one", "v2") // while down

	c = reopenConstructor(t, dbURL, srv, opts)
	probes, watches := lw.probes(), len(lw.watchCalls())
	inf = c.NewInformer(listedThrough(t, c.Config(), "a", "", lw), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
	deadline := time.Now().Add(waitLimit)
	for lw.probes() == probes || len(lw.watchCalls()) == watches {
		if time.Now().After(deadline) {
			t.Fatalf("NewInformer did not start the probe and the watch within %v (probes %d, watches %d)", waitLimit, lw.probes()-probes, len(lw.watchCalls())-watches)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r = start(t, inf)
	defer r.stop()
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if got, want := storeValues(inf.GetStore()), map[string]string{"a/one": "v2"}; got["a/one"] != want["a/one"] || len(got) != 1 {
		t.Errorf("store = %v, want %v", got, want)
	}
	if p, w := lw.probes()-probes, len(lw.watchCalls())-watches; p != 1 || w != 1 {
		t.Errorf("the restart made %d probes and %d watches, want 1 and 1 (those started with the store's open)", p, w)
	}
	if st := inf.Stats().Reflector; st.Resumes != 1 || st.Lists != 1 || st.Watches != 1 {
		t.Errorf("reflector: %d resumes, %d lists, %d watches; want 1, 1, 1", st.Resumes, st.Lists, st.Watches)
	}
}

// watchCalls returns the options of every watch f served.
func (f *fakeLW) watchCalls() []metav1.ListOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metav1.ListOptions(nil), f.watches...)
}

// TestAheadRemadeUnavailable: when controller-runtime sets a transform
// other than the one an informer started ahead runs with, the informer is
// made anew on its store; if that fails (here its database URL no longer
// opens, as a full or damaged disk would), what the caller gets is what
// NewInformer gives for a store it cannot open: with FallBackToMemory,
// client-go's in-memory informer, which takes the transform, runs and
// syncs, and Start does not fail; without, SetTransform and Start return
// the error.
func TestAheadRemadeUnavailable(t *testing.T) {
	for _, fallBack := range []bool{false, true} {
		t.Run(fmt.Sprintf("FallBackToMemory=%v", fallBack), func(t *testing.T) {
			ctx := t.Context()
			srv := newAPIServerStub(t)
			dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
			opts := &ConstructorOptions{Cluster: "c1", Informer: testOptions(), FallBackToMemory: fallBack}
			lws := map[string]*fakeLW{"a": newFakeLW(), "b": newFakeLW()}
			lws["a"].create("a", "one", "a1")
			lws["b"].create("b", "one", "b1")
			newInformer := func(c *InformerConstructor, ns string) cache.SharedIndexInformer {
				return c.NewInformer(routedThrough(t, c.Config(), ns, lws[ns]), &corev1.ConfigMap{}, 0, cache.Indexers{})
			}

			// First process: both namespaces persisted.
			c, err := NewInformerConstructor(ctx, dbURL, &rest.Config{Host: srv.URL}, opts)
			if err != nil {
				t.Fatalf("NewInformerConstructor: %v", err)
			}
			for _, ns := range []string{"a", "b"} {
				inf, ok := newInformer(c, ns).(*Informer)
				if !ok {
					t.Fatalf("NewInformer(%s) is not persistent", ns)
				}
				r := start(t, inf)
				waitDone(t, "informer sync", inf.HasSyncedChecker())
				r.stop()
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}

			// Second process: a runs and b is resumed ahead with a's
			// transform (none).
			c = reopenConstructor(t, dbURL, srv, opts)
			a := newInformer(c, "a").(*Informer)
			defer start(t, a).stop()
			waitDone(t, "informer a sync", a.HasSyncedChecker())
			var claimed bool
			for deadline := time.Now().Add(waitLimit); !claimed; time.Sleep(10 * time.Millisecond) {
				c.mu.Lock()
				claimed = c.aheads["core/v1/ConfigMap@ns=b"] != nil
				c.mu.Unlock()
				if time.Now().After(deadline) {
					t.Fatalf("no informer was resumed ahead for namespace b within %v", waitLimit)
				}
			}
			b := newInformer(c, "b")
			if _, ok := b.(*aheadInformer); !ok {
				t.Fatalf("NewInformer(b) = %T, want the informer started ahead", b)
			}

			// The store can no longer be opened when b is made anew: its
			// database path is now a regular file's child.
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			c.url = "bolt://" + filepath.Join(file, "cache.db")
			transformed := func(obj interface{}) (interface{}, error) {
				cm := obj.(*corev1.ConfigMap).DeepCopy()
				cm.Data["v"] = "transformed " + cm.Data["v"]
				return cm, nil
			}
			err = b.SetTransform(transformed)
			if !fallBack {
				if err == nil {
					t.Fatalf("SetTransform whose informer cannot be made anew = nil, want the error")
				}
				if isPersistent(b.(*aheadInformer).get()) {
					t.Errorf("the informer that could not be made anew is persistent")
				}
				startCtx, cancel := context.WithTimeout(ctx, waitLimit)
				defer cancel()
				if serr := c.Start(startCtx); serr == nil || !strings.Contains(serr.Error(), err.Error()) {
					t.Errorf("Start = %v, want the error SetTransform returned (%v)", serr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetTransform with FallBackToMemory whose informer cannot be made anew: %v", err)
			}
			if _, ok := b.(*aheadInformer).get().(*memoryInformer); !ok {
				t.Fatalf("the informer of b made in place = %T, want client-go's in-memory informer", b.(*aheadInformer).get())
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); b.RunWithContext(runCtx) }()
			defer func() { stop(); <-done }()
			if !cache.WaitForCacheSync(ctx.Done(), b.HasSynced) {
				t.Fatalf("the in-memory informer of b did not sync")
			}
			if got := storeValues(b.GetStore()); len(got) != 1 || got["b/one"] != "transformed b1" {
				t.Errorf("store of b = %v, want b/one transformed", got)
			}
			startCtx, cancel := context.WithCancel(ctx)
			cancel()
			if err := c.Start(startCtx); err != nil {
				t.Errorf("Start with FallBackToMemory = %v, want nil once its context ended", err)
			}
		})
	}
}

// reopenConstructor is the constructor of a process started again on
// dbURL, closed (and its error checked) when the test ends.
func reopenConstructor(t *testing.T, dbURL string, srv *apiServerStub, opts *ConstructorOptions) *InformerConstructor {
	t.Helper()
	c, err := NewInformerConstructor(t.Context(), dbURL, &rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatalf("NewInformerConstructor: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}
