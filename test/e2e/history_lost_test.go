package e2e_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/test/apiserver"
)

// historyLostObjects is the cold-start size of the history-lost tests: the
// point is what a relist delivers, not its cost.
const historyLostObjects = 200

// TestHistoryLostAPIServerRestart is issue 5 with the watch cache: the API
// server restarts while the informer is down, so its watch cache starts at
// the current revision and the persisted resume point is gone. The
// restarted informer relists, and the deletes made meanwhile reach its
// handler as cache.DeletedFinalStateUnknown carrying the last persisted
// object.
func TestHistoryLostAPIServerRestart(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	for _, b := range persistentBackends {
		t.Run(b.name, func(t *testing.T) {
			historyLost(t, srv, b, "restart-"+b.name, func(t *testing.T) { srv.RestartAPIServer(t) })
		})
	}
}

// TestHistoryLostCompaction is issue 5 without the watch cache: watches go
// to etcd, and compacting etcd while the informer is down loses the history
// after its resume point.
func TestHistoryLostCompaction(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{DisableWatchCache: true})
	for _, b := range persistentBackends {
		t.Run(b.name, func(t *testing.T) {
			historyLost(t, srv, b, "compact-"+b.name, func(t *testing.T) { srv.CompactToCurrent(t) })
		})
	}
}

// historyLost runs a cold start, stops, changes ConfigMaps, loses the
// history with lose, restarts and checks what the relist delivers.
func historyLost(t *testing.T, srv *apiserver.Server, b backendCase, ns string, lose func(t *testing.T)) {
	c := srv.Client()
	sel := selection{namespace: ns}
	createNamespace(t, c, ns)
	createConfigMaps(t, c, ns, historyLostObjects)
	url := b.url(t.TempDir())

	cold := startInformer(t, srv, url, sel)
	cold.waitSynced(t)
	persisted := storeState(t, cold.store)
	cold.stop(t)

	changes := changeWhileDown(t, c, ns, historyLostObjects*10) // 2 of each kind
	lose(t)

	before := srv.Metrics(t)
	warm := startInformer(t, srv, url, sel)
	warm.waitSynced(t)
	server := waitConverged(t, c, warm.store, sel)
	cost := srv.Metrics(t).Sub(before)

	// What the handler must have been told: every persisted object first,
	// then whatever takes it to the server's state.
	got := warm.rec.waitFor(t, "the handler to see the server's state", func(evs []ev) bool {
		return cmp.Equal(server, viewOf(evs))
	})
	replay := append([]ev(nil), got[:len(persisted)]...)
	sortByName(replay)
	if diff := cmp.Diff(replayOf(persisted), replay); diff != "" {
		t.Errorf("replay of the persisted objects (-want +got):\n%s", diff)
	}

	// Each delete arrives as one tombstone carrying the last persisted
	// object, a name deleted and re-created while down included: the relist
	// reports the old UID gone before the new object's add (DESIGN
	// invariant 4), so handlers keyed by UID see the delete.
	wantDeletes := map[string]ev{}
	for _, e := range changes {
		if e.Op == "delete" {
			p := persisted[e.Name]
			wantDeletes[e.Name] = ev{Op: "delete", Name: e.Name, UID: p.UID, RV: p.RV, Tomb: true}
		}
	}
	gotDeletes := map[string]ev{}
	for _, e := range got[len(persisted):] {
		if e.Op == "delete" {
			if _, dup := gotDeletes[e.Name]; dup {
				t.Errorf("%s deleted twice", e.Name)
			}
			gotDeletes[e.Name] = e
		}
	}
	if diff := cmp.Diff(wantDeletes, gotDeletes); diff != "" {
		t.Errorf("deletes delivered after the history was lost (-want +got):\n%s", diff)
	}

	// A relist: more than the probe LIST, or (watch-list) an initial event
	// per object.
	if cost.Lists["configmaps"] < 2 && cost.WatchEvents["configmaps"] < int64(len(server)) {
		t.Errorf("restart after the history was lost did not relist: metrics delta %+v", cost)
	}
	t.Logf("relist after lost history: lists=%d list_bytes=%d watch_events=%d watch_event_bytes=%d; %d deletes as tombstones",
		cost.Lists["configmaps"], cost.ListBytes["configmaps"], cost.WatchEvents["configmaps"], cost.WatchEventBytes["configmaps"], len(gotDeletes))
	warm.stop(t)
}

// viewOf is the state a handler that received evs knows of.
func viewOf(evs []ev) state {
	out := state{}
	for _, e := range evs {
		if e.Op == "delete" {
			delete(out, e.Name)
		} else {
			out[e.Name] = version{e.UID, e.RV}
		}
	}
	return out
}
