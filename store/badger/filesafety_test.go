//go:build unix

package badger_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// TestOpenRefusesUnsafePaths checks that Open calls driver.CheckPath: a
// database directory other users can write, or a symbolic link to one, is
// refused with store.ErrUnsafe and left as it was.
func TestOpenRefusesUnsafePaths(t *testing.T) {
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	opts := &store.Options{Name: "v1/configmaps", Codec: codec, Durability: store.DurabilityNoSync}
	dir := filepath.Join(t.TempDir(), "cache")
	s, err := store.Open(t.Context(), "badger://"+dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(t.Context(), "badger://"+dir, opts)
	if !errors.Is(err, store.ErrUnsafe) || !strings.Contains(err.Error(), "lets other users write it") {
		t.Errorf("Open of a world-writable directory: %v, want ErrUnsafe", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("refused directory changed: %v %v", fi.Mode(), err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(t.Context(), "badger://"+link, opts); !errors.Is(err, store.ErrUnsafe) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Open through a symbolic link: %v, want ErrUnsafe", err)
	}

	s, err = store.Open(t.Context(), "badger://"+dir, opts)
	if err != nil {
		t.Fatalf("reopen after the refusals: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
