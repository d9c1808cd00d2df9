package informer

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestTimeTravelSyncsOnlyWithTheRelist restarts an informer against a
// server restored from a backup older than its resume point. The reflector
// relists; until that relist is in the store, the persisted resume point
// (newer than anything the server has) must not count as caught up, or
// HasSynced would be true over objects the server no longer has (DESIGN
// invariant 3). Whether the informer looks at its resume point before it
// applies the relist is a race, so the restart is repeated.
func TestTimeTravelSyncsOnlyWithTheRelist(t *testing.T) {
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			lw := newFakeLW()
			for _, n := range []string{"a", "b", "c"} {
				lw.create("ns", n, n+"1")
			}
			s := openStore(t, "memory://")
			inf := newInformer(t, lw, s, testOptions())
			r := start(t, inf)
			waitDone(t, "first run sync", inf.HasSyncedChecker())
			r.stop()

			older := newFakeLW() // the restored server: RV 1 < 3
			older.create("ns", "z", "z1")
			gs := &gatedStore{Store: s, entered: make(chan int, 10), release: make(chan struct{})}
			gs.closed.Store(true)
			inf = newInformer(t, older, gs, testOptions())
			start(t, inf)
			select {
			case <-gs.entered: // the relist is being committed, and held
			case <-time.After(waitLimit):
				t.Fatal("no commit")
			}
			if inf.HasSynced() {
				t.Errorf("HasSynced = true before the relist after time travel is in the store (store holds %v)", inf.GetStore().ListKeys())
			}
			close(gs.release)
			waitDone(t, "sync after the relist", inf.HasSyncedChecker())
			keys := inf.GetStore().ListKeys()
			slices.Sort(keys)
			if !slices.Equal(keys, []string{"ns/z"}) {
				t.Errorf("store keys once synced = %v, want [ns/z]", keys)
			}
			if got, want := inf.LastSyncResourceVersion(), older.currentRV(); got != want {
				t.Errorf("LastSyncResourceVersion = %q, want the relist's %q", got, want)
			}
		})
	}
}
