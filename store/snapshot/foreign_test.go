package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
	"github.com/informerdb/informerdb/store/storetest"
)

// TestRestoreRefusesForeignBadgerDirectory checks that a restore into a
// badger URL naming a directory of someone else's files (no badger
// database in it) is refused, with or without Force, and leaves the
// directory exactly as it was: it used to write a badger database among
// the files.
func TestRestoreRefusesForeignBadgerDirectory(t *testing.T) {
	ctx := context.Background()
	src := boltURL(t)
	fill(t, src, 20, 0, "50")
	file := snapPath(t)
	if _, err := snapshot.SaveURL(ctx, file, src, nil); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "force"}[force], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "home")
			if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := storetest.DirListing(t, dir)
			_, err := snapshot.Restore(ctx, file, "badger://"+dir, &snapshot.RestoreOptions{Force: force})
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Restore into a directory of other files = %v; want ErrInvalid", err)
			}
			for _, s := range []string{dir, "directory is not empty and holds no badger database"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if diff := cmp.Diff(before, storetest.DirListing(t, dir)); diff != "" {
				t.Errorf("the refused restore changed the directory (-before +after):\n%s", diff)
			}
		})
	}
}
