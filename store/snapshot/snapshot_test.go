package snapshot_test

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// roundTripCount is the number of Pods of the round trip; the env var
// SNAPSHOT_ROUND_TRIP_N raises it (100,000 for the report).
func roundTripCount(t *testing.T) int {
	if s := os.Getenv("SNAPSHOT_ROUND_TRIP_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("SNAPSHOT_ROUND_TRIP_N=%q: %v", s, err)
		}
		return n
	}
	return 2000
}

// The content hash survives bolt -> file -> badger -> file -> memory file
// -> file -> memdb file -> file -> bolt, and the last bolt store serves the
// objects through its indexes.
func TestRoundTripAcrossBackends(t *testing.T) {
	ctx := t.Context()
	n := roundTripCount(t)
	src := boltURL(t)
	fill(t, src, n, 512, "4242")

	start, err := snapshot.Status(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := start.Store(podsName)
	if want == nil || want.Objects != int64(n) || want.Info.ResourceVersion != "4242" {
		t.Fatalf("status of the source: %+v", start.Stores)
	}

	from := src
	for _, to := range []string{badgerURL(t), memoryURL(t), memdbURL(t), boltURL(t)} {
		file := snapPath(t)
		m, err := snapshot.SaveURL(ctx, file, from, nil)
		if err != nil {
			t.Fatalf("save %s: %v", from, err)
		}
		if got := m.Store(podsName); got == nil || got.ContentHash != want.ContentHash || got.Objects != want.Objects {
			t.Fatalf("save %s: manifest %+v, want hash %s and %d objects", from, m.Stores, want.ContentHash, want.Objects)
		}
		if _, err := snapshot.Restore(ctx, file, to, nil); err != nil {
			t.Fatalf("restore into %s: %v", to, err)
		}
		got, err := snapshot.Status(ctx, to, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := got.Store(podsName)
		if st == nil {
			t.Fatalf("%s: no store %s after restore: %+v", to, podsName, got.Stores)
		}
		if st.ContentHash != want.ContentHash || st.Objects != want.Objects || st.Info.ResourceVersion != "4242" {
			t.Errorf("%s: hash %s objects %d rv %q, want %s %d %q", to, st.ContentHash, st.Objects, st.Info.ResourceVersion, want.ContentHash, want.Objects, "4242")
		}
		if st.Info.Codec != want.Info.Codec || st.Info.Type != want.Info.Type || st.Info.Scope != want.Info.Scope || st.Info.KeyFunc != want.Info.KeyFunc {
			t.Errorf("%s: identity %+v, want that of %+v", to, st.Info, want.Info)
		}
		if _, err := snapshot.Verify(ctx, to, &snapshot.VerifyOptions{Entries: entries}); err != nil {
			t.Errorf("verify %s: %v", to, err)
		}
		from = to
	}

	// The last target opens with the informer's options and resumes.
	s, err := store.Open(ctx, from, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rv := s.ResourceVersion(); rv != "4242" {
		t.Errorf("resume point %q, want 4242", rv)
	}
	keys, err := s.IndexKeys("node", "node-3")
	if err != nil {
		t.Fatal(err)
	}
	var wantKeys []string
	for i := range n {
		if p := pod(i, 0); p.Spec.NodeName == "node-3" {
			wantKeys = append(wantKeys, p.Namespace+"/"+p.Name)
		}
	}
	if diff := cmp.Diff(wantKeys, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("IndexKeys(node, node-3) (-want +got):\n%s", diff)
	}
	obj, ok, err := s.GetByKey("ns-3/pod-00010")
	if err != nil || !ok {
		t.Fatalf("GetByKey: %v %v", ok, err)
	}
	if diff := cmp.Diff(pod(10, 512), obj.(*corev1.Pod)); diff != "" {
		t.Errorf("object after the round trip (-want +got):\n%s", diff)
	}
	byNS, err := s.ByIndex(cache.NamespaceIndex, "ns-3")
	if err != nil {
		t.Fatal(err)
	}
	if want := (n + 3) / 7; len(byNS) != want && len(byNS) != want+1 {
		t.Errorf("ByIndex(namespace, ns-3) has %d objects, want about n/7 = %d", len(byNS), want)
	}
}

func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	ctx := t.Context()
	src, dst := boltURL(t), badgerURL(t)
	fill(t, src, 20, 0, "10")
	fill(t, dst, 5, 0, "7")
	file := snapPath(t)
	if _, err := snapshot.SaveURL(ctx, file, src, nil); err != nil {
		t.Fatal(err)
	}
	before, err := snapshot.Status(ctx, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.Restore(ctx, file, dst, nil)
	if !errors.Is(err, snapshot.ErrNotEmpty) {
		t.Fatalf("restore into a non-empty store: %v, want ErrNotEmpty", err)
	}
	after, err := snapshot.Status(ctx, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Stores, after.Stores); diff != "" {
		t.Errorf("a refused restore changed the target (-before +after):\n%s", diff)
	}
	m, err := snapshot.Restore(ctx, file, dst, &snapshot.RestoreOptions{Force: true, DropResumePoint: true})
	if err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	got, err := snapshot.Status(ctx, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := got.Store(podsName)
	if st == nil || st.Objects != 20 || st.Info.ResourceVersion != "" || st.ContentHash != m.Store(podsName).ContentHash {
		t.Errorf("after a forced restore without resume point: %+v", got.Stores)
	}
}

func TestRestoreProgress(t *testing.T) {
	ctx := t.Context()
	src := boltURL(t)
	fill(t, src, 9000, 0, "1")
	file := snapPath(t)
	var saves []snapshot.Progress
	if _, err := snapshot.SaveURL(ctx, file, src, &snapshot.SaveOptions{Progress: func(p snapshot.Progress) { saves = append(saves, p) }}); err != nil {
		t.Fatal(err)
	}
	var got []snapshot.Progress
	_, err := snapshot.Restore(ctx, file, memoryURL(t), &snapshot.RestoreOptions{Progress: func(p snapshot.Progress) { got = append(got, p) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Progress{
		{Op: "verify", Store: podsName, Done: 4096},
		{Op: "verify", Store: podsName, Done: 8192},
		{Op: "restore", Store: podsName, Done: 4096, Total: 9000},
		{Op: "restore", Store: podsName, Done: 8192, Total: 9000},
		{Op: "restore", Done: 9000, Total: 9000},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restore progress (-want +got):\n%s", diff)
	}
	wantSaves := []snapshot.Progress{
		{Op: "save", Store: podsName, Done: 4096},
		{Op: "save", Store: podsName, Done: 8192},
		{Op: "save", Done: 9000, Total: 9000},
	}
	if diff := cmp.Diff(wantSaves, saves); diff != "" {
		t.Errorf("save progress (-want +got):\n%s", diff)
	}
}
