package memdb_test

import (
	"testing"

	"github.com/informerdb/informerdb/store/internal/snapfile/snapfiletest"
	"github.com/informerdb/informerdb/store/memdb"
)

// TestTrailingSlashRefused: see snapfiletest.CheckTrailingSlash.
func TestTrailingSlashRefused(t *testing.T) {
	snapfiletest.CheckTrailingSlash(t, memdb.Scheme)
}
