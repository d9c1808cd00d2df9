package crashtest

import (
	"path/filepath"

	_ "github.com/informerdb/informerdb/store/memory"
)

// The memory backend in file mode loses what was committed after its last
// snapshot; snapshots every few milliseconds make kills land both between
// and during snapshot writes.
func init() {
	backends = append(backends, backend{
		name: "memory-file",
		url: func(dir string) string {
			return "memory://" + filepath.Join(dir, "cache.snap") + "?snapshot_interval=3ms"
		},
		durable: false,
	})
}
