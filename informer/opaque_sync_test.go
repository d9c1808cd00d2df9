package informer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// syncWatchStore holds every Commit until gate is closed, and records the
// store's state the first time a commit starts while the informer already
// reports synced (Commit runs under the informer's applyMu).
type syncWatchStore struct {
	store.Store
	gate chan struct{}
	inf  *Informer

	mu          sync.Mutex
	syncedState map[string]string // state when first seen synced before a commit
	commits     int
}

func (s *syncWatchStore) Commit(ctx context.Context, b store.Batch) error {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	s.commits++
	if s.inf != nil && s.inf.synced && s.syncedState == nil {
		s.syncedState = storeValues(s.Store)
	}
	s.mu.Unlock()
	return s.Store.Commit(ctx, b)
}

// TestOpaqueResourceVersionsSyncAfterBacklog: with resourceVersions that do
// not compare, the informer syncs once the bookmark by which the reflector
// caught up is applied, and everything queued before it: the changes made
// while it was down (before the consistent read taken at start, DESIGN
// invariant 3). It used to sync on any batch popped after the reflector
// caught up, which, with a backlog queued, was a batch from before the
// bookmark: HasSynced with most of the backlog unapplied.
func TestOpaqueResourceVersionsSyncAfterBacklog(t *testing.T) {
	t.Run("one delta per commit", func(t *testing.T) { checkOpaqueSync(t, 30, 1, NoBatchDelay) })
	t.Run("group commit, default delay", func(t *testing.T) { checkOpaqueSync(t, 1000, 100, 0) })
}

func checkOpaqueSync(t *testing.T, n, maxBatch int, delay time.Duration) {
	mem := backends(t)[0] // memory, same object across restart
	if mem.scheme != "memory" {
		t.Fatalf("backend 0 is %s", mem.scheme)
	}
	lw := newFakeLW()
	lw.opaque = true
	lw, s := firstRunOn(t, mem, lw)
	for i := 0; i < n; i++ {
		lw.create("ns", fmt.Sprintf("n%04d", i), "x")
	}
	want := lw.values()

	gs := &syncWatchStore{Store: s, gate: make(chan struct{})}
	opts := testOptions()
	opts.MaxBatchSize = maxBatch
	opts.MaxBatchDelay = delay
	inf := newInformer(t, lw, gs, opts)
	gs.inf = inf
	start(t, inf)

	// Wait until the reflector has queued everything and caught up (by the
	// bookmark at the probe's resourceVersion).
	pollUntil(t, "reflector caught up", func() string {
		src := inf.srcPub.Load()
		if src == nil {
			return "not started"
		}
		select {
		case <-src.CaughtUp():
			return ""
		default:
			return "not caught up"
		}
	})
	time.Sleep(50 * time.Millisecond) // let the popper stall on the gated commit
	close(gs.gate)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	pollUntil(t, "store converges", func() string {
		if d := cmp.Diff(want, storeValues(s)); d != "" {
			return d
		}
		return ""
	})
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.syncedState != nil {
		missing := 0
		for k := range want {
			if _, ok := gs.syncedState[k]; !ok {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("informer reported HasSynced while %d of the %d objects created before the probe (the sync target) were not yet applied", missing, len(want))
		}
	}
}
