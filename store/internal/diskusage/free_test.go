//go:build linux || darwin

package diskusage

import (
	"path/filepath"
	"syscall"
	"testing"
)

// TestFree: the free space of a directory's file system is known, no more
// than the file system's size, and a missing path is an error. What it
// means for a write is checked where it is used, on a file system of a
// known size (store/crashtest TestFullFileSystem).
func TestFree(t *testing.T) {
	dir := t.TempDir()
	free, ok, err := Free(dir)
	if err != nil || !ok || free <= 0 {
		t.Fatalf("Free(%s) = %d, %v, %v; want the free space", dir, free, ok, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if size := int64(st.Blocks) * int64(st.Bsize); free > size { //nolint:unconvert // the fields' types differ between platforms
		t.Errorf("Free(%s) = %d, above the file system's size %d", dir, free, size)
	}
	if _, _, err := Free(filepath.Join(dir, "missing")); err == nil {
		t.Error("Free of a missing path: no error")
	}
}
