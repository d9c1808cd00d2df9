package e2e_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/test/apiserver"
)

// TestAPIServerRestartWhileRunning: the API server crashes and comes back
// while the informer runs, with changes before, during the outage's
// aftermath and after. The informer rides it out (resuming or relisting as
// the server allows) and ends equal to the server, in its store and in what
// its handler was told.
func TestAPIServerRestartWhileRunning(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	for _, b := range persistentBackends[:2] {
		t.Run(b.name, func(t *testing.T) {
			sel := selection{namespace: "running-" + b.name}
			createNamespace(t, c, sel.namespace)
			createConfigMaps(t, c, sel.namespace, 100)
			r := startInformer(t, srv, b.url(t.TempDir()), sel)
			r.waitSynced(t)

			changeWhileDown(t, c, sel.namespace, 3000) // "down" is a misnomer here: the informer runs
			srv.StopAPIServer(t)
			srv.StartAPIServer(t)
			for i := range 5 {
				updateConfigMap(t, c, sel.namespace, cmName(50+i), "after-restart")
				deleteConfigMap(t, c, sel.namespace, cmName(60+i))
				createConfigMap(t, c, sel.namespace, fmt.Sprintf("after-%d", i), "b")
			}

			server := waitConverged(t, c, r.store, sel)
			evs := r.rec.waitFor(t, "the handler to see the server's state", func(evs []ev) bool {
				return cmp.Equal(server, viewOf(evs))
			})
			for _, e := range evs {
				if e.NilObj {
					t.Errorf("tombstone without its object: %+v", e)
				}
			}
			if !r.inf.HasSynced() {
				t.Errorf("informer not synced after converging")
			}
			r.stop(t)
		})
	}
}
