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

// TestLockWaitBlocksNoOtherFile: see snapfiletest.CheckLockWaitBlocksNoOtherFile.
func TestLockWaitBlocksNoOtherFile(t *testing.T) {
	snapfiletest.CheckLockWaitBlocksNoOtherFile(t, memdb.Scheme)
}
