package badger

import (
	"github.com/dgraph-io/badger/v4/skl"

	"github.com/informerdb/informerdb/store"
)

// valueThreshold is the size from which badger keeps a value in the value
// log rather than in the LSM tree (and counts only a pointer to it in a
// transaction's size). Nearly every Kubernetes object is larger, and index
// value records are smaller. A low threshold lets one transaction hold more
// operations (maxBatchOps), so a stream of objects takes fewer commits and
// syncs (BENCHMARKS.md section 3).
const valueThreshold = 1 << 8

var (
	_ store.BatchLimiter = (*defaultStore)(nil)
	_ store.BatchLimiter = (*bounded)(nil)
)

// maxBatchOps returns how many operations of a Commit fit in one badger
// transaction, with nindexes indexes, assuming the worst of each: badger
// refuses a transaction of more than 15% of a memtable or of that many bytes
// divided by the size of a skiplist node entries (ErrTxnTooBig), and a Commit
// that does not fit is written as a new generation, a copy of every object it
// does not write. An operation writes its object (counted in full up to
// valueThreshold) and its values record (a short value per index), and, when
// the store keeps index entries (withEntries: the bounded mode), may delete one
// old and add one new index entry per index.
func maxBatchOps(memTableSize int64, nindexes int, withEntries bool) int {
	maxBytes := 15 * memTableSize / 100
	maxEntries := maxBytes / int64(skl.MaxNodeSize)
	const (
		entryOverhead = 10 + 2 // badger's per-entry version and meta bytes
		objectBytes   = valueThreshold + 256 + entryOverhead
		smallBytes    = 128 + entryOverhead // a values record or index entry: key and short value
		valueBytes    = 32                  // one index value in a values record
	)
	entries := int64(2)
	bytes := int64(objectBytes) + smallBytes + int64(nindexes)*valueBytes
	if withEntries {
		entries += 2 * int64(nindexes)
		bytes += 2 * int64(nindexes) * smallBytes
	}
	n := min(maxEntries/entries, maxBytes/bytes)
	// A margin for keys and values longer than assumed.
	return max(1, int(n*9/10))
}

// MaxBatchOps implements store.BatchLimiter: the default mode writes no
// index entries.
func (s *defaultStore) MaxBatchOps() int {
	return maxBatchOps(s.sp.sh.cfg.memTableSize, len(s.GetIndexers()), false)
}

// MaxBatchOps implements store.BatchLimiter.
func (b *bounded) MaxBatchOps() int {
	return maxBatchOps(b.sp.sh.cfg.memTableSize, len(b.GetIndexers()), true)
}
