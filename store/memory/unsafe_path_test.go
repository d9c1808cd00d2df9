//go:build unix

package memory_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile/snapfiletest"
	"github.com/informerdb/informerdb/store/memory"
)

// TestUnsafePathsRefused: see snapfiletest.CheckUnsafePaths.
func TestUnsafePathsRefused(t *testing.T) {
	snapfiletest.CheckUnsafePaths(t, memory.Scheme)
}
