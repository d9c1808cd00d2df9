package bench_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/test/apiserver"
	"github.com/informerdb/informerdb/test/bench"
)

// TestRunMany runs RunMany's scenarios on a small N against a real API
// server, in a live cluster (the lease renewed, a pause before the
// restart), and checks what its table reports: the restart of five
// informers of one Factory replays every persisted object and gets exactly
// the changes; the two-namespace controller-runtime cache's handler, added
// once the informers synced, gets the deletes as tombstones and the
// objects as they are; every restart resumes (no list beyond the probes
// and the catch-up LISTs, no watch events beyond the changes and
// bookmarks), and with StateCatchUp its informers sync by the listed
// metadata of every object.
func TestRunMany(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	cl, err := bench.NewCluster(srv)
	if err != nil {
		t.Fatalf("NewCluster: %v", err)
	}
	const n = 40
	for _, tc := range []struct {
		name  string
		cfg   bench.ManyConfig
		infs  int
		late  bool // the handler is added once synced
		state bool
	}{
		{"factory", bench.ManyConfig{Shape: bench.ShapeFactory}, 5, false, false},
		{"crcache", bench.ManyConfig{Shape: bench.ShapeCRCache}, 2, true, false},
		{"crcache-state", bench.ManyConfig{Shape: bench.ShapeCRCache, StateCatchUp: true}, 2, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.N, cfg.Dir, cfg.Namespace = n, t.TempDir(), tc.name
			res, err := bench.RunMany(t.Context(), cl, cfg)
			if err != nil {
				t.Fatalf("RunMany: %v", err)
			}
			if res.Informers != tc.infs || !res.Live {
				t.Errorf("%d informers, live %v; want %d, true", res.Informers, res.Live, tc.infs)
			}
			ch := res.Changes
			if diff := cmp.Diff(bench.Changes{Updated: 2, Deleted: 1, Created: 1}, ch); diff != "" {
				t.Errorf("changes per informer (-want +got):\n%s", diff)
			}
			k := int64(tc.infs)
			after := k * int64(n-ch.Deleted+ch.Created)
			want := bench.Events{Initial: k * n, Added: k * int64(ch.Created), Updated: k * int64(ch.Updated), Deleted: k * int64(ch.Deleted)}
			if tc.late {
				want = bench.Events{Initial: after, Deleted: k * int64(ch.Deleted)}
			}
			if diff := cmp.Diff(want, res.Restart.Events); diff != "" {
				t.Errorf("restart: handler notifications at sync (-want +got):\n%s", diff)
			}
			for _, p := range []bench.Phase{res.ClientGo, res.Restart} {
				if p.Objects != int(after) {
					t.Errorf("%s: %d objects in the caches at sync, want %d", p.Name, p.Objects, after)
				}
			}
			if got := res.Restart.Cost.Lists; got < k {
				t.Errorf("restart made %d LISTs, want at least the %d probes", got, k)
			}
			if res.Restart.SyncedByState != tc.state {
				t.Errorf("restart synced by state: %v, want %v", res.Restart.SyncedByState, tc.state)
			}
			// A resume gets the changes and bookmarks as watch events;
			// a state list gets every object's metadata besides.
			events, changes := res.Restart.Cost.WatchEvents, k*int64(ch.Total())
			switch {
			case !tc.state && events > changes+20*k:
				t.Errorf("restart got %d watch events, want at most %d (the %d changes and bookmarks): a relist?", events, changes+20*k, changes)
			case tc.state && events < after:
				t.Errorf("restart got %d watch events, want at least the %d objects' metadata of the state lists", events, after)
			}
		})
	}
}
