package badger

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

// TestForeignDirectoryRefused checks that a directory holding files but no
// badger database is refused with ErrInvalid, and left exactly as it was,
// by every way in: Open, and the raw driver's Import (snapshot restore) and
// reads. badger.Open used to write a database among the user's files.
func TestForeignDirectoryRefused(t *testing.T) {
	ops := []struct {
		name string
		run  func(t *testing.T, u string) error
	}{
		{"Open", func(t *testing.T, u string) error {
			s, err := store.Open(t.Context(), u, podOptions(t, "pods", 0))
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"Open bounded", func(t *testing.T, u string) error {
			s, err := store.Open(t.Context(), u, podOptions(t, "pods", 10))
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"Import", func(t *testing.T, u string) error {
			return store.Import(t.Context(), u, store.Info{Name: "pods", Codec: "json"}, func() (store.Record, error) {
				return store.Record{}, io.EOF
			})
		}},
		{"Stores", func(t *testing.T, u string) error {
			_, err := store.Stores(t.Context(), u)
			return err
		}},
		{"Export", func(t *testing.T, u string) error {
			_, err := store.Export(t.Context(), u, "pods", func(store.Record) error { return nil })
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mine")
			mustOK(t, "Mkdir", os.MkdirAll(filepath.Join(dir, "photos"), 0o755))
			mustOK(t, "WriteFile", os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644))
			// A badger-like name among them does not make it a database.
			mustOK(t, "WriteFile", os.WriteFile(filepath.Join(dir, "000001.vlog"), []byte("not badger's"), 0o644))
			before := storetest.DirListing(t, dir)
			err := op.run(t, dirURL(dir, ""))
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s of a directory of other files = %v; want ErrInvalid", op.name, err)
			}
			for _, s := range []string{dir, "directory is not empty and holds no badger database", "notes.txt"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if diff := cmp.Diff(before, storetest.DirListing(t, dir)); diff != "" {
				t.Errorf("%s changed the directory (-before +after):\n%s", op.name, diff)
			}
			_, _, open := registry.Lookup(dir)
			if open {
				t.Errorf("a refused %s left the database registered", op.name)
			}
		})
	}
}

// TestDirectoriesBadgerMayUse checks the directories that are not refused
// as foreign: missing, empty, a volume root with only lost+found, what a
// crash during badger's first open leaves, and an existing database (even
// with a file of the user's added to it).
func TestDirectoriesBadgerMayUse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"missing", func(*testing.T, string) {}},
		{"empty", func(t *testing.T, dir string) { mustOK(t, "Mkdir", os.Mkdir(dir, 0o700)) }},
		{"volume root", func(t *testing.T, dir string) {
			mustOK(t, "Mkdir", os.MkdirAll(filepath.Join(dir, "lost+found"), 0o700))
		}},
		{"first open killed", func(t *testing.T, dir string) {
			mustOK(t, "Mkdir", os.Mkdir(dir, 0o700))
			mustOK(t, "WriteFile", os.WriteFile(filepath.Join(dir, "LOCK"), []byte("12345\n"), 0o600))
		}},
		{"database", func(t *testing.T, dir string) {
			s, err := store.Open(t.Context(), dirURL(dir, ""), podOptions(t, "pods", 0))
			mustOK(t, "Open", err)
			mustOK(t, "Add", s.Add(newPod(1, "1", "x")))
			mustOK(t, "Close", s.Close())
		}},
		{"database with a file added", func(t *testing.T, dir string) {
			s, err := store.Open(t.Context(), dirURL(dir, ""), podOptions(t, "pods", 0))
			mustOK(t, "Open", err)
			mustOK(t, "Close", s.Close())
			mustOK(t, "WriteFile", os.WriteFile(filepath.Join(dir, "README"), []byte("cache"), 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			tc.setup(t, dir)
			err := store.Import(t.Context(), dirURL(dir, ""), store.Info{Name: "other", Codec: "json"}, func() (store.Record, error) {
				return store.Record{}, io.EOF
			})
			mustOK(t, "Import", err)
			s, err := store.Open(t.Context(), dirURL(dir, ""), podOptions(t, "pods", 0))
			mustOK(t, "Open", err)
			mustOK(t, "Close", s.Close())
		})
	}
}
