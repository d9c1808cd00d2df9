package crashtest

import (
	"path/filepath"

	_ "github.com/informerdb/informerdb/store/memdb"
)

// memdb in file mode, like memory, keeps what its last snapshot holds.
func init() {
	backends = append(backends, backend{
		name: "memdb-file",
		url: func(dir string) string {
			return "memdb://" + filepath.Join(dir, "cache.snap") + "?snapshot_interval=3ms"
		},
		durable: false,
	})
}
