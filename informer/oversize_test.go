package informer

import (
	"slices"
	"strings"
	"testing"
)

// TestOversizeObjectIsSkipped: a ConfigMap larger than badger stores in one
// value (a value-log file, 64 MiB), in the relist and then in the watch, is
// left out like any object the store rejects: the informer syncs, commits
// the other objects and reports no failing commit. Before, badger's error
// was not ErrInvalid: the informer retried the commit for ever, and the
// relist's write batch took it for a failed write that stopped every write
// of the database until a restart, which relisted into the same failure.
func TestOversizeObjectIsSkipped(t *testing.T) {
	huge := strings.Repeat("x", 64<<20+1)
	lw := newFakeLW()
	lw.create("ns", "a", "1")
	lw.create("ns", "huge", huge)
	lw.create("ns", "b", "1")
	s := openStore(t, "badger://"+t.TempDir())
	inf := newInformer(t, lw, s, testOptions())
	r := newRecorder()
	if _, err := inf.AddEventHandler(r); err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	if keys := s.ListKeys(); len(keys) != 2 || !slices.Contains(keys, "ns/a") || !slices.Contains(keys, "ns/b") {
		t.Errorf("keys after the relist: %v; want ns/a and ns/b", keys)
	}

	lw.create("ns", "huge2", huge)
	lw.create("ns", "c", "1")
	// The handler hears of ns/c after its commit was accounted for, Stats
	// included; the store has it a moment before that.
	var keys []string
	for _, e := range r.wait(t, 3) {
		keys = append(keys, e.Op+" "+e.Key)
	}
	if want := []string{"add ns/a", "add ns/b", "add ns/c"}; !slices.Equal(keys, want) {
		t.Errorf("handler events %v, want %v", keys, want)
	}
	if _, ok, _ := s.GetByKey("ns/c"); !ok {
		t.Errorf("ns/c, created after the oversize ns/huge2, is not in the store")
	}
	if _, ok, _ := s.GetByKey("ns/huge2"); ok {
		t.Errorf("ns/huge2 is in the store")
	}
	if got := inf.Stats().Rejected; got != 2 {
		t.Errorf("Stats().Rejected = %d, want 2", got)
	}
	if err := inf.CheckCommits(0); err != nil {
		t.Errorf("CheckCommits(0) = %v; want nil", err)
	}
}
