//go:build unix

package diskusage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOf: a file grown by truncate occupies nothing; written bytes do.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 64<<20); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(dir, "written")
	if err := os.WriteFile(written, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		min, max int64
	}{
		{sparse, 0, 1 << 20},
		{written, 1 << 20, 2 << 20},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Of(fi); got < tc.min || got > tc.max {
			t.Errorf("Of(%s) = %d (size %d), want between %d and %d", filepath.Base(tc.path), got, fi.Size(), tc.min, tc.max)
		}
	}
}
