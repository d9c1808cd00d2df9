//go:build unix

package driver_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/driver"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

// TestPersistentFileModes opens each persistent backend (and the in-memory
// ones with a snapshot file) in a fresh
// directory, under a permissive umask, writes a Secret and closes it: the
// database directory must be 0700, every file in it 0600, and CheckPath must
// accept what the backend made.
func TestPersistentFileModes(t *testing.T) {
	tests := []struct {
		name string
		// url gives the database URL and the path that holds it (the file
		// or directory the backend creates).
		url func(root string) (string, string)
		dir bool
	}{
		{name: "bolt", url: func(root string) (string, string) {
			p := filepath.Join(root, "new", "cache.db")
			return "bolt://" + p, p
		}},
		{name: "badger", dir: true, url: func(root string) (string, string) {
			p := filepath.Join(root, "cache")
			return "badger://" + p, p
		}},
		{name: "memory snapshot file", url: func(root string) (string, string) {
			p := filepath.Join(root, "new", "cache.snap")
			return "memory://" + p, p
		}},
		{name: "memdb snapshot file", url: func(root string) (string, string) {
			p := filepath.Join(root, "new", "cache.snap")
			return "memdb://" + p, p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, p := tt.url(t.TempDir())
			// A umask of 0 shows what the backends ask for, not what the
			// umask happens to remove.
			defer umask(umask(0))
			if err := driver.CheckPath(p, tt.dir); err != nil {
				t.Fatalf("CheckPath before open: %v", err)
			}
			codec, err := indexer.NewCodec(&corev1.Secret{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := store.Open(t.Context(), u, &store.Options{Codec: codec})
			if err != nil {
				t.Fatalf("open %s: %v", u, err)
			}
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", ResourceVersion: "1"}, Data: map[string][]byte{"k": []byte("v")}}
			if err := s.Commit(t.Context(), store.Batch{Ops: []store.Op{{Type: store.OpPut, Object: sec}}, ResourceVersion: "1"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Everything the backend created: the bolt file's directory, the
			// badger directory.
			owned := p
			if !tt.dir {
				owned = filepath.Dir(p)
			}
			dirs, files := 0, 0
			err = filepath.WalkDir(owned, func(q string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := os.Lstat(q)
				if err != nil {
					return err
				}
				if fi.IsDir() {
					dirs++
					if got := fi.Mode().Perm(); got != 0o700 {
						t.Errorf("directory %s: mode %v, want 0700", q, got)
					}
					return nil
				}
				files++
				if got := fi.Mode(); got != 0o600 {
					t.Errorf("file %s: mode %v, want -rw------- (0600)", q, got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if dirs == 0 || files == 0 {
				t.Errorf("found %d directories and %d files, want the database's", dirs, files)
			}
			if err := driver.CheckPath(p, tt.dir); err != nil {
				t.Errorf("CheckPath after the backend made the database: %v", err)
			}
			// Loosened by hand, the same database is refused.
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := driver.CheckPath(p, tt.dir); !errors.Is(err, store.ErrUnsafe) {
				t.Errorf("CheckPath of %s made 0777: %v, want ErrUnsafe", p, err)
			}
		})
	}
}
