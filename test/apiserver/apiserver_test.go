package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/informerdb/informerdb/test/apiserver"
)

// eventWait bounds every wait for a watch event. It only turns a hang into a
// failure with a message; nothing asserts how long an event took.
const eventWait = time.Minute

// TestServer exercises one watch-cache-enabled server through the facts the
// informer tests rely on. The subtests share the server and run in order.
func TestServer(t *testing.T) {
	s := apiserver.Start(t, apiserver.Options{})
	c := s.Client()
	ns := createNamespace(t, c, "harness")

	want := map[string]string{}
	t.Run("create and list", func(t *testing.T) {
		for i := range 50 {
			name := fmt.Sprintf("cm-%02d", i)
			createConfigMap(t, c, ns, name)
			want[name] = name
		}
		list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list configmaps: %v", err)
		}
		got := map[string]string{}
		for _, cm := range list.Items {
			got[cm.Name] = cm.Data["name"]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("listed configmaps (-want +got):\n%s", diff)
		}
	})

	t.Run("watch from list RV", func(t *testing.T) {
		rv := listRV(t, c, ns)
		w, err := c.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch from %s: %v", rv, err)
		}
		defer w.Stop()
		createConfigMap(t, c, ns, "watched")
		ev := nextEvent(t, w)
		got := eventSummary(ev)
		if diff := cmp.Diff("ADDED watched", got); diff != "" {
			t.Errorf("first event after RV %s (-want +got):\n%s", rv, diff)
		}
	})

	t.Run("metrics count lists", func(t *testing.T) {
		before := s.Metrics(t)
		const lists = 3
		for range lists {
			if _, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Fatalf("list configmaps: %v", err)
			}
		}
		delta := s.Metrics(t).Sub(before)
		if diff := cmp.Diff(map[string]int64{"configmaps": lists}, delta.Lists); diff != "" {
			t.Errorf("LIST requests during the test (-want +got):\n%s", diff)
		}
		// 51 ConfigMaps of a few hundred bytes each, three times: the exact
		// size depends on the server's encoding, but it cannot be less than
		// the names alone.
		if got, min := delta.ListBytes["configmaps"], int64(lists*51*len("cm-00")); got < min {
			t.Errorf("LIST bytes for configmaps = %d, want at least %d (all deltas: %+v)", got, min, delta)
		}
	})

	t.Run("watch cache serves compacted RV", func(t *testing.T) {
		// The watch cache, not etcd, serves a watch from a recent RV, so a
		// compaction alone does not expire it.
		rv := listRV(t, c, ns)
		createConfigMap(t, c, ns, "after-compaction-rv")
		s.CompactToCurrent(t)
		w, err := c.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch from compacted %s: %v", rv, err)
		}
		defer w.Stop()
		if diff := cmp.Diff("ADDED after-compaction-rv", eventSummary(nextEvent(t, w))); diff != "" {
			t.Errorf("first event after compacted RV %s (-want +got):\n%s", rv, diff)
		}
	})

	t.Run("restart expires old RV", func(t *testing.T) {
		rv := listRV(t, c, ns)
		// Move etcd past rv, so rv is older than what the restarted watch
		// cache starts from.
		createConfigMap(t, c, ns, "before-restart")
		s.StopAPIServer(t)
		if _, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err == nil {
			t.Errorf("list while the API server is stopped succeeded, want a connection error")
		}
		s.StartAPIServer(t)

		// The client built before the restart still works: same port, token
		// and certificate directory.
		list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list after restart: %v", err)
		}
		if got, want := len(list.Items), len(want)+3; got != want {
			t.Errorf("after restart listed %d configmaps, want %d", got, want)
		}
		w, err := c.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
		expectExpired(t, w, err)
	})
}

// TestCompactionWithoutWatchCache: with --watch-cache=false watches go to
// etcd, and an etcd compaction alone makes a watch from an older RV fail.
func TestCompactionWithoutWatchCache(t *testing.T) {
	s := apiserver.Start(t, apiserver.Options{DisableWatchCache: true})
	c := s.Client()
	ns := createNamespace(t, c, "nocache")
	createConfigMap(t, c, ns, "a")
	rv := listRV(t, c, ns)
	createConfigMap(t, c, ns, "b")
	createConfigMap(t, c, ns, "c")

	// Before the compaction the same watch works: the 410 below is the
	// compaction's doing, not the flag's.
	w, err := c.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch from %s before compaction: %v", rv, err)
	}
	got := eventSummary(nextEvent(t, w))
	w.Stop()
	if diff := cmp.Diff("ADDED b", got); diff != "" {
		t.Errorf("first event after RV %s (-want +got):\n%s", rv, diff)
	}

	rev := s.CompactToCurrent(t)
	t.Logf("compacted etcd to revision %d; watching from %s", rev, rv)
	w, err = c.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	expectExpired(t, w, err)
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

func createConfigMap(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"name": name},
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
}

// listRV returns the resourceVersion of a consistent list of ns.
func listRV(t *testing.T, c kubernetes.Interface, ns string) string {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("list configmaps in %s: %v", ns, err)
	}
	return list.ResourceVersion
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), eventWait)
	defer cancel()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed before an event")
		}
		return ev
	case <-ctx.Done():
		t.Fatalf("no watch event: %v", ctx.Err())
	}
	return watch.Event{}
}

func eventSummary(ev watch.Event) string {
	if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
		return fmt.Sprintf("%s %s", ev.Type, cm.Name)
	}
	return fmt.Sprintf("%s %T %+v", ev.Type, ev.Object, ev.Object)
}

// expectExpired checks that a watch was refused as too old. The API server
// says so either when the watch is opened (HTTP 410) or, once the watch is
// established, as an ERROR event carrying a 410 Status (the etcd path).
func expectExpired(t *testing.T, w watch.Interface, err error) {
	t.Helper()
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch error = %v, want 410 Expired/Gone", err)
		}
		return
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	status, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok {
		t.Fatalf("first event = %s, want an ERROR event with a 410 Status", eventSummary(ev))
	}
	got := fmt.Sprintf("%d %s", status.Code, status.Reason)
	allowed := []string{"410 " + string(metav1.StatusReasonExpired), "410 " + string(metav1.StatusReasonGone)}
	if !slices.Contains(allowed, got) {
		t.Errorf("watch error status = %q (%s), want one of %q", got, status.Message, allowed)
	}
}
