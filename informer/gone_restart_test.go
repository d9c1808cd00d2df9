package informer

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRestartAfterResourceGoneRelists: when the server stops serving the
// resource (404), the reflector empties the store, which keeps its old
// resume point R. A restart on that empty store lists instead of resuming
// from R: resuming would never see the objects the server holds from
// before R once the resource is served again (an API group disabled and
// enabled, an APIService removed and restored), and the informer would
// sync on an empty cache (DESIGN invariants 2 and 3).
func TestRestartAfterResourceGoneRelists(t *testing.T) {
	mem := backends(t)[0]
	lw, s := firstRun(t, mem)
	lw.setGone(true)
	inf := newInformer(t, lw, s, testOptions())
	r := start(t, inf)
	waitDone(t, "informer sync on the emptied store", inf.HasSyncedChecker())
	pollUntil(t, "store emptied", func() string {
		if keys := s.ListKeys(); len(keys) != 0 {
			return fmt.Sprint(keys)
		}
		return ""
	})
	r.stop()
	if s.ResourceVersion() == "" {
		t.Fatalf("setup: the emptied store has no resume point; the case this test covers needs one")
	}

	lw.setGone(false) // served again, objects unchanged
	lists := lw.fullLists()
	inf2 := newInformer(t, lw, s, testOptions())
	start(t, inf2)
	waitDone(t, "informer sync after restart", inf2.HasSyncedChecker())
	if d := cmp.Diff(lw.values(), storeValues(s)); d != "" {
		t.Errorf("synced after the restart, but the store misses the served objects (-server +store):\n%s", d)
	}
	if got := lw.fullLists() - lists; got != 1 {
		t.Errorf("restart on an empty store made %d full lists, want 1", got)
	}
}
