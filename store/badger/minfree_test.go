package badger

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/diskusage"
)

// fakeFree makes freeSpace report free bytes for the rest of the test, and
// counts the checks.
type fakeFree struct {
	free   atomic.Int64
	checks atomic.Int64
	// after, when positive, is how many checks see free bytes before
	// every later one sees none.
	after atomic.Int64
}

func newFakeFree(t *testing.T, free int64) *fakeFree {
	f := &fakeFree{}
	f.free.Store(free)
	freeSpace = func(string) (int64, bool, error) {
		n := f.checks.Add(1)
		if a := f.after.Load(); a > 0 && n > a {
			return 0, true, nil
		}
		return f.free.Load(), true, nil
	}
	t.Cleanup(func() { freeSpace = diskusage.Free })
	return f
}

// TestMinFree checks the reserve a badger database keeps on its file
// system: a write that would leave less than min_free fails with an error
// wrapping ENOSPC that says what to do, and leaves the store as it was,
// whether it is one transaction (Commit), or many (Replace, AddIndexers,
// a Replace that runs out halfway); the same writes succeed once there is
// room, and min_free=0 checks nothing.
func TestMinFree(t *testing.T) {
	f := newFakeFree(t, 1<<40)
	dir := filepath.Join(t.TempDir(), "db")
	s, err := store.Open(t.Context(), "badger://"+dir+"?durability=nosync&min_free=64Mi", podOptions(t, "pods", 0))
	mustOK(t, "Open", err)
	defer s.Close()
	var pods []interface{}
	for i := range 50 {
		pods = append(pods, newPod(i, "1", "web"))
	}
	mustOK(t, "Replace", s.Replace(pods, "1"))
	before := contents(t, s)

	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "min_free=64.0Mi") || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s with too little free space: %v; want ENOSPC naming min_free and the directory", what, err)
		}
		if diff := cmp.Diff(before, contents(t, s)); diff != "" {
			t.Errorf("%s refused for space changed the store (-before +after):\n%s", what, diff)
		}
		if rv := s.Info().ResourceVersion; rv != "1" {
			t.Errorf("%s refused for space moved the resume point to %q", what, rv)
		}
		checkIndexes(t, s)
	}
	f.free.Store(64<<20 - 1)
	update := store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(1, "2", "db")}, {Type: store.OpDelete, Object: newPod(2, "", "")}}, ResourceVersion: "2"}
	refused("Commit", s.Commit(t.Context(), update))
	refused("Replace", s.Replace(pods[:10], "3"))
	refused("AddIndexers", s.AddIndexers(cache.Indexers{"rv": func(obj interface{}) ([]string, error) { return []string{"x"}, nil }}))

	// Room for the first checks of a Replace of 20,000 pods (about 60
	// MiB, so a check every 4 MiB), then none.
	f.free.Store(1 << 40)
	f.checks.Store(0)
	f.after.Store(3)
	var many []interface{}
	for i := range 20000 {
		many = append(many, newPod(i, "5", "api"))
	}
	refused("Replace that runs out of space halfway", s.Replace(many, "5"))
	if n := f.checks.Load(); n < 4 {
		t.Errorf("the Replace checked the free space %d times; want it to check as it writes", n)
	}

	f.after.Store(0)
	mustOK(t, "Commit with room again", s.Commit(t.Context(), update))
	if got := contents(t, s); got["ns-1/pod-000001"] != "2/db" || len(got) != 49 {
		t.Errorf("after the Commit: %d objects, pod 1 %q; want 49, 2/db", len(got), got["ns-1/pod-000001"])
	}
	mustOK(t, "Close", s.Close())

	// min_free=0: nothing is checked.
	f.free.Store(0)
	f.checks.Store(0)
	s0, err := store.Open(t.Context(), "badger://"+dir+"?durability=nosync&min_free=0", podOptions(t, "pods", 0))
	mustOK(t, "Open with min_free=0", err)
	defer s0.Close()
	mustOK(t, "Commit with min_free=0", s0.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: newPod(3, "6", "db")}}, ResourceVersion: "6"}))
	if n := f.checks.Load(); n != 0 {
		t.Errorf("min_free=0 checked the free space %d times", n)
	}
}

// TestMinFreeAtOpen checks that opening a badger database, which flushes
// the memtables it replays, needs min_free too: a store's open and a raw
// read fail with an error wrapping ENOSPC that says what to do, and
// min_free=0 in the URL opens anyway.
func TestMinFreeAtOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	s, err := store.Open(t.Context(), "badger://"+dir+"?durability=nosync", podOptions(t, "pods", 0))
	mustOK(t, "Open", err)
	mustOK(t, "Add", s.Add(newPod(1, "1", "web")))
	mustOK(t, "Close", s.Close())

	f := newFakeFree(t, DefaultMinFree-1)
	url := "badger://" + dir + "?durability=nosync"
	if s, err := store.Open(t.Context(), url, podOptions(t, "pods", 0)); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "min_free=128.0Mi") || !strings.Contains(err.Error(), dir) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open with too little free space: %v; want ENOSPC naming min_free and the directory", err)
	}
	if _, err := store.Stores(t.Context(), url); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Stores with too little free space: %v; want ENOSPC", err)
	}
	if f.checks.Load() == 0 {
		t.Error("no free-space check")
	}
	infos, err := store.Stores(t.Context(), url+"&min_free=0")
	if err != nil || len(infos) != 1 {
		t.Errorf("Stores with min_free=0: %v, %v; want the one store", infos, err)
	}
	f.free.Store(DefaultMinFree)
	s, err = store.Open(t.Context(), url, podOptions(t, "pods", 0))
	mustOK(t, "Open with min_free free", err)
	if got := len(s.List()); got != 1 {
		t.Errorf("reopened with room: %d objects, want 1", got)
	}
	mustOK(t, "Close", s.Close())
}

// TestMinFreeParam checks that min_free takes Kubernetes quantities and
// refuses anything else, in Open and in the raw driver.
func TestMinFreeParam(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	for _, bad := range []string{"-1", "lots", "1.5"} {
		url := fmt.Sprintf("badger://%s?min_free=%s", dir, bad)
		if _, err := store.Open(t.Context(), url, podOptions(t, "pods", 0)); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "min_free") {
			t.Errorf("Open(%s): %v; want ErrInvalid naming min_free", url, err)
		}
		if _, err := store.Stores(t.Context(), url); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "min_free") {
			t.Errorf("Stores(%s): %v; want ErrInvalid naming min_free", url, err)
		}
	}
	s, err := store.Open(t.Context(), "badger://"+dir+"?min_free=1Gi", podOptions(t, "pods", 0))
	mustOK(t, "Open with min_free=1Gi", err)
	mustOK(t, "Close", s.Close())
}
