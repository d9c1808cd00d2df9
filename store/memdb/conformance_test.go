package memdb_test

import (
	"path/filepath"
	"testing"

	"github.com/informerdb/informerdb/store/storetest"
)

// TestConformance runs the store contract every backend satisfies, in both
// modes: in memory only, and with a snapshot file, where the restart rules
// apply.
func TestConformance(t *testing.T) {
	t.Run("mode=memory", func(t *testing.T) {
		storetest.Run(t, storetest.Backend{
			URL:        func(testing.TB) string { return "memdb://" },
			Persistent: false,
		})
	})
	t.Run("mode=file", func(t *testing.T) {
		storetest.Run(t, storetest.Backend{
			URL:        func(t testing.TB) string { return "memdb://" + filepath.Join(t.TempDir(), "db.snap") },
			Persistent: true,
		})
	})
}
