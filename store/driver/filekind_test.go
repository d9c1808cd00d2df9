//go:build unix

package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
)

// TestCheckPathNamesWhatIsThere checks that refusing a path of the wrong
// kind says what the path is. The mode's type bits printed "(----------)"
// for a regular file, which tells the user nothing.
func TestCheckPathNamesWhatIsThere(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "db.file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "db.dir")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		dir  bool
		want string
	}{
		{file, true, "is a regular file"},
		{dir, false, "is a directory"},
		{os.DevNull, false, "is a device"},
	} {
		err := CheckPath(tc.path, tc.dir)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckPath(%s, %v) = %v, want store.ErrInvalid", tc.path, tc.dir, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "----") {
			t.Errorf("CheckPath(%s, %v) = %q, want it to say %q", tc.path, tc.dir, err, tc.want)
		}
	}
}
