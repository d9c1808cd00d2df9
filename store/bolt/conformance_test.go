package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/informerdb/informerdb/store/storetest"
)

// TestConformance runs the store contract against both modes of the bolt
// backend, restart rules included. The default mode runs durable, as users
// run it; the bounded mode runs without fsync to keep the package's test
// time down (its write path is the same code, its read path is what this
// run checks).
func TestConformance(t *testing.T) {
	for _, mode := range []struct{ name, query string }{
		{"default", ""},
		{"bounded", "?cache=2&durability=nosync"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			storetest.Run(t, storetest.Backend{
				URL: func(t testing.TB) string {
					return "bolt://" + filepath.Join(t.TempDir(), "db", "cache.db") + mode.query
				},
				Persistent: true,
			})
		})
	}
}
