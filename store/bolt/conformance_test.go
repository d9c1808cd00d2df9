package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/informerdb/informerdb/store/storetest"
)

// TestConformance runs the store contract against both modes of the bolt
// backend, restart rules included.
func TestConformance(t *testing.T) {
	for _, mode := range []struct{ name, query string }{
		{"default", ""},
		{"bounded", "?cache=2"},
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
