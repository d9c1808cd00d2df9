package bench_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/informerdb/informerdb/test/apiserver"
	"github.com/informerdb/informerdb/test/bench"
)

// TestRun runs the demo scenario on a small N against a real API server and
// checks that its table makes sense: the restart replays every persisted
// object, receives exactly the changes made while it was down, makes one
// LIST (the limit=1 freshness probe) and costs the API server a small share
// of a cold start's bytes; client-go's cold start lists everything again.
func TestRun(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	cl, err := bench.NewCluster(srv)
	if err != nil {
		t.Fatalf("NewCluster: %v", err)
	}
	const n = 400
	for _, backend := range []string{"bolt", "badger"} {
		t.Run(backend, func(t *testing.T) {
			res, err := bench.Run(t.Context(), cl, bench.Config{N: n, Backend: backend, Namespace: "run-" + backend, Dir: t.TempDir()})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			ch := res.Changes
			if diff := cmp.Diff(bench.Changes{Updated: 2, Deleted: 1, Created: 1}, ch); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			after := n - ch.Deleted + ch.Created
			wantEvents := map[string]bench.Events{
				// Cold starts see every object once, in their initial list.
				"client-go cold start":  {Initial: int64(after)},
				"informerdb cold start": {Initial: n},
				// The restart replays what the cold start stored, then
				// gets exactly the changes.
				"informerdb restart": {Initial: n, Added: int64(ch.Created), Updated: int64(ch.Updated), Deleted: int64(ch.Deleted)},
			}
			wantObjects := map[string]int{"client-go cold start": after, "informerdb cold start": n, "informerdb restart": after}
			gotEvents, gotObjects := map[string]bench.Events{}, map[string]int{}
			for _, p := range []bench.Phase{res.ClientGo, res.Cold, res.Restart} {
				gotEvents[p.Name] = p.Events
				gotObjects[p.Name] = p.Objects
				if p.Cost.Source != "server" {
					t.Errorf("%s: cost source %q, want the API server's metrics", p.Name, p.Cost.Source)
				}
			}
			if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
				t.Errorf("handler notifications at sync (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantObjects, gotObjects); diff != "" {
				t.Errorf("objects in the cache at sync (-want +got):\n%s", diff)
			}

			// The restart lists nothing but the probe; the cold starts
			// get every object, as a LIST or as a streaming list's events.
			if got := res.Restart.Cost.Lists; got != 1 {
				t.Errorf("restart made %d LIST requests, want 1 (the freshness probe)", got)
			}
			if got, limit := res.Restart.Cost.WatchEvents, int64(ch.Total()+20); got > limit {
				t.Errorf("restart got %d watch events, want at most %d (the %d changes and bookmarks): a relist?", got, limit, ch.Total())
			}
			for _, p := range []bench.Phase{res.ClientGo, res.Cold} {
				if got := p.Cost.Lists + p.Cost.WatchEvents; got < n {
					t.Errorf("%s: %d LISTs + watch events, want at least %d (one per object)", p.Name, got, n)
				}
			}
			// The changes are 1% of the objects; with the probe and
			// bookmarks the restart's bytes stay far below a tenth.
			if rs, cg := res.Restart.Cost.Bytes, res.ClientGo.Cost.Bytes; rs <= 0 || rs*10 > cg {
				t.Errorf("restart cost %d bytes, client-go's cold start %d: want more than 0 and under a tenth", rs, cg)
			}

			var out bytes.Buffer
			if err := res.WriteTable(&out); err != nil {
				t.Fatalf("WriteTable: %v", err)
			}
			for _, row := range []string{"time to synced", "LIST requests", "bytes the API server sent", "handler: deletes"} {
				if !strings.Contains(out.String(), row) {
					t.Errorf("table has no row %q:\n%s", row, out.String())
				}
			}
		})
	}
}

// TestRunReadOnly runs the scenario through a kubeconfig, as `demo
// -kubeconfig` does against a real cluster: it must change nothing, list
// and watch all namespaces, and resume with the probe only. The costs come
// from the client side (a real cluster's /metrics may not be readable).
func TestRunReadOnly(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	for i, ns := range []string{"ro-a", "ro-b"} {
		if err := bench.CreateConfigMaps(t.Context(), c, ns, 0, 50*(i+1), 8); err != nil {
			t.Fatalf("CreateConfigMaps: %v", err)
		}
	}
	before := configMapState(t, c)

	cfg := srv.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["loopback"] = &clientcmdapi.Cluster{Server: cfg.Host, InsecureSkipTLSVerify: true}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["loopback"] = &clientcmdapi.Context{Cluster: "loopback", AuthInfo: "admin"}
	kc.CurrentContext = "loopback"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	cl, err := bench.KubeconfigCluster(path)
	if err != nil {
		t.Fatalf("KubeconfigCluster: %v", err)
	}
	defer cl.Close()

	res, err := bench.Run(t.Context(), cl, bench.Config{N: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	after := configMapState(t, c)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("ConfigMaps changed by a read-only run (-before +after):\n%s", diff)
	}
	if !res.ReadOnly || res.Changes != (bench.Changes{}) {
		t.Errorf("result ReadOnly=%v Changes=%+v, want read-only without changes", res.ReadOnly, res.Changes)
	}
	total := len(before)
	if res.N != total {
		t.Errorf("result N = %d, want the %d ConfigMaps of all namespaces", res.N, total)
	}
	for _, p := range []bench.Phase{res.ClientGo, res.Cold, res.Restart} {
		if p.Cost.Source != "client" {
			t.Errorf("%s: cost source %q, want client", p.Name, p.Cost.Source)
		}
		if p.Objects != total {
			t.Errorf("%s: %d objects in the cache, want %d", p.Name, p.Objects, total)
		}
	}
	if diff := cmp.Diff(bench.Events{Initial: int64(total)}, res.Restart.Events); diff != "" {
		t.Errorf("restart notifications, nothing having changed (-want +got):\n%s", diff)
	}
	if got := res.Restart.Cost.Lists; got != 1 {
		t.Errorf("restart made %d LIST requests, want 1 (the freshness probe)", got)
	}
	if rs, cg := res.Restart.Cost.Bytes, res.ClientGo.Cost.Bytes; rs <= 0 || rs*10 > cg {
		t.Errorf("restart received %d bytes, client-go's cold start %d: want more than 0 and under a tenth", rs, cg)
	}
}

// configMapState is the name and resourceVersion of every ConfigMap.
func configMapState(t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps: %v", err)
	}
	st := map[string]string{}
	for _, cm := range list.Items {
		st[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return st
}
