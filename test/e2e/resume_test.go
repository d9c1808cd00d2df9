package e2e_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes"

	"github.com/informerdb/informerdb/test/apiserver"
)

// TestResume is issue 4: a cold start over N ConfigMaps, a clean stop,
// changes while the informer is down (creates, updates, deletes, a delete
// and re-create under the same name), and a restart on the same store. The
// restarted handler gets OnAdd(obj, true) for every persisted object and
// then exactly the changes, deletes included; the restart makes no full
// LIST (only the limit=1 freshness probe) and the API server sends it under
// 1% of the bytes it sent for the cold start.
func TestResume(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	n := objectCount(t)
	for _, b := range persistentBackends {
		t.Run(b.name, func(t *testing.T) {
			sel := selection{namespace: "resume-" + b.name}
			createNamespace(t, c, sel.namespace)
			createConfigMaps(t, c, sel.namespace, n)
			url := b.url(t.TempDir())

			before := srv.Metrics(t)
			cold := startInformer(t, srv, url, sel)
			cold.waitSynced(t)
			coldCost := srv.Metrics(t).Sub(before)
			persisted := storeState(t, cold.store)
			if diff := cmp.Diff(serverState(t, c, sel), persisted); diff != "" {
				t.Fatalf("store after cold start (-server +store):\n%s", diff)
			}
			if got := len(cold.rec.events()); got != n {
				t.Errorf("cold start delivered %d notifications, want %d", got, n)
			}
			cold.stop(t)

			changes := changeWhileDown(t, c, sel.namespace, n)

			before = srv.Metrics(t)
			warm := startInformer(t, srv, url, sel)
			got := warm.rec.waitN(t, n+len(changes))
			warm.waitSynced(t)
			warmCost := srv.Metrics(t).Sub(before)

			sortByName(got[:n])
			if diff := cmp.Diff(replayOf(persisted), got[:n]); diff != "" {
				t.Errorf("replay of the persisted objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(changes, blankDeleteRVs(got[n:])); diff != "" {
				t.Errorf("changes made while down, as delivered after the replay (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(serverState(t, c, sel), storeState(t, warm.store)); diff != "" {
				t.Errorf("store after resume (-server +store):\n%s", diff)
			}
			if extra := warm.rec.events()[n+len(changes):]; len(extra) != 0 {
				t.Errorf("notifications beyond the changes: %+v", extra)
			}

			// Lists counts the freshness probe only: a full list would be a
			// second LIST, or (watch-list) as many watch events as objects.
			if got := warmCost.Lists["configmaps"]; got != 1 {
				t.Errorf("restart made %d LIST requests for configmaps, want 1 (the limit=1 probe); metrics delta %+v", got, warmCost)
			}
			// The probe's answer holds one object: a few times the average
			// object size of the cold start is a generous bound.
			if got, limit := warmCost.ListBytes["configmaps"], 3*bytesSent(coldCost)/int64(n); got > limit {
				t.Errorf("restart LIST responses were %d bytes, want at most %d (one object and list metadata)", got, limit)
			}
			if got, limit := warmCost.WatchEvents["configmaps"], int64(len(changes)+20); got > limit {
				t.Errorf("restart received %d watch events for configmaps, want at most %d (the %d changes, and bookmarks): a relist?", got, limit, len(changes))
			}
			coldBytes, warmBytes := bytesSent(coldCost), bytesSent(warmCost)
			if warmBytes*100 >= coldBytes {
				t.Errorf("restart cost the API server %d bytes, cold start %d: want under 1%%", warmBytes, coldBytes)
			}
			t.Logf("summary backend=%s objects=%d changes=%d cold: lists=%d list_bytes=%d watch_events=%d watch_event_bytes=%d total_bytes=%d; restart: lists=%d list_bytes=%d watch_events=%d watch_event_bytes=%d total_bytes=%d (%.3f%% of cold)",
				b.name, n, len(changes),
				coldCost.Lists["configmaps"], coldCost.ListBytes["configmaps"], coldCost.WatchEvents["configmaps"], coldCost.WatchEventBytes["configmaps"], coldBytes,
				warmCost.Lists["configmaps"], warmCost.ListBytes["configmaps"], warmCost.WatchEvents["configmaps"], warmCost.WatchEventBytes["configmaps"], warmBytes,
				100*float64(warmBytes)/float64(coldBytes))
			warm.stop(t)
		})
	}
}

// changeWhileDown changes the ConfigMaps cm-* of a cold start over n
// objects: k = n/1000 (at least 1) updates, deletes, deletes with a
// re-create under the same name, and creates. It returns the notifications a
// resumed informer must deliver, in order, with the resourceVersions of
// deletions blank (the API server does not return them).
func changeWhileDown(t *testing.T, c kubernetes.Interface, ns string, n int) []ev {
	t.Helper()
	k := max(1, n/1000)
	var want []ev
	for i := range k {
		old, cur := updateConfigMap(t, c, ns, cmName(i), "v2")
		want = append(want, ev{Op: "update", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion, OldUID: string(old.UID), OldRV: old.ResourceVersion})
	}
	for i := k; i < 2*k; i++ {
		old := deleteConfigMap(t, c, ns, cmName(i))
		want = append(want, ev{Op: "delete", Name: old.Name, UID: string(old.UID)})
	}
	for i := 2 * k; i < 3*k; i++ {
		old := deleteConfigMap(t, c, ns, cmName(i))
		cur := createConfigMap(t, c, ns, cmName(i), "recreated")
		want = append(want,
			ev{Op: "delete", Name: old.Name, UID: string(old.UID)},
			ev{Op: "add", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion})
	}
	for i := range k {
		cur := createConfigMap(t, c, ns, fmt.Sprintf("new-%05d", i), "a")
		want = append(want, ev{Op: "add", Name: cur.Name, UID: string(cur.UID), RV: cur.ResourceVersion})
	}
	return want
}

// blankDeleteRVs clears the resourceVersion of watched deletions, which
// carry the deletion's resourceVersion that the client never learns.
func blankDeleteRVs(evs []ev) []ev {
	out := append([]ev(nil), evs...)
	for i := range out {
		if out[i].Op == "delete" && !out[i].Tomb {
			out[i].RV = ""
		}
	}
	return out
}
