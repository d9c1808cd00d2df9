package indexer

import "github.com/informerdb/informerdb/store"

var _ store.Lener = (*Base)(nil)

// Len returns the number of stored objects (store.Lener), read from the
// cache, which holds every object; 0 once closed.
func (b *Base) Len() int {
	if b.isClosed() {
		return 0
	}
	return b.cache.Len()
}
