//go:build unix

package bolt_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/informerdb/informerdb/store"
)

// TestOpenRefusesUnsafePaths checks that Open calls driver.CheckPath: a
// database file other users can write, or one opened through a symbolic
// link to it, is refused with store.ErrUnsafe and left as it was.
func TestOpenRefusesUnsafePaths(t *testing.T) {
	url := dbURL(t, "")
	path := pathOf(t, url)
	s := mustOpen(t, url, podOptions("a"))
	if err := s.Replace([]interface{}{newPod("ns", "x", "1", nil)}, "5"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)

	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(t.Context(), url, podOptions("a"))
	wantErr(t, "Open of a world-writable file", err, store.ErrUnsafe, path, "lets other users write it")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("refused file changed: %v %v", fi.Mode(), err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(t.Context(), "bolt://"+link, podOptions("a"))
	wantErr(t, "Open through a symbolic link to the file", err, store.ErrUnsafe, "symbolic link")

	s = mustOpen(t, url, podOptions("a"))
	if got := s.ResourceVersion(); got != "5" {
		t.Errorf("reopened after the refusals: resume point %q, want 5", got)
	}
}
