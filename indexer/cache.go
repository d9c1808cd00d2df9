package indexer

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/store"
)

// Cache holds decoded objects and their index entries in memory and serves
// Base's reads (memory, and bolt and badger in their default mode); Base
// makes its writes.
//
// Cache is safe for concurrent use. Reads take a read lock only. Writes
// (apply, replace, setIndexes) come from one writer at a time, which Base
// ensures with its write lock; a Cache only guards its maps.
type Cache struct {
	name string // the store's, for errors
	// closed is set once, by Base.Close. It is atomic rather than under a
	// lock because every read checks it, and a second lock made Get twice
	// as slow.
	closed atomic.Bool

	mu sync.RWMutex // guards items, vals, indexes and indices
	// items maps keys to objects, as client-go's threadSafeMap does. The
	// index values live apart in vals, so that the map reads go through
	// keeps small values: one struct of both made Get and ByIndex slower.
	items map[string]interface{}
	// vals maps the keys of items to their index values, aligned with
	// indexes.Names(), for moving index entries on writes.
	vals    map[string][][]string
	indexes *IndexSet
	// indices[i] maps an index value of index i to the keys having it.
	// Empty key sets are removed, so indexes over short-lived values do
	// not grow without bound (client-go #84959).
	indices []map[string]sets.Set[string]
}

// NewCache returns a cache keeping the indexes of set, holding the puts of
// ps (prepared against set; the last of a key wins).
func NewCache(set *IndexSet, ps []Prepared) *Cache {
	c := &Cache{indexes: set}
	c.replace(ps)
	return c
}

func (c *Cache) closedErr(op string) error {
	return fmt.Errorf("store: %s %s: %w", op, c.name, store.ErrClosed)
}

func newIndices(n int) []map[string]sets.Set[string] {
	ind := make([]map[string]sets.Set[string], n)
	for i := range ind {
		ind[i] = map[string]sets.Set[string]{}
	}
	return ind
}

// GetIndexers implements cache.Indexer.
func (c *Cache) GetIndexers() cache.Indexers { return c.Indexes().Indexers() }

// Indexes returns the current index set.
func (c *Cache) Indexes() *IndexSet {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.indexes
}

// presizeMin is the size of a batch applied to an empty cache from which
// apply sizes the maps for it in advance.
const presizeMin = 1 << 10

// apply applies prepared operations in order. They must have been prepared
// against the cache's current index set.
func (c *Cache) apply(ps []Prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) == 0 && len(ps) >= presizeMin {
		// A cold start's first commit: sized once, not rehashed on the way.
		c.items = make(map[string]interface{}, len(ps))
		c.vals = make(map[string][][]string, len(ps))
	}
	for i := range ps {
		c.applyLocked(&ps[i])
	}
}

func (c *Cache) applyLocked(p *Prepared) {
	oldVals, had := c.vals[p.Key]
	switch p.Type {
	case store.OpPut:
		c.items[p.Key] = p.Object
		c.vals[p.Key] = p.Values
		c.reindexLocked(p.Key, oldVals, p.Values)
	case store.OpDelete:
		if !had {
			return
		}
		delete(c.items, p.Key)
		delete(c.vals, p.Key)
		c.reindexLocked(p.Key, oldVals, nil)
	}
}

// reindexLocked moves key from the entries of oldVals to those of newVals;
// either may be nil (add, delete).
func (c *Cache) reindexLocked(key string, oldVals, newVals [][]string) {
	for i, idx := range c.indices {
		var o, n []string
		if oldVals != nil {
			o = oldVals[i]
		}
		if newVals != nil {
			n = newVals[i]
		}
		// The common case: one value, unchanged.
		if len(o) == 1 && len(n) == 1 && o[0] == n[0] {
			continue
		}
		for _, v := range o {
			if set := idx[v]; set != nil {
				set.Delete(key)
				if set.Len() == 0 {
					delete(idx, v)
				}
			}
		}
		for _, v := range n {
			set := idx[v]
			if set == nil {
				set = sets.New[string]()
				idx[v] = set
			}
			set.Insert(key)
		}
	}
}

// replace replaces the whole contents with the prepared puts.
func (c *Cache) replace(ps []Prepared) {
	items := make(map[string]interface{}, len(ps))
	vals := make(map[string][][]string, len(ps))
	for i := range ps {
		if ps[i].Type == store.OpPut {
			items[ps[i].Key] = ps[i].Object
			vals[ps[i].Key] = ps[i].Values
		} else {
			delete(items, ps[i].Key)
			delete(vals, ps[i].Key)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items, c.vals = items, vals
	c.indices = newIndices(c.indexes.Len())
	for key, v := range vals {
		c.reindexLocked(key, nil, v)
	}
}

// prepareIndexes computes the index set with more added and the values of
// every stored object under it, changing nothing: an index function that
// fails on any object fails the whole addition.
func (c *Cache) prepareIndexes(more cache.Indexers) (*IndexSet, map[string][][]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	set, err := c.indexes.With(more)
	if err != nil {
		return nil, nil, err
	}
	vals := make(map[string][][]string, len(c.items))
	for key, obj := range c.items {
		v, err := set.Values(key, obj)
		if err != nil {
			return nil, nil, fmt.Errorf("backfill: %w", err)
		}
		vals[key] = v
	}
	return set, vals, nil
}

// setIndexes switches to set with the values prepareIndexes computed. The
// caller must have kept writers out since prepareIndexes.
func (c *Cache) setIndexes(set *IndexSet, vals map[string][][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.indexes = set
	c.indices = newIndices(set.Len())
	for key := range c.items {
		c.vals[key] = vals[key]
		c.reindexLocked(key, nil, vals[key])
	}
}

// GetByKey implements cache.Store.
func (c *Cache) GetByKey(key string) (interface{}, bool, error) {
	if c.closed.Load() {
		return nil, false, c.closedErr("get")
	}
	c.mu.RLock()
	obj, ok := c.items[key]
	c.mu.RUnlock()
	return obj, ok, nil
}

// Len implements store.Lener; 0 once closed.
func (c *Cache) Len() int {
	if c.closed.Load() {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.items)
}

// List implements cache.Store. A closed store lists nothing.
func (c *Cache) List() []interface{} {
	if c.closed.Load() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	list := make([]interface{}, 0, len(c.items))
	for _, obj := range c.items {
		list = append(list, obj)
	}
	return list
}

// ListKeys implements cache.Store.
func (c *Cache) ListKeys() []string {
	if c.closed.Load() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	list := make([]string, 0, len(c.items))
	for k := range c.items {
		list = append(list, k)
	}
	return list
}

// indexValuesLocked returns the stored index values of key, aligned with
// Indexes().Names(). The caller holds c.mu.
func (c *Cache) indexValuesLocked(key string) ([][]string, bool) {
	v, ok := c.vals[key]
	return v, ok
}

func unknownIndex(name string) error {
	return fmt.Errorf("indexer: index %q does not exist: %w", name, store.ErrNotFound)
}

// ByIndex implements cache.Indexer: the objects whose values for the named
// index include value.
func (c *Cache) ByIndex(name, value string) ([]interface{}, error) {
	if c.closed.Load() {
		return nil, c.closedErr("by index")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.indexes.Position(name)
	if !ok {
		return nil, unknownIndex(name)
	}
	return c.objectsLocked(c.indices[i][value]), nil
}

// objectsLocked returns the objects of keys. The caller holds c.mu.
func (c *Cache) objectsLocked(keys sets.Set[string]) []interface{} {
	list := make([]interface{}, 0, len(keys))
	for key := range keys {
		list = append(list, c.items[key])
	}
	return list
}

// IndexKeys implements cache.Indexer: the keys of the objects whose values
// for the named index include value, sorted.
func (c *Cache) IndexKeys(name, value string) ([]string, error) {
	if c.closed.Load() {
		return nil, c.closedErr("index keys")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.indexes.Position(name)
	if !ok {
		return nil, unknownIndex(name)
	}
	return sets.List(c.indices[i][value]), nil
}

// Index implements cache.Indexer: the objects sharing at least one value of
// the named index with obj.
func (c *Cache) Index(name string, obj interface{}) ([]interface{}, error) {
	if c.closed.Load() {
		return nil, c.closedErr("index")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.indexes.Position(name)
	if !ok {
		return nil, unknownIndex(name)
	}
	vals, err := c.indexes.LookupValues(i, obj)
	if err != nil {
		return nil, err
	}
	idx := c.indices[i]
	if len(vals) == 1 {
		return c.objectsLocked(idx[vals[0]]), nil
	}
	keys := sets.New[string]()
	for _, v := range vals {
		keys = keys.Union(idx[v])
	}
	return c.objectsLocked(keys), nil
}

// ListIndexFuncValues implements cache.Indexer: the values of the named
// index that at least one object has; empty, not nil, for an unknown index,
// as client-go.
func (c *Cache) ListIndexFuncValues(name string) []string {
	if c.closed.Load() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.indexes.Position(name)
	if !ok {
		return []string{}
	}
	out := make([]string, 0, len(c.indices[i]))
	for v := range c.indices[i] {
		out = append(out, v)
	}
	return out
}
