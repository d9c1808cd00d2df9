package e2e_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/test/apiserver"
)

// TestScopeChange: an informer restarted on the same store with another
// label selector or namespace (so another store.Options.Scope) must relist
// into an empty store and never serve, or hand its handlers, the objects of
// the old scope (DESIGN invariant 5).
func TestScopeChange(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	for _, ns := range []string{"scope-1", "scope-2"} {
		createNamespace(t, c, ns)
		createConfigMaps(t, c, ns, 60) // app=a and app=b, alternating
	}
	tests := []struct {
		name        string
		first, then selection
	}{
		{"label selector", selection{"scope-1", "app=a"}, selection{"scope-1", "app=b"}},
		{"namespace", selection{"scope-1", ""}, selection{"scope-2", ""}},
		{"selector dropped", selection{"scope-2", "app=a"}, selection{"scope-2", ""}},
	}
	for _, b := range persistentBackends {
		for _, tc := range tests {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				url := b.url(t.TempDir())
				first := startInformer(t, srv, url, tc.first)
				first.waitSynced(t)
				old := storeState(t, first.store)
				if len(old) == 0 {
					t.Fatalf("first scope %+v cached nothing", tc.first)
				}
				first.stop(t)

				s := openStore(t, srv, url, tc.then)
				if info := s.Info(); info.Reset == "" || info.ResourceVersion != "" {
					t.Errorf("store reopened with another scope: Reset %q, resume point %q; want a reset store without resume point", info.Reset, info.ResourceVersion)
				}
				if got := storeState(t, s); len(got) != 0 {
					t.Errorf("store reopened with another scope serves %d objects of the old one", len(got))
				}
				before := srv.Metrics(t)
				then := startInformerOn(t, srv, s, tc.then)
				then.waitSynced(t)
				cost := srv.Metrics(t).Sub(before)
				want := serverState(t, c, tc.then)
				if diff := cmp.Diff(want, storeState(t, s)); diff != "" {
					t.Errorf("store after the scope change (-server +store):\n%s", diff)
				}
				evs := then.rec.waitN(t, len(want))
				if diff := cmp.Diff(replayOf(want), sortedCopy(evs)); diff != "" {
					t.Errorf("handler after the scope change: want one initial add per object of the new scope (-want +got):\n%s", diff)
				}
				if extra := then.rec.events()[len(want):]; len(extra) != 0 {
					t.Errorf("notifications beyond the new scope's objects: %+v", extra)
				}
				// A full list, not a probe and a resume: the reset store
				// has no resume point.
				if cost.Lists["configmaps"] < 1 && cost.WatchEvents["configmaps"] < int64(len(want)) {
					t.Errorf("scope change did not list: metrics delta %+v", cost)
				}
				then.stop(t)
			})
		}
	}
}

func sortedCopy(evs []ev) []ev {
	out := append([]ev(nil), evs...)
	sortByName(out)
	return out
}
