package indexer

import (
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// PrepareOne is Prepare for a single operation, without the slice.
func (p *Preparer) PrepareOne(op string, o store.Op) (Prepared, error) {
	var r Prepared
	err := p.prepareOne(op, 0, 1, &o, &r)
	return r, err
}

// ApplyCache, ReplaceCache, PrepareIndexes and SetIndexes are the writes
// of a Cache, which Base makes, for its own tests.
func ApplyCache(c *Cache, ps []Prepared)   { c.apply(ps) }
func ReplaceCache(c *Cache, ps []Prepared) { c.replace(ps) }

func PrepareIndexes(c *Cache, more cache.Indexers) (*IndexSet, map[string][][]string, error) {
	return c.prepareIndexes(more)
}

func SetIndexes(c *Cache, set *IndexSet, vals map[string][][]string) { c.setIndexes(set, vals) }
