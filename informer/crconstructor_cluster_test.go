package informer

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// TestConstructorClusterIdentity: without ConstructorOptions.Cluster, the
// constructor identifies the cluster by its kube-system namespace's UID. A
// restart against the same cluster resumes; a cluster recreated behind the
// same URL (another UID) relists with reason scope-change, and neither the
// store nor the handler ever sees an object of the old cluster.
func TestConstructorClusterIdentity(t *testing.T) {
	api := newFakeAPIServer(t, "uid-old")
	old := []corev1.ConfigMap{fakeConfigMap("ns", "a", "10"), fakeConfigMap("ns", "b", "11")}
	api.setCluster("uid-old", old...)
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	opts := &ConstructorOptions{Informer: testOptions(), Store: store.Options{Durability: store.DurabilityNoSync}}

	// run makes a constructor and its ConfigMap informer (listing through
	// the constructor's config, as controller-runtime's do), waits until
	// it synced and returns its store's contents, what the handler got
	// by key, the reflector's counters and the store's scope.
	run := func(round string) (map[string]string, []string, reflector.Stats, string) {
		t.Helper()
		c, err := NewInformerConstructor(t.Context(), dbURL, api.config(), opts)
		if err != nil {
			t.Fatalf("%s: NewInformerConstructor: %v", round, err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				t.Errorf("%s: Close: %v", round, err)
			}
		}()
		inf, ok := c.NewInformer(listWatchOf(t, c.Config()), &corev1.ConfigMap{}, 0, cache.Indexers{}).(*Informer)
		if !ok {
			t.Fatalf("%s: NewInformer made no persistent informer", round)
		}
		h := newRecorder()
		reg := addHandler(t, inf, h)
		r := start(t, inf)
		defer r.stop()
		waitDone(t, round+": informer sync", inf.HasSyncedChecker())
		waitDone(t, round+": handler sync", reg.HasSyncedChecker())
		var keys []string
		for _, e := range h.all() {
			keys = append(keys, e.Op+" "+e.Key+" "+e.Value)
		}
		slices.Sort(keys)
		return storeValues(inf.GetStore()), keys, inf.Stats().Reflector, inf.Store().Info().Scope
	}

	got, _, st, scope := run("first start")
	if diff := cmp.Diff(map[string]string{"ns/a": "10", "ns/b": "11"}, got); diff != "" {
		t.Errorf("first start: store (-want +got):\n%s", diff)
	}
	if !strings.Contains(scope, "cluster=kube-system/uid-old;") {
		t.Errorf("first start: store scope %q does not name the cluster kube-system/uid-old", scope)
	}
	if st.Relists.Cold != 1 {
		t.Errorf("first start: relists %+v, want one cold list", st.Relists)
	}

	// The same cluster again: the identity is the same, the store resumes.
	lists := api.listCount()
	_, evs, st, _ := run("restart")
	if st.Resumes != 1 || st.Relists != (reflector.RelistStats{}) {
		t.Errorf("restart on the same cluster: %d resumes, relists %+v; want 1 resume and no relist", st.Resumes, st.Relists)
	}
	if diff := cmp.Diff([]string{"add ns/a 10", "add ns/b 11"}, evs); diff != "" {
		t.Errorf("restart on the same cluster: notifications (-want +got):\n%s", diff)
	}
	if n := api.listCount() - lists; n != 1 {
		t.Errorf("restart on the same cluster made %d LISTs, want the 1 consistency probe", n)
	}

	// The cluster is recreated behind the same URL: other objects, whose
	// resourceVersions pass the old resume point, and another kube-system
	// namespace.
	api.setCluster("uid-new", fakeConfigMap("ns", "c", "50"))
	got, evs, st, scope = run("recreated cluster")
	if diff := cmp.Diff(map[string]string{"ns/c": "50"}, got); diff != "" {
		t.Errorf("recreated cluster: store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"add ns/c 50"}, evs); diff != "" {
		t.Errorf("recreated cluster: notifications (-want +got), none may be of the old cluster:\n%s", diff)
	}
	if st.Relists.ScopeChange != 1 || st.Resumes != 0 {
		t.Errorf("recreated cluster: %d resumes, relists %+v; want a scope-change relist and no resume", st.Resumes, st.Relists)
	}
	if !strings.Contains(scope, "cluster=kube-system/uid-new;") {
		t.Errorf("recreated cluster: store scope %q does not name the cluster kube-system/uid-new", scope)
	}
}

// TestConstructorClusterNamed: ConstructorOptions.Cluster names the cluster,
// and NewInformerConstructor then sends no request; without it, an API
// server that cannot be reached makes NewInformerConstructor wait until its
// context ends, and fail, rather than guess an identity.
func TestConstructorClusterNamed(t *testing.T) {
	dbURL := "bolt://" + filepath.Join(t.TempDir(), "cache.db")
	api := newFakeAPIServer(t, "uid-1")
	// A server that is gone: nothing listens at its address.
	gone := newFakeAPIServer(t, "uid-gone")
	goneCfg := gone.config()
	gone.srv.Close()

	c, err := NewInformerConstructor(t.Context(), dbURL, goneCfg, &ConstructorOptions{Cluster: "prod-1"})
	if err != nil {
		t.Fatalf("NewInformerConstructor with Cluster set and no API server: %v", err)
	}
	if c.cluster != "prod-1" {
		t.Errorf("cluster = %q, want prod-1", c.cluster)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := NewInformerConstructor(ctx, dbURL, goneCfg, nil); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "cluster identity") {
		t.Errorf("NewInformerConstructor without an API server = %v, want the cluster identity's error once its context ended", err)
	}
	// The failed construction let go of the database.
	c, err = NewInformerConstructor(t.Context(), dbURL, api.config(), nil)
	if err != nil {
		t.Fatalf("NewInformerConstructor after a failed one: %v", err)
	}
	defer c.Close()
	if c.cluster != "kube-system/uid-1" {
		t.Errorf("cluster = %q, want kube-system/uid-1", c.cluster)
	}
}

// listWatchOf is the ListerWatcher of every ConfigMap through a clientset
// of cfg.
func listWatchOf(t *testing.T, cfg *rest.Config) cache.ListerWatcher {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "", fields.Everything())
}
