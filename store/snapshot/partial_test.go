package snapshot_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// TestRestorePartialFailureSaysWhatChanged checks that a restore of several
// stores that fails after replacing some says which ones it replaced:
// atomicity is per store, and an error naming only the failed store let the
// user believe the database was untouched.
func TestRestorePartialFailureSaysWhatChanged(t *testing.T) {
	ctx := context.Background()
	rec := func(key string) []store.Record { return []store.Record{{Key: key, Data: []byte(`{}`)}} }
	src := func(name string, recs []store.Record) snapshot.Source {
		return snapshot.Source{Name: name, Export: func(_ context.Context, fn func(store.Record) error) (store.Info, error) {
			for _, r := range recs {
				if err := fn(r); err != nil {
					return store.Info{}, err
				}
			}
			return store.Info{Backend: "test", Name: name, Codec: "json", Type: "t", KeyFunc: "namespace/name", ResourceVersion: "7"}, nil
		}}
	}
	file := filepath.Join(t.TempDir(), "s.idb")
	// bolt refuses the empty key of the second store.
	if _, err := snapshot.Save(ctx, file, []snapshot.Source{src("first", rec("ns/x")), src("second", rec(""))}, nil); err != nil {
		t.Fatal(err)
	}
	dst := boltURL(t)
	_, err := snapshot.Restore(ctx, file, dst, nil)
	if err == nil {
		t.Fatal("Restore succeeded; the test needs the second store to fail")
	}
	m, serr := snapshot.Status(ctx, dst, nil)
	if serr != nil {
		t.Fatal(serr)
	}
	if m.Store("first") == nil {
		t.Fatalf("the first store was not restored (%+v); the test expects per-store atomicity", m.Stores)
	}
	if !strings.Contains(err.Error(), `"first"`) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("error %q does not say that store \"first\" was already restored, nor how to finish", err)
	}
}
