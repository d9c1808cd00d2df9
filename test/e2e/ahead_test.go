package e2e_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
)

// TestMultiNamespaceCacheResumesTogether: a controller-runtime cache of two
// namespaces on an InformerConstructor with default options, in a live
// cluster (a lease renewed every second, and a write outside the watched
// namespaces after the last change), asked for its ConfigMap informer
// after it started, as a controller's watch asks: controller-runtime makes
// the first namespace's informer, waits until it synced, then makes the
// second. At every restart the constructor resumes the second one as soon
// as the first runs, and hands it over when it is asked for
// (Stats.StartedAhead): both catch up at once instead of one after the
// other. Each informer then holds exactly the server's objects of its
// namespace as of the restart, the handler (added once synced) got the
// deletes made while down as tombstones and the server's objects, and
// nothing was relisted.
func TestMultiNamespaceCacheResumesTogether(t *testing.T) {
	t.Parallel()
	srv, nss, url := liveNamespaces(t, "ahead", 100)
	c := srv.Client()
	opts := &informer.ConstructorOptions{Cluster: "e2e"}

	r := startCRCache(t, srv, url, nss, opts, nil)
	r.waitSynced(t)
	for _, ns := range nss {
		if r.informer(t, ns).Stats().StartedAhead {
			t.Errorf("cold start: %s was started ahead, with no store to resume", ns)
		}
	}
	r.stop(t)

	for round := 1; round <= 3; round++ {
		changes := map[string][]ev{}
		for _, ns := range nss {
			changes[ns] = changeRound(t, c, ns, round)
		}
		// The newest revision is none of the watched objects'.
		createConfigMap(t, c, "ahead-elsewhere", fmt.Sprintf("other-%d", round), "other")
		server := serverStates(t, c, nss)

		r := startCRCache(t, srv, url, nss, opts, nil)
		r.waitSynced(t)
		ahead := 0
		for _, ns := range nss {
			inf := r.informer(t, ns)
			st := inf.Stats()
			if st.StartedAhead {
				ahead++
			}
			if st.Reflector.Resumes != 1 || st.Reflector.Relists != (reflector.RelistStats{}) {
				t.Errorf("round %d: %s: %d resumes, relists %+v; want 1 resume, no relist", round, ns, st.Reflector.Resumes, st.Reflector.Relists)
			}
			if diff := cmp.Diff(server[ns], storeState(t, inf.GetStore())); diff != "" {
				t.Errorf("round %d: %s: store at sync (-server +store):\n%s", round, ns, diff)
			}
			checkLateHandler(t, round, ns, r.recs[ns], changes[ns], server[ns])
		}
		// The namespace asked for first resumed as it was made; the
		// other was started ahead, as the first ran.
		if ahead != 1 {
			t.Errorf("round %d: %d informers were started ahead, want 1 (the second namespace asked for)", round, ahead)
		}
		r.stop(t)
	}
}

// checkLateHandler checks what a handler added once the informer synced
// (as controller-runtime adds its handlers) got: the deletes made while
// down, as tombstones carrying the last persisted object, then the objects
// as they are now. A tombstone's object is the one the watch's delete
// carried: its resourceVersion is the delete's, not compared.
func checkLateHandler(t *testing.T, round int, ns string, rec *recorder, changes []ev, server state) {
	t.Helper()
	var tombs []ev
	for _, e := range changes {
		if e.Op == "delete" {
			tombs = append(tombs, ev{Op: "delete", Name: e.Name, UID: e.UID, Tomb: true})
		}
	}
	got := rec.waitN(t, len(tombs)+len(server))
	sortByName(tombs)
	gotTombs := got[:len(tombs)]
	sortByName(gotTombs)
	for i := range gotTombs {
		gotTombs[i].RV = ""
	}
	if diff := cmp.Diff(tombs, gotTombs); diff != "" {
		t.Errorf("round %d: deletes made in %s while down (-want +got):\n%s", round, ns, diff)
	}
	adds := got[len(tombs):]
	sortByName(adds)
	if diff := cmp.Diff(replayOf(server), adds); diff != "" {
		t.Errorf("round %d: objects of %s the handler got (-want +got):\n%s", round, ns, diff)
	}
}

// TestMultiNamespaceCacheTransformsPerNamespace: a multi-namespace cache
// whose namespaces have transforms of their own. The informer started ahead
// for the second namespace ran with the first one's transform, so when
// controller-runtime sets the second namespace's transform, the constructor
// makes that informer anew on its store: every stored object of a namespace
// was transformed by that namespace's transform, the changes made while
// down included, and nothing was relisted.
func TestMultiNamespaceCacheTransformsPerNamespace(t *testing.T) {
	t.Parallel()
	srv, nss, url := liveNamespaces(t, "transform", 50)
	c := srv.Client()
	opts := &informer.ConstructorOptions{Cluster: "e2e"}
	const mark = "e2e.informerdb.io/transformed-for"
	transform := func(ns string) cache.TransformFunc {
		return func(obj interface{}) (interface{}, error) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				cm = cm.DeepCopy()
				if cm.Annotations == nil {
					cm.Annotations = map[string]string{}
				}
				cm.Annotations[mark] = ns
				return cm, nil
			}
			return obj, nil
		}
	}

	r := startCRCache(t, srv, url, nss, opts, transform)
	r.waitSynced(t)
	r.stop(t)
	for round := 1; round <= 2; round++ {
		for _, ns := range nss {
			changeRound(t, c, ns, round)
		}
		createConfigMap(t, c, "transform-elsewhere", fmt.Sprintf("other-%d", round), "other")
		server := serverStates(t, c, nss)

		r := startCRCache(t, srv, url, nss, opts, transform)
		r.waitSynced(t)
		for _, ns := range nss {
			inf := r.informer(t, ns)
			st := inf.Stats()
			if st.StartedAhead {
				t.Errorf("round %d: %s: the informer started ahead with another namespace's transform was kept", round, ns)
			}
			if st.Reflector.Relists != (reflector.RelistStats{}) {
				t.Errorf("round %d: %s: relists %+v; want none", round, ns, st.Reflector.Relists)
			}
			var wrong []string
			for _, obj := range inf.GetStore().List() {
				cm := obj.(*corev1.ConfigMap)
				if got := cm.Annotations[mark]; got != ns {
					wrong = append(wrong, fmt.Sprintf("%s (transformed for %q)", cm.Name, got))
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("round %d: %s: objects not transformed by their namespace's transform: %v", round, ns, wrong)
			}
			if diff := cmp.Diff(server[ns], storeState(t, inf.GetStore())); diff != "" {
				t.Errorf("round %d: %s: store at sync (-server +store):\n%s", round, ns, diff)
			}
		}
		r.stop(t)
	}
}
