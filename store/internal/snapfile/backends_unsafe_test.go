//go:build unix

package snapfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestUnsafePathsRefused checks that a snapshot file path goes through
// driver.CheckPath, as bolt and badger paths do: a symbolic link to the
// file, or a file in a directory other users may write, is refused with
// store.ErrUnsafe by Open and the raw driver (snapshot status, save), and
// left as it was.
func TestUnsafePathsRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(b.scheme, func(t *testing.T) { checkUnsafePaths(t, b.scheme) })
	}
}

func checkUnsafePaths(t *testing.T, scheme string) {
	codec, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	opts := &store.Options{Name: "pods", Codec: codec}
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cache.snap")
	s, err := store.Open(t.Context(), scheme+"://"+path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what, p, says string) {
		t.Helper()
		if s, err := store.Open(t.Context(), scheme+"://"+p, opts); !errors.Is(err, store.ErrUnsafe) || !strings.Contains(err.Error(), says) {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open %s: %v; want store.ErrUnsafe saying %q", what, err, says)
		}
		if _, err := store.Stores(t.Context(), scheme+"://"+p); !errors.Is(err, store.ErrUnsafe) {
			t.Errorf("store.Stores %s: %v; want store.ErrUnsafe", what, err)
		}
	}

	link := filepath.Join(t.TempDir(), "link.snap")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	refused("through a symbolic link", link, "symbolic link")

	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	refused("in a directory others may write", path, "other users")
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}

	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) {
		t.Errorf("a refused open changed the file (%v)", err)
	}
	s, err = store.Open(t.Context(), scheme+"://"+path, opts)
	if err != nil {
		t.Fatalf("open after the refusals: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
