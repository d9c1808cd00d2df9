package reflector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/test/apiserver"
)

// integrationTimeout bounds waits on the real API server; it is a hang
// detector, not a performance assertion (two shared cores).
const integrationTimeout = 3 * time.Minute

// runReal runs a Reflector against the real API server until the returned
// stop is called; stop checks that Run returned nil.
func runReal(t *testing.T, lw cache.ListerWatcherWithContext, q *fakeQueue, opts Options) (*Reflector, *recorder, func()) {
	t.Helper()
	rec := &recorder{n: q.n}
	opts.WatchErrorHandler = func(ctx context.Context, _ *cache.Reflector, err error) {
		rec.mu.Lock()
		rec.errs = append(rec.errs, err)
		rec.mu.Unlock()
		rec.n.notify()
	}
	r, err := New(lw, q, &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		case <-time.After(integrationTimeout):
			t.Fatalf("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return r, rec, stop
}

func waitReal(t *testing.T, n *notifier, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(integrationTimeout)
	for {
		ch := n.wait()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func createCM(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"payload": strings.Repeat("x", 1024)},
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
}

func deleteCM(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := c.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap %s/%s: %v", ns, name, err)
	}
}

// objectCalls drops bookmarks, whose number depends on the server's timing.
func objectCalls(calls []qCall) []qCall {
	var out []qCall
	for _, c := range calls {
		if c.Op != "bookmark" {
			c.RV = ""
			out = append(out, c)
		}
	}
	return out
}

func TestIntegrationRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("real API server test; skipped under -short")
	}
	s := apiserver.Start(t, apiserver.Options{})
	c := s.Client()
	ns := "reflector-it"
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	const initial = 20
	for i := range initial {
		createCM(t, c, ns, fmt.Sprintf("cm-%02d", i))
	}
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())

	t.Run("resume within the watch window makes one LIST, the probe", func(t *testing.T) {
		// What a full list costs the server, to compare the probe with.
		before := s.Metrics(t)
		full, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		fullBytes := s.Metrics(t).Sub(before).ListBytes["configmaps"]
		resumeFrom := full.ResourceVersion

		// Changes while "down".
		createCM(t, c, ns, "new-1")
		createCM(t, c, ns, "new-2")
		deleteCM(t, c, ns, "cm-00")
		// A write to another resource moves etcd's revision, hence the
		// probe's resourceVersion, past every ConfigMap event: no watch
		// event reaches the sync target, only a bookmark can.
		if _, err := c.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create secret: %v", err)
		}

		before = s.Metrics(t)
		q := &fakeQueue{n: newNotifier()}
		began := time.Now()
		r, rec, stop := runReal(t, lw, q, Options{Name: "it-resume", ResumeFrom: resumeFrom, ExpectedType: &corev1.ConfigMap{}})
		waitReal(t, q.n, "the three changes", func() bool { return len(objectCalls(q.Calls())) >= 3 })
		// The resource is quiet from here on: only a bookmark can tell the
		// reflector it has caught up with the probe.
		select {
		case <-r.CaughtUp():
		case <-time.After(integrationTimeout):
			t.Fatalf("not caught up with sync target")
		}
		caughtUpAfter := time.Since(began)
		target, _ := r.SyncTarget()
		caughtRV, _ := r.CaughtUpResourceVersion()
		if got := q.Calls(); got[len(got)-1].Op != "bookmark" || got[len(got)-1].RV != caughtRV {
			t.Errorf("caught up at %s, want it reached by the last queue call, a bookmark; calls %+v", caughtRV, got)
		}
		t.Logf("caught up %v after start: sync target %s reached by resourceVersion %s (catch-up watch timeout %v)",
			caughtUpAfter.Round(time.Millisecond), target, caughtRV, DefaultCatchUpWatchTimeout)
		stop()
		delta := s.Metrics(t).Sub(before)

		want := []qCall{{Op: "add", Key: ns + "/new-1"}, {Op: "add", Key: ns + "/new-2"}, {Op: "delete", Key: ns + "/cm-00"}}
		if d := cmp.Diff(want, objectCalls(q.Calls())); d != "" {
			t.Errorf("queue calls without bookmarks (-want +got):\n%s", d)
		}
		if got := delta.Lists["configmaps"]; got != 1 {
			t.Errorf("API server counted %d LIST requests for configmaps during the resume, want 1 (the probe); all: %+v", got, delta.Lists)
		}
		if got := delta.ListBytes["configmaps"]; got >= fullBytes {
			t.Errorf("LIST bytes during the resume = %d, want less than a full list (%d)", got, fullBytes)
		}
		st := r.Stats()
		if st.Lists != 1 || st.Resumes != 1 || st.Relists != (RelistStats{}) || st.WatchLists != 0 {
			t.Errorf("Stats = %+v, want one LIST, one resume, no relist", st)
		}
		if errs := rec.Errs(); len(errs) != 0 {
			t.Errorf("watch error handler got %v", errs)
		}
	})

	t.Run("resume whose newest write is in another namespace catches up without a relist", func(t *testing.T) {
		other := "reflector-it-other"
		if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace: %v", err)
		}
		list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		createCM(t, c, ns, "seen-1")
		// The newest write of the resource, which the namespaced watch
		// filters out: the server's bookmarks then carry nothing past
		// the last event the watch processed, unless the watch cache
		// learns of a newer etcd revision.
		createCM(t, c, other, "unseen")

		before := s.Metrics(t)
		q := &fakeQueue{n: newNotifier()}
		began := time.Now()
		// A deadline shorter than the minute after which something else
		// may move the watch cache: without the catch-up LISTs this
		// resume relists (reason catch-up).
		r, rec, stop := runReal(t, lw, q, Options{Name: "it-filtered", ResumeFrom: list.ResourceVersion, ExpectedType: &corev1.ConfigMap{}, CatchUpDeadline: 45 * time.Second})
		select {
		case <-r.CaughtUp():
		case <-time.After(integrationTimeout):
			t.Fatalf("not caught up with sync target")
		}
		caughtUpAfter := time.Since(began)
		stop()
		delta := s.Metrics(t).Sub(before)
		st := r.Stats()
		target, _ := r.SyncTarget()
		caughtRV, _ := r.CaughtUpResourceVersion()
		t.Logf("caught up %v after start: sync target %s reached by resourceVersion %s; %d catch-up LISTs",
			caughtUpAfter.Round(time.Millisecond), target, caughtRV, st.Lists-1)
		if st.Resumes != 1 || st.Relists != (RelistStats{}) || st.WatchLists != 0 {
			t.Errorf("Stats = %+v, want one resume and no relist", st)
		}
		if d := cmp.Diff([]qCall{{Op: "add", Key: ns + "/seen-1"}}, objectCalls(q.Calls())); d != "" {
			t.Errorf("queue calls without bookmarks (-want +got):\n%s", d)
		}
		// The probe and the catch-up LISTs, each of one object: nothing
		// else.
		if got := delta.Lists["configmaps"]; got != st.Lists {
			t.Errorf("API server counted %d LIST requests for configmaps, the reflector %d", got, st.Lists)
		}
		if errs := rec.Errs(); len(errs) != 0 {
			t.Errorf("watch error handler got %v", errs)
		}
	})

	t.Run("cold start", func(t *testing.T) {
		off := false
		tests := []struct {
			name      string
			watchList *bool
			// want are the reflector's and the server's LIST counts, and
			// the reflector's streaming lists.
			wantLists, wantWatchLists int64
		}{
			{name: "auto streams the initial list", wantWatchLists: 1},
			{name: "paginated LIST", watchList: &off, wantLists: 1},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				now, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				var want []string
				for _, o := range now.Items {
					want = append(want, ns+"/"+o.Name)
				}
				before := s.Metrics(t)
				q := &fakeQueue{n: newNotifier()}
				r, rec, stop := runReal(t, lw, q, Options{Name: "it-cold", WatchList: tc.watchList, PageSize: 7, ExpectedType: &corev1.ConfigMap{}})
				waitReal(t, q.n, "the initial Replace", func() bool { return len(q.Calls()) > 0 })
				select {
				case <-r.CaughtUp():
				case <-time.After(integrationTimeout):
					t.Fatalf("not caught up after the initial list")
				}
				stop()
				delta := s.Metrics(t).Sub(before)
				got := q.Calls()
				if got[0].Op != "replace" {
					t.Fatalf("first queue call %+v, want a Replace", got[0])
				}
				if d := cmp.Diff(want, got[0].Keys); d != "" {
					t.Errorf("Replace keys (-want +got):\n%s", d)
				}
				// PageSize 7 splits the paginated LIST into pages.
				wantServerLists := int64(0)
				if tc.wantLists > 0 {
					wantServerLists = int64((len(want) + 6) / 7)
				}
				st := r.Stats()
				if st.WatchLists != tc.wantWatchLists || st.Lists != wantServerLists || st.Relists != (RelistStats{Cold: 1}) {
					t.Errorf("Stats = %+v, want %d streaming lists, %d LIST pages, one cold relist", st, tc.wantWatchLists, wantServerLists)
				}
				if got := delta.Lists["configmaps"]; got != wantServerLists {
					t.Errorf("API server counted %d LIST requests for configmaps, want %d", got, wantServerLists)
				}
				if errs := rec.Errs(); len(errs) != 0 {
					t.Errorf("watch error handler got %v", errs)
				}
			})
		}
	})

	t.Run("after an API server restart the resume point expires and the reflector relists", func(t *testing.T) {
		list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		resumeFrom := list.ResourceVersion
		createCM(t, c, ns, "before-restart")
		s.RestartAPIServer(t)
		deleteCM(t, c, ns, "cm-01")

		q := &fakeQueue{n: newNotifier()}
		r, rec, stop := runReal(t, lw, q, Options{Name: "it-restart", ResumeFrom: resumeFrom, ExpectedType: &corev1.ConfigMap{}})
		waitReal(t, q.n, "a Replace", func() bool {
			for _, c := range q.Calls() {
				if c.Op == "replace" {
					return true
				}
			}
			return false
		})
		stop()

		var replace qCall
		for _, c := range q.Calls() {
			if c.Op == "replace" {
				replace = c
				break
			}
		}
		now, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var want []string
		for _, o := range now.Items {
			want = append(want, ns+"/"+o.Name)
		}
		if d := cmp.Diff(want, replace.Keys); d != "" {
			t.Errorf("Replace keys (-want +got):\n%s", d)
		}
		st := r.Stats()
		if st.Relists.Expired != 1 || st.Resumes != 1 || st.Lists != 1 || st.WatchLists != 1 {
			t.Errorf("Stats = %+v, want one resume, then one streaming relist for expiry and no LIST but the probe", st)
		}
		// A restarting server may first answer with other errors (its
		// watch cache still initialising); the 410 must be among them.
		errs := rec.Errs()
		expired := 0
		for _, err := range errs {
			if isExpired(err) {
				expired++
			}
		}
		if expired != 1 {
			t.Errorf("watch error handler got %v, want exactly one 410 Expired among them", errs)
		}
	})
}

// TestIntegrationWithoutWatchCache: with --watch-cache=false watches are
// served by etcd and carry no bookmarks, so a resumed reflector on a quiet
// resource cannot learn that it has reached its sync target; the catch-up
// deadline turns the resume into a relist instead of leaving the informer
// unsynced.
func TestIntegrationWithoutWatchCache(t *testing.T) {
	if testing.Short() {
		t.Skip("real API server test; skipped under -short")
	}
	s := apiserver.Start(t, apiserver.Options{DisableWatchCache: true})
	c := s.Client()
	ns := "reflector-nocache"
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	createCM(t, c, ns, "a")
	list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	createCM(t, c, ns, "b")
	// Move the probe's resourceVersion past every ConfigMap event.
	if _, err := c.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}

	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	q := &fakeQueue{n: newNotifier()}
	const deadline = 20 * time.Second
	began := time.Now()
	r, _, stop := runReal(t, lw, q, Options{Name: "it-nocache", ResumeFrom: list.ResourceVersion, CatchUpDeadline: deadline, ExpectedType: &corev1.ConfigMap{}})
	select {
	case <-r.CaughtUp():
	case <-time.After(integrationTimeout):
		t.Fatalf("not caught up")
	}
	took := time.Since(began)
	stop()
	st := r.Stats()
	t.Logf("caught up after %v; stats %+v", took.Round(time.Millisecond), st)
	calls := objectCalls(q.Calls())
	if len(calls) == 0 || calls[0].Op != "add" || calls[0].Key != ns+"/b" {
		t.Errorf("queue calls %+v, want the resumed watch's ADDED b first", calls)
	}
	if st.Bookmarks == 0 && st.Relists.CatchUp != 1 {
		t.Errorf("no bookmark and %d catch-up relists, want 1: without bookmarks only the deadline can end the resume", st.Relists.CatchUp)
	}
}
