package memdb_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/storetest"
)

// TestConformance runs the store contract every backend satisfies. memdb
// databases live in memory only, so the restart rules do not apply.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		URL:        func(testing.TB) string { return "memdb://" },
		Persistent: false,
	})
}
