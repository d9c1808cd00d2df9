package e2e_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store/snapshot"
	"github.com/informerdb/informerdb/test/apiserver"
)

// TestRestoredSnapshot checks issue 6's promise on a real API server: a
// bolt store saved to a snapshot file and restored into badger lets an
// informer resume without a full list, and the same file restored with
// DropResumePoint makes it relist.
func TestRestoredSnapshot(t *testing.T) {
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	n := objectCount(t) / 10
	sel := selection{namespace: "snapshot"}
	createNamespace(t, c, sel.namespace)
	createConfigMaps(t, c, sel.namespace, n)

	boltURL := persistentBackends[0].url(t.TempDir())
	cold := startInformer(t, srv, boltURL, sel)
	cold.waitSynced(t)
	cold.stop(t)

	file := filepath.Join(t.TempDir(), "cache.idb")
	if _, err := snapshot.SaveURL(t.Context(), file, boltURL, nil); err != nil {
		t.Fatalf("save %s: %v", boltURL, err)
	}
	changes := changeWhileDown(t, c, sel.namespace, n)

	t.Run("resume", func(t *testing.T) {
		url := persistentBackends[1].url(t.TempDir())
		if _, err := snapshot.Restore(t.Context(), file, url, nil); err != nil {
			t.Fatalf("restore into %s: %v", url, err)
		}
		before := srv.Metrics(t)
		warm := startInformer(t, srv, url, sel)
		got := warm.rec.waitN(t, n+len(changes))
		warm.waitSynced(t)
		cost := srv.Metrics(t).Sub(before)
		if diff := cmp.Diff(changes, blankDeleteRVs(got[n:])); diff != "" {
			t.Errorf("changes since the snapshot, as delivered after the replay (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(serverState(t, c, sel), storeState(t, warm.store)); diff != "" {
			t.Errorf("restored store after resume (-server +store):\n%s", diff)
		}
		if got := cost.Lists["configmaps"]; got != 1 {
			t.Errorf("start on the restored store made %d LIST requests, want 1 (the probe); metrics delta %+v", got, cost)
		}
		if got, limit := cost.WatchEvents["configmaps"], int64(len(changes)+20); got > limit {
			t.Errorf("start on the restored store received %d watch events, want at most %d: a relist?", got, limit)
		}
		warm.stop(t)
	})

	t.Run("drop-resume-point", func(t *testing.T) {
		url := persistentBackends[1].url(t.TempDir())
		if _, err := snapshot.Restore(t.Context(), file, url, &snapshot.RestoreOptions{DropResumePoint: true}); err != nil {
			t.Fatalf("restore into %s: %v", url, err)
		}
		before := srv.Metrics(t)
		warm := startInformer(t, srv, url, sel)
		warm.waitSynced(t)
		cost := srv.Metrics(t).Sub(before)
		if diff := cmp.Diff(serverState(t, c, sel), waitConverged(t, c, warm.store, sel)); diff != "" {
			t.Errorf("store after the relist (-server +store):\n%s", diff)
		}
		if cost.Lists["configmaps"] < 2 && cost.WatchEvents["configmaps"] < int64(n) {
			t.Errorf("start without a resume point did not relist: metrics delta %+v", cost)
		}
		warm.stop(t)
	})
}
