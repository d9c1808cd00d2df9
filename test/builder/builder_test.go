// Package builder_test runs controller-runtime controllers as people write
// them (ctrl.NewControllerManagedBy(mgr).For(...).Owns(...)) on
// informerdb's InformerConstructor against a real kube-apiserver, in a
// child process killed with SIGKILL, and checks what their reconcilers get
// after a restart.
package builder_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/test/apiserver"
	"github.com/informerdb/informerdb/test/internal/childtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m)
}

var (
	widgetGVR = schema.GroupVersionResource{Group: "builder.informerdb.io", Version: "v1", Resource: "widgets"}
)

// namespaces are the manager's DefaultNamespaces; outside is written every
// second by the background writer, as lease renewals are in a live
// cluster, so the newest revision at a restart is not the controllers'.
var namespaces = []string{"team-a", "team-b"}

const outside = "kube-lease"

// Per namespace: ConfigMaps cm-0..cm-(nConfigMaps-1), the first nOwned of
// which own a Secret of the same name (labelled ownedLabel), and widgets
// w-0..w-(nWidgets-1).
const (
	nConfigMaps = 12
	nOwned      = 6
	nWidgets    = 8
)

// request is one reconcile request: which controller, which object.
type request struct{ controller, key string }

// TestBuilderControllersSeeChangesMadeWhileDown is issue 30's promise: a
// manager whose controllers are built with the builder (For on a typed
// resource, Owns of metadata only, a CRD as unstructured: the three kinds
// of informers; a two-namespace cache with a label-selected Secret cache) is killed, objects are deleted, updated and
// created while it is down, and after the restart every reconciler gets a
// request for every name it should: the deleted ones too, although the
// builder adds its handlers only after the informers synced. Then the
// harder crash: the process dies after its informers committed the deletes
// and before any reconciler's handler was registered; the next run must
// still deliver them. Each restart resumes every informer (no relist) and
// lists nothing but the limit=1 probes its reflectors count.
func TestBuilderControllersSeeChangesMadeWhileDown(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	apiserver.CreateCRD(t, dyn, widgetGVR, "Widget", false)
	for _, ns := range append(slices.Clone(namespaces), outside) {
		if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	w := &world{t: t, c: c, dyn: dyn}
	for _, ns := range namespaces {
		for i := range nConfigMaps {
			w.createConfigMap(ns, fmt.Sprintf("cm-%d", i), i < nOwned)
		}
		for i := range nWidgets {
			w.createWidget(ns, fmt.Sprintf("w-%d", i))
		}
	}
	srv.RenewLease(t, outside) // until the test ends

	h := &harness{t: t, srv: srv, url: "bolt://" + filepath.Join(t.TempDir(), "cache.db"), dir: t.TempDir()}

	// Cold start: every object is reconciled.
	p := h.start("run")
	waitRequests(t, p, w.everything(), "cold start")
	p.Kill()

	// Round 1: changes while down, then a restart a few seconds after the
	// last one, as a real cluster's controller restarts.
	want := w.changeWhileDown(1)
	time.Sleep(3 * time.Second)
	before := srv.Metrics(t)
	p = h.start("run")
	waitRequests(t, p, want, "round 1")
	h.checkResumed(p, before, "round 1")
	p.Kill()

	// Round 2: the process syncs (commits the deletes) and dies before any
	// reconciler's handler is registered.
	want = w.changeWhileDown(2)
	time.Sleep(3 * time.Second)
	p = h.start("cache-only")
	p.WaitRecord("the cache-only run's sync", func(r childtest.Record) bool { return r.Kind == "synced" })
	p.Kill()
	before = srv.Metrics(t)
	p = h.start("run")
	waitRequests(t, p, want, "round 2, after a crash between the commit of the deletes and the handlers")
	h.checkResumed(p, before, "round 2")
	p.Kill()
}

// world is the objects on the API server, and what a change of them must
// make each controller reconcile.
type world struct {
	t    *testing.T
	c    kubernetes.Interface
	dyn  dynamic.Interface
	mu   sync.Mutex
	cms  map[string]*corev1.ConfigMap // by namespace/name
	wids map[string]bool              // namespace/name of every widget
	secs map[string]bool              // namespace/name of every owned Secret (its owner has the same name)
}

func (w *world) createConfigMap(ns, name string, owning bool) {
	w.t.Helper()
	cm, err := w.c.CoreV1().ConfigMaps(ns).Create(w.t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": "1"},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create ConfigMap %s/%s: %v", ns, name, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cms == nil {
		w.cms, w.wids, w.secs = map[string]*corev1.ConfigMap{}, map[string]bool{}, map[string]bool{}
	}
	w.cms[ns+"/"+name] = cm
	if !owning {
		return
	}
	_, err = w.c.CoreV1().Secrets(ns).Create(w.t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: ownedLabel,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: cm.UID, Controller: ptr.To(true),
			}},
		},
		StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create Secret %s/%s: %v", ns, name, err)
	}
	w.secs[ns+"/"+name] = true
}

func (w *world) createWidget(ns, name string) {
	w.t.Helper()
	u := widget()
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]interface{}{"size": int64(1)}
	if _, err := w.dyn.Resource(widgetGVR).Namespace(ns).Create(w.t.Context(), u, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create widget %s/%s: %v", ns, name, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wids[ns+"/"+name] = true
}

// everything is what a cold start reconciles: every ConfigMap, every
// widget, and the owner of every owned Secret.
func (w *world) everything() map[request]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[request]bool{}
	for k := range w.cms {
		out[request{ctrlConfigMaps, k}] = true
	}
	for k := range w.wids {
		out[request{ctrlWidgets, k}] = true
	}
	for k := range w.secs {
		out[request{ctrlOwner, k}] = true
	}
	return out
}

// changeWhileDown deletes, updates and creates ConfigMaps and widgets in
// both namespaces, and deletes owned Secrets whose owner stays, and
// returns the requests those changes must cause after the restart. The
// deleted names are the point: nothing else makes a reconciler hear of
// them (the owner of a deleted Secret is not changed, and the owner
// controller hears of ConfigMaps only through their Secrets).
func (w *world) changeWhileDown(round int) map[request]bool {
	w.t.Helper()
	ctx := w.t.Context()
	want := map[request]bool{}
	for _, ns := range namespaces {
		// ConfigMaps: delete two that own nothing, update one, create one.
		for _, i := range []int{nOwned + 2*round - 2, nOwned + 2*round - 1} {
			name := fmt.Sprintf("cm-%d", i)
			if err := w.c.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				w.t.Fatalf("delete ConfigMap %s/%s: %v", ns, name, err)
			}
			w.mu.Lock()
			delete(w.cms, ns+"/"+name)
			w.mu.Unlock()
			want[request{ctrlConfigMaps, ns + "/" + name}] = true
		}
		upd := w.cms[ns+"/cm-0"].DeepCopy()
		upd.Data["v"] = fmt.Sprint(round + 1)
		updated, err := w.c.CoreV1().ConfigMaps(ns).Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			w.t.Fatalf("update ConfigMap %s/cm-0: %v", ns, err)
		}
		w.mu.Lock()
		w.cms[ns+"/cm-0"] = updated
		w.mu.Unlock()
		want[request{ctrlConfigMaps, ns + "/cm-0"}] = true
		created := fmt.Sprintf("new-%d", round)
		w.createConfigMap(ns, created, false)
		want[request{ctrlConfigMaps, ns + "/" + created}] = true

		// Owned Secrets: delete one; its owner stays.
		sec := fmt.Sprintf("cm-%d", round)
		if err := w.c.CoreV1().Secrets(ns).Delete(ctx, sec, metav1.DeleteOptions{}); err != nil {
			w.t.Fatalf("delete Secret %s/%s: %v", ns, sec, err)
		}
		w.mu.Lock()
		delete(w.secs, ns+"/"+sec)
		w.mu.Unlock()
		want[request{ctrlOwner, ns + "/" + sec}] = true

		// Widgets: delete two, update one, create one.
		for _, i := range []int{2 * round, 2*round + 1} {
			name := fmt.Sprintf("w-%d", i)
			if err := w.dyn.Resource(widgetGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				w.t.Fatalf("delete widget %s/%s: %v", ns, name, err)
			}
			w.mu.Lock()
			delete(w.wids, ns+"/"+name)
			w.mu.Unlock()
			want[request{ctrlWidgets, ns + "/" + name}] = true
		}
		u, err := w.dyn.Resource(widgetGVR).Namespace(ns).Get(ctx, "w-0", metav1.GetOptions{})
		if err != nil {
			w.t.Fatalf("get widget %s/w-0: %v", ns, err)
		}
		u.Object["spec"] = map[string]interface{}{"size": int64(round + 1)}
		if _, err := w.dyn.Resource(widgetGVR).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			w.t.Fatalf("update widget %s/w-0: %v", ns, err)
		}
		want[request{ctrlWidgets, ns + "/w-0"}] = true
		w.createWidget(ns, created)
		want[request{ctrlWidgets, ns + "/" + created}] = true
	}
	return want
}

// harness starts child processes on one database.
type harness struct {
	t    *testing.T
	srv  *apiserver.Server
	url  string
	dir  string
	runs int
}

func (h *harness) start(mode string) *childtest.Proc {
	h.t.Helper()
	h.runs++
	cfg := h.srv.Config()
	journal := filepath.Join(h.dir, fmt.Sprintf("journal-%d", h.runs))
	return childtest.Start(h.t, fmt.Sprintf("run %d (%s)", h.runs, mode), journal,
		envMode+"="+mode, envStoreURL+"="+h.url, envServer+"="+cfg.Host, envToken+"="+cfg.BearerToken,
		envNamespaces+"="+strings.Join(namespaces, ","), envJournal+"="+journal)
}

// waitRequests waits until the child's reconcilers got every request in
// want.
func waitRequests(t *testing.T, p *childtest.Proc, want map[request]bool, what string) {
	t.Helper()
	recs := p.WaitFor(what, func(recs []childtest.Record) string {
		got := map[request]bool{}
		for _, r := range recs {
			if r.Kind == "request" {
				got[request{r.Controller, r.Key}] = true
			}
		}
		var missing []string
		for r := range want {
			if !got[r] {
				missing = append(missing, r.controller+" "+r.key)
			}
		}
		slices.Sort(missing)
		return strings.Join(missing, ", ")
	})
	n := 0
	for _, r := range recs {
		if r.Kind == "request" {
			n++
		}
	}
	t.Logf("%s: %s: all %d expected requests among %d received", p.Name(), what, len(want), n)
}

// checkResumed checks that every informer of a restarted child resumed
// without relisting, and that the API server served no LIST but the
// informers' own limit=1 probes.
func (h *harness) checkResumed(p *childtest.Proc, before apiserver.Metrics, what string) {
	h.t.Helper()
	stats := p.Stats()
	cost := h.srv.Metrics(h.t).Sub(before)
	// Two namespaces of ConfigMaps, Secrets and widgets.
	if got, want := len(stats), 3*len(namespaces); got != want {
		h.t.Errorf("%s: %d informerdb informers, want %d: %+v", what, got, want, stats)
	}
	var lists int64
	for _, st := range stats {
		lists += st.Lists
		if st.Resumes != 1 || st.Relists != 0 {
			h.t.Errorf("%s: informer %s: %d resumes and %d relists, want one resume and no relist", what, st.Informer, st.Resumes, st.Relists)
		}
		h.t.Logf("%s: informer %s: %d limit=1 LISTs", what, st.Informer, st.Lists)
	}
	served := cost.Lists["configmaps"] + cost.Lists["secrets"] + cost.Lists["widgets.builder.informerdb.io"]
	if served != lists {
		h.t.Errorf("%s: the API server served %d LISTs of the watched resources, the informers' reflectors made %d (their limit=1 probes); metrics delta %+v", what, served, lists, cost)
	}
}
