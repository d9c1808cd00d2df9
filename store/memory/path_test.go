package memory_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile/snapfiletest"
	"github.com/informerdb/informerdb/store/memory"
)

// TestTrailingSlashRefused: see snapfiletest.CheckTrailingSlash.
func TestTrailingSlashRefused(t *testing.T) {
	snapfiletest.CheckTrailingSlash(t, memory.Scheme)
}
