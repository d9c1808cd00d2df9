package memory_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/memory"
)

// TestOpenRemovesInterruptedSnapshotParts: a snapshot interrupted by a
// kill -9 (an out-of-memory kill while it copies the stores) leaves its
// temporary file; a controller crash-looping on a large cache would fill
// the disk with them. Whoever takes the file's lock next removes them, and
// nothing else.
func TestOpenRemovesInterruptedSnapshotParts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.snap")
	s, err := store.Open(t.Context(), "memory://"+path, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(pod("a", "1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stray := path + ".part-123456" // what snapfile.Write leaves
	other := filepath.Join(dir, "other.snap.part-123456")
	for _, p := range []string{stray, other} {
		if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err = store.Open(t.Context(), "memory://"+path, podOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("temporary file of an interrupted snapshot left after the next open (stat: %v)", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file's temporary file was touched: %v", err)
	}
	if _, ok, err := s.GetByKey("ns/a"); err != nil || !ok {
		t.Errorf("GetByKey(ns/a) after reopening = %v, %v; want the stored pod", ok, err)
	}
}
