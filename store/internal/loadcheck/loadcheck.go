// Package loadcheck checks, while a persistent store opens, that its key and
// index functions still compute the keys and index values stored with its
// objects: a function changed under the same name looks unchanged to the
// store's recorded identity (store/driver.Meta).
package loadcheck

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// ValueCheck compares, while a persistent store loads, the index values
// stored with each object against what the index functions compute now.
//
// A store records its index set by name, so an index function changed under
// the same name looks unchanged: trusting the stored values would serve the
// old function's results, and indexes would disagree with objects. A store
// that decodes every object when it opens runs the functions on each, serves
// what they compute, and rewrites the stored values if any differed (Stale);
// a bounded mode checks a sample.
//
// A ValueCheck is safe for concurrent use by a store's decoding workers.
type ValueCheck struct {
	set *indexer.IndexSet

	mu    sync.Mutex
	stale map[string]int // index name -> objects whose values differ
}

// NewValueCheck returns a check against the functions of set.
func NewValueCheck(set *indexer.IndexSet) *ValueCheck {
	return &ValueCheck{set: set}
}

// Values returns the index values the set's functions compute for obj,
// stored under key with stored (aligned with the set's names), and notes
// each index whose stored values differ. A function that fails on obj fails
// it, as it would fail the write of obj.
func (v *ValueCheck) Values(key string, obj interface{}, stored [][]string) ([][]string, error) {
	now, err := v.set.Values(key, obj)
	if err != nil {
		return nil, err
	}
	if len(stored) != len(now) {
		return nil, fmt.Errorf("indexer: index values of %q: %d stored for %d indexes: %w", key, len(stored), len(now), store.ErrCorrupt)
	}
	for i := range now {
		if sameValues(stored[i], now[i]) {
			continue
		}
		v.mu.Lock()
		if v.stale == nil {
			v.stale = map[string]int{}
		}
		v.stale[v.set.Names()[i]]++
		v.mu.Unlock()
	}
	return now, nil
}

// sameValues reports whether two lists of an object's values for one index
// hold the same values. They are a set, as in client-go's indexer: an index
// function may return them in any order (ranging over a map of labels), and
// repeat them; nil and empty are both no value.
func sameValues(a, b []string) bool {
	if slices.Equal(a, b) {
		return true
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Stale describes the indexes whose stored values differed from the
// functions' for at least one object, in name order, each with the number
// of objects ("app (12 objects)"), or returns nil if none did.
func (v *ValueCheck) Stale() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, name := range v.set.Names() {
		if n := v.stale[name]; n > 0 {
			out = append(out, fmt.Sprintf("%s (%d objects)", name, n))
		}
	}
	return out
}

// KeyCheck compares, while a persistent store loads, the key each object is
// stored under with what the store's key function computes for it now.
//
// A store records its key function by name (store.Options.KeyFuncName). A
// function changed under the same name would find the stored objects under
// keys it never computes: updates and deletes would miss them, and they
// would stay for ever. A store that decodes every object when it opens
// checks each key, a bounded mode a sample; if one differs, the store must
// start empty, as after a scope change, and the informer relists.
//
// A KeyCheck is safe for concurrent use by a store's decoding workers.
type KeyCheck struct {
	fn cache.KeyFunc

	mu          sync.Mutex
	n           int
	stored, now string // the first key that differs, and what fn computes
}

// NewKeyCheck returns a check against fn.
func NewKeyCheck(fn cache.KeyFunc) *KeyCheck { return &KeyCheck{fn: fn} }

// Check notes whether obj, stored under key, still has that key. A key
// function that fails on obj counts as a key that differs.
func (c *KeyCheck) Check(key string, obj interface{}) {
	now, err := indexer.CallKeyFunc(c.fn, obj)
	if err == nil && now == key {
		return
	}
	if err != nil {
		now = "error: " + err.Error()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.stored, c.now = key, now
	}
	c.n++
}

// Reset returns why a store whose stored keys the key function (named
// keyFuncName) no longer computes must start empty, or "" if every key
// checked matched.
func (c *KeyCheck) Reset(keyFuncName string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return ""
	}
	return fmt.Sprintf("key function %q changed: %d objects are stored under keys it no longer computes (%q is now %q)",
		keyFuncName, c.n, c.stored, c.now)
}

// LogKeyReset logs that the store name of the database at where starts
// empty because of why (KeyCheck.Reset), in the same words for every backend.
func LogKeyReset(name, where, why string) {
	klog.Background().Info("Emptying the store; its informer relists", "store", name, "database", where, "reason", why)
}

// LogStale logs that the store name of the database at where rewrites the
// index values stored with its objects, which differ from what its index
// functions compute now (ValueCheck.Stale).
func LogStale(name, where string, stale []string) {
	klog.Background().Info("Index values stored with the objects differ from what the index functions compute now (a function changed under the same name); storing the new ones",
		"store", name, "database", where, "indexes", stale)
}
