package snapfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// filePath checks the snapshot file path of a scheme:///path URL and
// returns it cleaned. The path must be absolute, must not end in a slash
// (cleaning it would make memory:///var/cache/ a file where the user may
// have meant a directory), and must pass driver.CheckPath, as bolt and
// badger paths do. The error wraps store.ErrInvalid (or store.ErrUnsafe);
// callers name the operation and the URL.
func filePath(scheme, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("the snapshot file path must be absolute (%s:///abs/path/file.snap, three slashes): %w", scheme, store.ErrInvalid)
	}
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(os.PathSeparator)) {
		return "", fmt.Errorf("the path ends in a slash, which names a directory; want a file (%s:///abs/path/file.snap): %w", scheme, store.ErrInvalid)
	}
	clean := filepath.Clean(path)
	if err := driver.CheckPath(clean, false); err != nil {
		return "", err
	}
	return clean, nil
}
