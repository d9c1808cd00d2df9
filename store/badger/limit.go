package badger

import "github.com/dgraph-io/badger/v4/skl"

// valueThreshold is the size from which badger keeps a value in the value
// log, counting only a pointer in a transaction's size: nearly every object
// is larger and value records smaller, so a transaction holds more objects
// (BENCHMARKS.md section 3).
const valueThreshold = 1 << 8

// maxBatchOps returns how many operations of a Commit surely fit in one
// badger transaction (15% of a memtable, in bytes and in skiplist nodes),
// with nindexes indexes: a Commit that does not fit copies every other
// object into a new generation. An operation writes its object and value
// record and, withEntries, may delete and add an entry per index.
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
