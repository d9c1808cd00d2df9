package snapfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/informerdb/informerdb/store/internal/diskusage"
)

// Size returns the bytes the snapshot file at path takes on disk: 0 before
// its first snapshot (store.DiskSizer of the backends with snapshot files).
func Size(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("snapfile: size of %s: %w", path, err)
	}
	return diskusage.Of(fi), nil
}
