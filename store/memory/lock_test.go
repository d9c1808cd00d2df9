//go:build unix

package memory_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile/snapfiletest"
	"github.com/informerdb/informerdb/store/memory"
)

// TestFileLockedByAnotherProcess: see snapfiletest.CheckFileLocking.
func TestFileLockedByAnotherProcess(t *testing.T) {
	snapfiletest.CheckFileLocking(t, memory.Scheme, memory.FormatVersion)
}

// TestLockWaitBlocksNoOtherFile: see snapfiletest.CheckLockWaitBlocksNoOtherFile.
func TestLockWaitBlocksNoOtherFile(t *testing.T) {
	snapfiletest.CheckLockWaitBlocksNoOtherFile(t, memory.Scheme)
}
