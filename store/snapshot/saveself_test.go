package snapshot_test

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// TestSaveURLRefusesItsOwnDatabase checks that a save whose file is the
// database being saved (or a file inside a badger directory) is refused
// before anything is written: renaming the snapshot over the database would
// destroy it.
func TestSaveURLRefusesItsOwnDatabase(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		url  func(testing.TB) string
		// file returns the snapshot path to give, from the database path.
		file func(db string) string
	}{
		{"bolt same path", boltURL, func(db string) string { return db }},
		{"bolt unclean path", boltURL, func(db string) string { return filepath.Dir(db) + "/./" + filepath.Base(db) }},
		{"memory same path", memoryURL, func(db string) string { return db }},
		{"memdb same path", memdbURL, func(db string) string { return db }},
		{"badger directory file", badgerURL, func(db string) string { return filepath.Join(db, "MANIFEST") }},
		{"badger new file inside", badgerURL, func(db string) string { return filepath.Join(db, "snap.idb") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawURL := tc.url(t)
			fill(t, rawURL, 20, 0, "42")
			u, err := url.Parse(rawURL)
			if err != nil {
				t.Fatal(err)
			}
			before, err := snapshot.Status(ctx, rawURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			file := tc.file(u.Path)
			_, err = snapshot.SaveURL(ctx, file, rawURL, nil)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("SaveURL(%s, %s) = %v, want an error wrapping store.ErrInvalid", file, rawURL, err)
			}
			if !strings.Contains(err.Error(), "save") {
				t.Errorf("error %q does not name the operation", err)
			}
			if left, _ := filepath.Glob(file + ".part*"); len(left) > 0 {
				t.Errorf("temporary files left behind: %q", left)
			}
			after, err := snapshot.Status(ctx, rawURL, nil)
			if err != nil {
				t.Fatalf("the database cannot be read after the refused save: %v", err)
			}
			if len(after.Stores) != 1 || after.Stores[0].ContentHash != before.Stores[0].ContentHash || after.Stores[0].Info.ResourceVersion != "42" {
				t.Errorf("the database changed: before %+v, after %+v", before.Stores, after.Stores)
			}
		})
	}
}
