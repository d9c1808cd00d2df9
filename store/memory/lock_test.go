//go:build unix

package memory_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile"
	"github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/store/storetest"
)

// TestLockWaitBlocksNoOtherDatabase: see
// storetest.CheckLockWaitBlocksNoOtherDatabase.
func TestLockWaitBlocksNoOtherDatabase(t *testing.T) {
	storetest.CheckLockWaitBlocksNoOtherDatabase(t,
		func(path string) string { return memory.Scheme + "://" + path },
		func(t *testing.T, path string) func() {
			unlock, err := snapfile.Lock(t.Context(), path, 0)
			if err != nil {
				t.Fatal(err)
			}
			return unlock
		})
}
