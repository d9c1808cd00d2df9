//go:build unix

package memdb_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile/snapfiletest"
	"github.com/informerdb/informerdb/store/memdb"
)

// TestUnsafePathsRefused: see snapfiletest.CheckUnsafePaths.
func TestUnsafePathsRefused(t *testing.T) {
	snapfiletest.CheckUnsafePaths(t, memdb.Scheme)
}
