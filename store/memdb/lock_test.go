//go:build unix

package memdb_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile/snapfiletest"
	"github.com/informerdb/informerdb/store/memdb"
)

// TestFileLockedByAnotherProcess: see snapfiletest.CheckFileLocking.
func TestFileLockedByAnotherProcess(t *testing.T) {
	snapfiletest.CheckFileLocking(t, memdb.Scheme, memdb.FormatVersion)
}
