// Package typedfactory_test runs a controller written in
// k8s.io/sample-controller's style (test/sample/controller: client-go's
// typed informers of Deployments and ConfigMaps, the code-generated
// informer of the Site custom resource, listers, a workqueue) on
// informerdb's SharedInformerFactory and GeneratedFactory against a real
// kube-apiserver, in a child process killed with SIGKILL, and checks what
// it sees after a restart.
package typedfactory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/test/apiserver"
	"github.com/informerdb/informerdb/test/internal/childtest"
	samplev1alpha1 "github.com/informerdb/informerdb/test/sample/apis/sample/v1alpha1"
	"github.com/informerdb/informerdb/test/sample/generated/clientset/versioned"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m)
}

// namespace holds the Sites and what the controller makes of them; outside
// is written every second by the background writer, as lease renewals are
// in a live cluster, so the newest revision at a restart is not the
// controller's.
const (
	namespace = "sites"
	outside   = "kube-lease"
)

// TestSiteControllerRestarts is issue 36's promise: a client-go controller
// and a generated-CRD controller become persistent by changing their
// factory constructors only. The Site controller runs on informerdb's
// factories and is killed; Sites, Deployments and ConfigMaps are deleted,
// updated and created while it is down; after the restart it converges,
// and its handlers (added before the factories started) and handlers added
// after they synced both receive every delete. Then the harder crash: a
// process syncs (commits the deletes) and dies before any handler is
// added; the next run still delivers them. Each restart resumes every
// informer with one limit=1 LIST and no relist.
func TestSiteControllerRestarts(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	apiserver.CreateCRD(t, dyn, samplev1alpha1.SchemeGroupVersion.WithResource("sites"), "Site", true)
	sites, err := versioned.NewForConfig(srv.Config())
	if err != nil {
		t.Fatalf("site clientset: %v", err)
	}
	for _, ns := range []string{namespace, outside} {
		if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	w := &world{t: t, c: c, sites: sites, replicas: map[string]int32{}}
	for i := range 10 {
		w.createSite(fmt.Sprintf("site-%d", i), int32(i%3+1))
	}
	srv.RenewLease(t, outside) // until the test ends
	h := &harness{t: t, srv: srv, url: "bolt://" + filepath.Join(t.TempDir(), "cache.db"), dir: t.TempDir()}

	// Cold start: the controller makes every Site's Deployment and ConfigMap.
	p := h.start("run")
	w.waitConverged(p, "cold start")
	p.Kill()

	// Round 1: changes while down, then a restart a few seconds after the
	// last one, as a real cluster's controller restarts.
	deletes := w.changeWhileDown(1)
	time.Sleep(3 * time.Second)
	before := srv.Metrics(t)
	p = h.start("run")
	waitDeletes(t, p, deletes, "round 1")
	w.waitConverged(p, "round 1")
	h.checkResumed(p, before, "round 1")
	p.Kill()

	// Round 2: the process syncs (commits the deletes) and dies before any
	// handler is added.
	deletes = w.changeWhileDown(2)
	time.Sleep(3 * time.Second)
	p = h.start("cache-only")
	p.WaitRecord("the cache-only run's sync", func(r childtest.Record) bool { return r.Kind == "synced" })
	p.Kill()
	before = srv.Metrics(t)
	p = h.start("run")
	waitDeletes(t, p, deletes, "round 2, after a crash between the commit of the deletes and the handlers")
	w.waitConverged(p, "round 2")
	h.checkResumed(p, before, "round 2")
	p.Kill()
}

// world is the Sites on the API server, and their replicas.
type world struct {
	t        *testing.T
	c        kubernetes.Interface
	sites    versioned.Interface
	mu       sync.Mutex
	replicas map[string]int32 // by Site name
}

func (w *world) createSite(name string, replicas int32) {
	w.t.Helper()
	_, err := w.sites.SampleV1alpha1().Sites(namespace).Create(w.t.Context(), &samplev1alpha1.Site{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       samplev1alpha1.SiteSpec{DeploymentName: "web-" + name, Replicas: ptr.To(replicas)},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create Site %s: %v", name, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replicas[name] = replicas
}

// changeWhileDown deletes two Sites, the Deployment of a third and the
// ConfigMap of a fourth (their Sites stay), updates the replicas of a
// fifth and creates a Site, and returns the deletes the handlers must
// receive, as "informer namespace/name". The deleted Deployment and
// ConfigMap are the point: nothing else tells the controller to make them
// again (their Site does not change).
func (w *world) changeWhileDown(round int) []string {
	w.t.Helper()
	ctx := w.t.Context()
	var deletes []string
	for _, name := range []string{fmt.Sprintf("site-%d", 5*round-5), fmt.Sprintf("site-%d", 5*round-4)} {
		if err := w.sites.SampleV1alpha1().Sites(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			w.t.Fatalf("delete Site %s: %v", name, err)
		}
		w.mu.Lock()
		delete(w.replicas, name)
		w.mu.Unlock()
		deletes = append(deletes, "sites "+namespace+"/"+name)
	}
	d := fmt.Sprintf("web-site-%d", 5*round-3)
	if err := w.c.AppsV1().Deployments(namespace).Delete(ctx, d, metav1.DeleteOptions{}); err != nil {
		w.t.Fatalf("delete Deployment %s: %v", d, err)
	}
	deletes = append(deletes, "deployments "+namespace+"/"+d)
	cm := fmt.Sprintf("web-site-%d", 5*round-2)
	if err := w.c.CoreV1().ConfigMaps(namespace).Delete(ctx, cm, metav1.DeleteOptions{}); err != nil {
		w.t.Fatalf("delete ConfigMap %s: %v", cm, err)
	}
	deletes = append(deletes, "configmaps "+namespace+"/"+cm)

	name := fmt.Sprintf("site-%d", 5*round-1)
	s, err := w.sites.SampleV1alpha1().Sites(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatalf("get Site %s: %v", name, err)
	}
	s.Spec.Replicas = ptr.To(*s.Spec.Replicas + 3)
	if _, err := w.sites.SampleV1alpha1().Sites(namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		w.t.Fatalf("update Site %s: %v", name, err)
	}
	w.mu.Lock()
	w.replicas[name] = *s.Spec.Replicas
	w.mu.Unlock()
	w.createSite(fmt.Sprintf("new-%d", round), 2)
	return deletes
}

// waitConverged waits until every Site has its Deployment and ConfigMap,
// controlled by it, with its replicas, and its status says so.
func (w *world) waitConverged(p *childtest.Proc, what string) {
	w.t.Helper()
	var missing string
	err := wait.PollUntilContextTimeout(w.t.Context(), 200*time.Millisecond, childtest.WaitLimit, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.Exited():
			return false, errors.New("child exited")
		default:
		}
		missing = w.notConverged(ctx)
		return missing == "", nil
	})
	if err != nil {
		w.t.Fatalf("%s: the controller did not converge: %v; %s\nchild's stderr (tail):\n%s", what, err, missing, p.StderrTail())
	}
}

func (w *world) notConverged(ctx context.Context) string {
	w.mu.Lock()
	want := make(map[string]int32, len(w.replicas))
	for k, v := range w.replicas {
		want[k] = v
	}
	w.mu.Unlock()
	var missing []string
	for name, replicas := range want {
		site, err := w.sites.SampleV1alpha1().Sites(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			missing = append(missing, fmt.Sprintf("site %s: %v", name, err))
			continue
		}
		if site.Status.Replicas != replicas {
			missing = append(missing, fmt.Sprintf("site %s: status replicas %d, want %d", name, site.Status.Replicas, replicas))
		}
		d, err := w.c.AppsV1().Deployments(namespace).Get(ctx, site.Spec.DeploymentName, metav1.GetOptions{})
		switch {
		case err != nil:
			missing = append(missing, fmt.Sprintf("deployment of %s: %v", name, err))
		case !metav1.IsControlledBy(d, site) || d.Spec.Replicas == nil || *d.Spec.Replicas != replicas:
			missing = append(missing, fmt.Sprintf("deployment of %s: not controlled by it, or replicas %v, want %d", name, d.Spec.Replicas, replicas))
		}
		cm, err := w.c.CoreV1().ConfigMaps(namespace).Get(ctx, site.Spec.DeploymentName, metav1.GetOptions{})
		switch {
		case err != nil:
			missing = append(missing, fmt.Sprintf("configmap of %s: %v", name, err))
		case !metav1.IsControlledBy(cm, site) || cm.Data["replicas"] != strconv.Itoa(int(replicas)):
			missing = append(missing, fmt.Sprintf("configmap of %s: not controlled by it, or replicas %q, want %d", name, cm.Data["replicas"], replicas))
		}
	}
	slices.Sort(missing)
	return strings.Join(missing, "; ")
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
		envMode+"="+mode, envStoreURL+"="+h.url, envServer+"="+cfg.Host, envToken+"="+cfg.BearerToken, envJournal+"="+journal)
}

// waitDeletes waits until both the early and the late handler received
// every delete in want ("informer namespace/name"), and the controller
// synced each deleted Site (finding it gone).
func waitDeletes(t *testing.T, p *childtest.Proc, want []string, what string) {
	t.Helper()
	p.WaitFor(what, func(recs []childtest.Record) string {
		got := map[string]bool{}
		for _, r := range recs {
			switch r.Kind {
			case "delete":
				got[r.Handler+" "+r.Informer+" "+r.Key] = true
			case "sync":
				if !r.Exists {
					got["sync "+r.Key] = true
				}
			}
		}
		var missing []string
		for _, d := range want {
			for _, h := range []string{"early", "late"} {
				if !got[h+" "+d] {
					missing = append(missing, h+" handler: "+d)
				}
			}
			if key, ok := strings.CutPrefix(d, "sites "); ok && !got["sync "+key] {
				missing = append(missing, "sync of the deleted site "+key)
			}
		}
		slices.Sort(missing)
		return strings.Join(missing, ", ")
	})
	t.Logf("%s: %s: the handlers added before and after sync received all %d deletes", p.Name(), what, len(want))
}

// checkResumed checks that every informer of a restarted child resumed
// without relisting, with one limit=1 LIST (its consistency probe), and
// that the API server served no other LIST of the watched resources.
func (h *harness) checkResumed(p *childtest.Proc, before apiserver.Metrics, what string) {
	h.t.Helper()
	stats := p.Stats()
	cost := h.srv.Metrics(h.t).Sub(before)
	if len(stats) != 3 {
		h.t.Errorf("%s: %d informerdb informers, want 3: %+v", what, len(stats), stats)
	}
	for _, st := range stats {
		if st.Resumes != 1 || st.Relists != 0 || st.Lists != 1 {
			h.t.Errorf("%s: informer %s: %d resumes, %d relists, %d LISTs; want one resume, no relist, one limit=1 LIST", what, st.Informer, st.Resumes, st.Relists, st.Lists)
		}
	}
	served := cost.Lists["configmaps"] + cost.Lists["deployments.apps"] + cost.Lists["sites.sample.informerdb.io"]
	if served != int64(len(stats)) {
		h.t.Errorf("%s: the API server served %d LISTs of the watched resources, want the informers' %d probes; metrics delta %+v", what, served, len(stats), cost.Lists)
	}
}
