package informer

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// stagingStore counts the commits its prepared batches stage
// (store.StagedBatch) and checks that their applies come in the order of
// their Persists.
type stagingStore struct {
	store.Store
	staged    atomic.Int64 // Persists that returned
	applied   atomic.Int64 // applies run
	misorders atomic.Int64 // applies out of Persist order
}

func (s *stagingStore) PrepareBatch(b store.Batch) (store.PreparedBatch, error) {
	pb, err := s.Store.(store.BatchPreparer).PrepareBatch(b)
	if err != nil {
		return nil, err
	}
	return &countedStaged{StagedBatch: pb.(store.StagedBatch), s: s}, nil
}

type countedStaged struct {
	store.StagedBatch
	s *stagingStore
}

func (c *countedStaged) Persist(ctx context.Context) (func(), error) {
	apply, err := c.StagedBatch.Persist(ctx)
	if err != nil {
		return nil, err
	}
	n := c.s.staged.Add(1)
	return func() {
		if c.s.applied.Add(1) != n {
			c.s.misorders.Add(1)
		}
		apply()
	}, nil
}

// TestStagedCommits runs a burst of changes through an informer over bolt,
// whose group commits are staged (persisted while the group before is
// applied and notified): the handler sees every change of a key in order,
// and the store ends as the source, with its resume point.
func TestStagedCommits(t *testing.T) {
	s := &stagingStore{Store: openStore(t, "bolt://"+t.TempDir()+"/cache.db")}
	opts := testOptions()
	opts.MaxBatchSize = 20
	lw, _, h := runGrouped(t, s, opts)
	const keys, rounds = 50, 20
	for i := range keys {
		lw.create("ns", "cm"+strconv.Itoa(i), "0")
	}
	for r := 1; r <= rounds; r++ {
		for i := range keys {
			lw.update("ns", "cm"+strconv.Itoa(i), strconv.Itoa(r))
		}
	}
	got := h.wait(t, keys*(rounds+1))
	last := map[string]int{}
	for _, e := range got {
		v, err := strconv.Atoi(e.Value)
		if err != nil {
			t.Fatalf("event %+v: value %q", e, e.Value)
		}
		if prev, ok := last[e.Key]; ok && v <= prev {
			t.Errorf("%s: %s to %d after %d", e.Key, e.Op, v, prev)
		}
		last[e.Key] = v
	}
	pollUntil(t, "the store to hold the source's objects and resume point", func() string {
		if diff := cmp.Diff(lw.values(), storeValues(s)); diff != "" {
			return "store (-source +store):\n" + diff
		}
		if got, want := s.ResourceVersion(), lw.currentRV(); got != want {
			return "resume point " + got + ", want " + want
		}
		return ""
	})
	if s.staged.Load() == 0 {
		t.Error("no commit was staged: every group was committed in one step")
	}
	if n := s.misorders.Load(); n != 0 {
		t.Errorf("%d staged commits applied out of order", n)
	}
}
