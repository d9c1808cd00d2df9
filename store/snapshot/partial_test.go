package snapshot_test

import (
	"context"
	"errors"
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
	// bolt refuses the second store's name, longer than its 1,024 bytes,
	// in its Import, after the first store is restored. (A bad record
	// would not do: Restore refuses the keys no backend takes before it
	// writes anything; see TestRestoreRefusesEmptyKeyFirst.)
	second := "second-" + strings.Repeat("x", 2000)
	if _, err := snapshot.Save(ctx, file, []snapshot.Source{src("first", rec("ns/x")), src(second, rec("ns/y"))}, nil); err != nil {
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

// TestRestoreRefusesEmptyKeyFirst checks that a snapshot holding the empty
// key, which no backend stores (driver.CheckKey), is refused before anything
// is written, whichever the backend: bolt used to fail only at that store,
// after restoring the stores before it, and badger, memory and memdb
// restored the key, making stores that could not move to bolt.
func TestRestoreRefusesEmptyKeyFirst(t *testing.T) {
	ctx := context.Background()
	src := func(name string, keys ...string) snapshot.Source {
		return snapshot.Source{Name: name, Export: func(_ context.Context, fn func(store.Record) error) (store.Info, error) {
			for _, k := range keys {
				if err := fn(store.Record{Key: k, Data: []byte(`{}`)}); err != nil {
					return store.Info{}, err
				}
			}
			return store.Info{Backend: "test", Name: name, Codec: "json", Type: "t", KeyFunc: "namespace/name", ResourceVersion: "7"}, nil
		}}
	}
	file := filepath.Join(t.TempDir(), "s.idb")
	if _, err := snapshot.Save(ctx, file, []snapshot.Source{src("first", "ns/x"), src("second", "ns/y", "")}, nil); err != nil {
		t.Fatal(err)
	}
	// Verify says so before a restore is tried.
	if _, err := snapshot.Verify(ctx, file, nil); !errors.Is(err, store.ErrIncompatible) || !strings.Contains(err.Error(), `store "second": record 2`) || !strings.Contains(err.Error(), "empty key") {
		t.Errorf("Verify of a snapshot with an empty key = %v; want ErrIncompatible naming store second, record 2 and the empty key", err)
	}
	for _, tc := range []struct {
		name string
		url  func(testing.TB) string
	}{{"bolt", boltURL}, {"badger", badgerURL}, {"memory", memoryURL}, {"memdb", memdbURL}} {
		t.Run(tc.name, func(t *testing.T) {
			dst := tc.url(t)
			_, err := snapshot.Restore(ctx, file, dst, nil)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Restore of a snapshot with an empty key = %v; want an error wrapping ErrInvalid", err)
			}
			for _, s := range []string{"empty key", `"second"`, "record 2"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			// Nothing written: not even the database.
			if _, err := snapshot.Status(ctx, dst, nil); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Status of the target after the refused restore = %v; want ErrNotFound (no database)", err)
			}
			// Restoring only the other store is fine.
			if _, err := snapshot.Restore(ctx, file, dst, &snapshot.RestoreOptions{Stores: []string{"first"}}); err != nil {
				t.Errorf("Restore of the store without the empty key: %v", err)
			}
		})
	}
}
