package crashtest

import (
	"path/filepath"

	_ "github.com/informerdb/informerdb/store/bolt"
)

// bolt commits with fsync by default: every acknowledged batch survives.
func init() {
	backends = append(backends,
		backend{
			name:    "bolt",
			url:     func(dir string) string { return "bolt://" + filepath.Join(dir, "cache.db") },
			durable: true,
		},
		backend{
			name:    "bolt-bounded",
			url:     func(dir string) string { return "bolt://" + filepath.Join(dir, "cache.db") + "?cache=4" },
			durable: true,
		},
	)
}
