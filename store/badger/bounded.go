package badger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// bounded is the store of bounded mode (Options.CacheSize > 0): at most
// CacheSize decoded objects are kept, in an LRU; other reads decode from
// badger, and index queries read the persisted index entries. It is safe for
// concurrent use.
type bounded struct {
	indexer.Writes
	// ReadFailures keeps the failures of the reads that cannot return
	// them (logReadErr).
	store.ReadFailures

	info  store.Info // static parts
	sp    *space
	codec store.Codec
	keyFn cache.KeyFunc

	// writeMu serializes writers across Prepare, reading old index
	// values, the transaction and the LRU update.
	writeMu sync.Mutex

	mu     sync.RWMutex // guards set and closed
	set    *indexer.IndexSet
	closed bool

	// seen is LastStoreSyncResourceVersion, moved by write.
	seen *indexer.Seen

	// lru holds decoded objects; it is safe for concurrent use, and
	// readers' hits take no other lock. What adds to it or updates it
	// (a reader's fill, a writer's update after its commit) holds cacheMu
	// and checks or changes seq under it.
	cacheMu sync.Mutex
	lru     *lru.Cache

	// seq orders reads against writes, as a sequence lock over the LRU: a
	// writer makes it odd before its commit and even again once it has
	// updated the LRU, under cacheMu. A reader loads it before its badger
	// transaction opens; while it is unchanged (and even), the LRU holds
	// exactly the objects of that transaction's snapshot, so the reader
	// may use a hit or add what it decoded. Once it changed, a commit may
	// be in the snapshot but not yet in the LRU, or in the LRU but not in
	// the snapshot: the reader decodes from its transaction and caches
	// nothing. A reader that checked only for commits after its snapshot
	// opened would miss one landing between the two, and one that took
	// hits refreshed after its snapshot would mix two states (an object
	// from ByIndex no longer having the value asked for). Unlike a lock
	// held across reads (as bolt's fillMu), this lets a long List never
	// delay a writer, nor the readers queued behind that writer.
	seq atomic.Uint64

	// afterRead, when set (by tests), runs between reading an object from
	// badger and caching it: the window a concurrent write can hit.
	afterRead func(key string)
}

func openBounded(ctx context.Context, sp *space, o store.Options, set *indexer.IndexSet, info store.Info, rebuild bool) (_ store.Store, err error) {
	b := &bounded{info: info, sp: sp, codec: o.Codec, keyFn: o.KeyFunc, set: set, lru: lru.New(o.CacheSize), seen: &indexer.Seen{}}
	b.Writes = indexer.NewWrites(info.Name, b.write, b.seen)
	// The store has seen what its resume point says, once opening has
	// settled it (a reset empties it).
	defer func() { b.seen.Store(sp.resourceVersion()) }()
	if !rebuild {
		keyReset, stale, err := checkSample(sp, o, set)
		if err != nil {
			return nil, err
		}
		switch {
		case keyReset != "":
			if err := sp.emptyForKeys(true, keyReset); err != nil {
				return nil, err
			}
			b.info.Reset = keyReset
			return b, nil
		case stale != nil:
			indexer.LogStale(o.Name, sp.where(), stale)
			rebuild = true
		}
	}
	if rebuild {
		vals, err := b.computeValues(set)
		if err != nil {
			return nil, fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
		}
		if err := sp.reindex(ctx, set.Names(), vals, true); err != nil {
			return nil, fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
		}
		return b, nil
	}
	// A store last written by the default mode has no index entries.
	if err := sp.buildEntries(ctx); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: build the index entries: %w", sp.name, sp.where(), err)
	}
	return b, nil
}

// sampleSize is how many objects a bounded-mode open decodes to check its
// functions against what is stored (checkSample).
const sampleSize = 256

// checkSample checks, on the first sampleSize objects of the store in key
// order, that the index functions and the key function still compute the
// index values and keys stored with them. The bounded mode does not decode
// every object when it opens, as the default mode does (see load), so a
// sample is how it notices a function that changed under the same name. It
// returns why the store must start empty if a key differs (keyReset), and
// describes the indexes whose values differ (stale), which the caller
// rebuilds. A change that alters no object of the sample goes unnoticed
// (see the package documentation).
func checkSample(sp *space, o store.Options, set *indexer.IndexSet) (keyReset string, stale []string, err error) {
	check := indexer.NewValueCheck(set)
	keyCheck := indexer.NewKeyCheck(o.KeyFunc)
	errSampled := errors.New("sampled")
	err = sp.view(func(txn *badger.Txn, k keys, names []string) error {
		n := 0
		prefix := k.objPrefix()
		return eachUnder(context.Background(), txn, prefix, func(item *badger.Item, suffix []byte) error {
			if n == sampleSize {
				return errSampled
			}
			n++
			// An object that cannot be read is skipped: as before the
			// check, reading it fails, not the open. An index function
			// that fails on it fails its next write instead.
			var key string
			var obj interface{}
			err := value(item, func(v []byte) error {
				var data []byte
				var err error
				if key, data, err = parseObj(suffix, v); err != nil {
					return err
				}
				obj, err = indexer.Decode(o.Codec, data)
				return err
			})
			if errors.Is(err, indexer.ErrUnknownKey) {
				// Not damage to one object: the key ring lacks the
				// key (a wrong key, a rotation's old key not
				// loaded), and the default mode would fail its open
				// on it too, rather than serve lists that are empty.
				return fmt.Errorf("object %q: %w", key, err)
			}
			if err == nil {
				keyCheck.Check(key, obj)
				if len(names) > 0 {
					sampleValues(txn, k.vals(key), len(names), func(stored [][]string) {
						_, _ = check.Values(key, obj, stored)
					})
				}
			}
			return nil
		})
	})
	if errors.Is(err, errSampled) {
		err = nil
	}
	if err != nil {
		// corrupt leaves an unknown key's error as it is.
		return "", nil, sp.corrupt("check a sample of the objects", err)
	}
	return keyCheck.Reset(o.KeyFuncName), check.Stale(), nil
}

// sampleValues calls fn with the index values stored under valsKey in txn,
// if they can be read: checkSample skips what cannot.
func sampleValues(txn *badger.Txn, valsKey []byte, n int, fn func(stored [][]string)) {
	item, err := txn.Get(valsKey)
	if err != nil {
		return
	}
	_ = value(item, func(v []byte) error {
		if stored, err := decodeValues(v, n); err == nil {
			fn(stored)
		}
		return nil
	})
}

// computeValues decodes every stored object and computes its values under set.
func (b *bounded) computeValues(set *indexer.IndexSet) (map[string][][]string, error) {
	vals := map[string][][]string{}
	err := b.sp.scanObjects(func(key, _ string, data []byte) error {
		obj, err := indexer.Decode(b.codec, data)
		if err != nil {
			return fmt.Errorf("decode object %q with %s codec: %w: %w", key, b.codec.Name(), store.ErrCorrupt, err)
		}
		v, err := set.Values(key, obj)
		if err != nil {
			return err
		}
		vals[key] = v
		return nil
	})
	return vals, err
}

func (b *bounded) state() (*indexer.IndexSet, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.set, b.closed
}

func (b *bounded) closedErr(op string) error {
	return fmt.Errorf("store: %s %s: %w", op, b.info.Name, store.ErrClosed)
}

func (b *bounded) readErr(op string, err error) error {
	if errors.Is(err, store.ErrClosed) {
		return b.closedErr(op)
	}
	if isStoreErr(err) {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return fmt.Errorf("store: %s %s: badger: %w", op, b.info.Name, err)
}

// write validates ops, reads the index values they replace, commits them
// with rv and updates the LRU.
func (b *bounded) write(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule indexer.SeenRule) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	set, closed := b.state()
	if closed {
		return b.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	p := indexer.Preparer{KeyFunc: b.keyFn, Indexes: set, Codec: b.codec, CheckData: b.sp.CheckData}
	ps, err := p.Prepare(op, ops)
	if err != nil {
		return err
	}
	changes, err := b.changes(ps, set, replace)
	if err != nil {
		return b.readErr(op, err)
	}
	b.seq.Add(1) // odd: readers from now on bypass the LRU (see seq)
	err = b.sp.Persist(ctx, changes, rv, replace)
	b.cacheMu.Lock()
	switch {
	case replace:
		b.lru.Clear()
	case err != nil:
		// The commit may have landed (an error after it, a fallback
		// to a new generation): drop what it may have changed.
		for i := range ps {
			b.lru.Remove(ps[i].Key)
		}
	default:
		for i := range ps {
			// Refresh cached objects; do not let a large batch of
			// writes evict what readers use.
			if ps[i].Type == store.OpPut {
				if _, ok := b.lru.Get(ps[i].Key); ok {
					b.lru.Add(ps[i].Key, ps[i].Object)
				}
			} else {
				b.lru.Remove(ps[i].Key)
			}
		}
	}
	b.seq.Add(1) // even: the LRU has the commit
	b.cacheMu.Unlock()
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	b.seen.After(ps, rv, rule)
	return nil
}

// cached returns key's object from the LRU if it is the one of a snapshot
// opened after seq was loaded (see bounded.seq).
func (b *bounded) cached(seq uint64, key string) (interface{}, bool) {
	if seq%2 != 0 {
		return nil, false
	}
	obj, ok := b.lru.Get(key)
	// After the Get: a writer changes seq before it changes the LRU, so
	// an unchanged seq means the Get saw no change the snapshot lacks.
	if !ok || b.seq.Load() != seq {
		return nil, false
	}
	return obj, true
}

// fill adds obj, decoded from a snapshot opened after seq was loaded, to the
// LRU unless a write has begun since: the writer updates the LRU under
// cacheMu after its commit, so what is added before it is refreshed or
// removed, and nothing older is added after it.
func (b *bounded) fill(seq uint64, key string, obj interface{}) {
	b.cacheMu.Lock()
	if b.seq.Load() == seq && seq%2 == 0 {
		b.lru.Add(key, obj)
	}
	b.cacheMu.Unlock()
}

// changes pairs prepared ops with the stored state they replace, following
// earlier ops of the same batch, as indexer.Base does from its cache.
func (b *bounded) changes(ps []indexer.Prepared, set *indexer.IndexSet, replace bool) ([]indexer.Change, error) {
	out := make([]indexer.Change, len(ps))
	type state struct {
		exists bool
		vals   [][]string
	}
	overlay := make(map[string]state, len(ps))
	err := b.sp.view(func(txn *badger.Txn, k keys, names []string) error {
		for i := range ps {
			p := &ps[i]
			out[i].Prepared = *p
			cur, ok := overlay[p.Key]
			if !ok && !replace {
				_, err := txn.Get(k.obj(p.Key))
				switch {
				case errors.Is(err, badger.ErrKeyNotFound):
				case err != nil:
					return err
				default:
					cur.exists = true
					if len(names) > 0 {
						if cur.vals, err = readValues(txn, k, p.Key, len(names)); err != nil {
							return err
						}
					}
				}
			}
			out[i].Existed, out[i].OldValues = cur.exists, cur.vals
			if p.Type == store.OpPut {
				overlay[p.Key] = state{exists: true, vals: p.Values}
			} else {
				overlay[p.Key] = state{}
			}
		}
		return nil
	})
	return out, err
}

func readValues(txn *badger.Txn, k keys, key string, n int) ([][]string, error) {
	item, err := txn.Get(k.vals(key))
	if err != nil {
		return nil, fmt.Errorf("index values of %q: %w: %w", key, store.ErrCorrupt, err)
	}
	var vals [][]string
	err = value(item, func(v []byte) error {
		vals, err = decodeValues(v, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("index values of %q: %w: %w", key, store.ErrCorrupt, err)
	}
	return vals, nil
}

// Resync implements cache.Store; it does nothing but fail on a closed store.
func (b *bounded) Resync() error {
	if _, closed := b.state(); closed {
		return b.closedErr("resync")
	}
	return nil
}

// ResourceVersion implements store.Store.
func (b *bounded) ResourceVersion() string { return b.sp.resourceVersion() }

// Info implements store.Store.
func (b *bounded) Info() store.Info {
	set, _ := b.state()
	info := b.info
	info.ResourceVersion = b.ResourceVersion()
	info.Indexes = append([]string(nil), set.Names()...)
	return info
}

// Get implements cache.Store.
func (b *bounded) Get(obj interface{}) (interface{}, bool, error) {
	if typednil.Is(obj) {
		return nil, false, fmt.Errorf("store: get: nil object: %w", store.ErrInvalid)
	}
	key, err := indexer.CallKeyFunc(b.keyFn, obj)
	if err != nil {
		return nil, false, fmt.Errorf("store: get %T: key function: %w: %w", obj, store.ErrInvalid, err)
	}
	return b.GetByKey(key)
}

// GetByKey implements cache.Store.
func (b *bounded) GetByKey(key string) (interface{}, bool, error) {
	if _, closed := b.state(); closed {
		return nil, false, b.closedErr("get")
	}
	// Loaded before the transaction opens (see bounded.seq).
	seq := b.seq.Load()
	if obj, ok := b.cached(seq, key); ok {
		return obj, true, nil // no transaction needed
	}
	var obj interface{}
	var found bool
	err := b.sp.view(func(txn *badger.Txn, k keys, _ []string) error {
		var err error
		obj, found, err = b.getLocked(txn, k, seq, key)
		return err
	})
	if err != nil {
		return nil, false, b.readErr("get "+key, err)
	}
	return obj, found, nil
}

// getLocked returns key's object from the LRU or, decoded, from txn,
// caching it; seq is bounded.seq loaded before txn opened. The name says txn
// must stay open for the call.
func (b *bounded) getLocked(txn *badger.Txn, k keys, seq uint64, key string) (interface{}, bool, error) {
	if obj, ok := b.cached(seq, key); ok {
		return obj, true, nil
	}
	item, err := txn.Get(k.obj(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	obj, err := b.decode(item, len(k.objPrefix()))
	if err != nil {
		return nil, false, err
	}
	if b.afterRead != nil {
		b.afterRead(key)
	}
	b.fill(seq, key, obj)
	return obj, true, nil
}

// decode decodes the object item holds; prefixLen is the length of the
// object prefix of its key.
func (b *bounded) decode(item *badger.Item, prefixLen int) (interface{}, error) {
	var obj interface{}
	err := value(item, func(v []byte) error {
		key, data, err := parseObj(item.Key()[prefixLen:], v)
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
		}
		obj, err = indexer.Decode(b.codec, data)
		if err != nil {
			return fmt.Errorf("decode %q with %s codec: %w: %w", key, b.codec.Name(), store.ErrCorrupt, err)
		}
		return nil
	})
	return obj, err
}

// List implements cache.Store: it decodes every object not in the LRU,
// without caching them. A closed store lists nothing.
func (b *bounded) List() []interface{} {
	out := []interface{}{} // empty, not nil, as client-go's
	seq := b.seq.Load()    // before the transaction opens (see bounded.seq)
	err := b.sp.view(func(txn *badger.Txn, k keys, _ []string) error {
		prefix := k.objPrefix()
		return eachUnder(context.Background(), txn, prefix, func(item *badger.Item, suffix []byte) error {
			key, hashed, _, err := readComp(suffix)
			if err != nil {
				return fmt.Errorf("object key: %w: %w", store.ErrCorrupt, err)
			}
			var obj interface{}
			ok := false
			if !hashed {
				obj, ok = b.cached(seq, key)
			}
			if !ok {
				if obj, err = b.decode(item, len(prefix)); err != nil {
					return err
				}
			}
			out = append(out, obj)
			return nil
		})
	})
	if err != nil {
		b.logReadErr("list", err)
		return nil
	}
	return out
}

func (b *bounded) logReadErr(op string, err error) {
	if !errors.Is(err, store.ErrClosed) {
		klog.Background().Error(err, "Reading the badger store failed; returning nothing", "op", op, "store", b.info.Name)
		b.Failed(err)
	}
}

// scanObjKeys returns the keys of the objects under prefix (an object
// prefix), reading badger keys only, and values only for hashed keys.
func scanObjKeys(txn *badger.Txn, prefix []byte) ([]string, error) {
	out := []string{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		suffix := it.Item().Key()[len(prefix):]
		key, hashed, _, err := readComp(suffix)
		if err == nil && hashed {
			err = value(it.Item(), func(v []byte) error {
				key, _, err = parseObj(suffix, v)
				return err
			})
		}
		if err != nil {
			return nil, fmt.Errorf("object key: %w: %w", store.ErrCorrupt, err)
		}
		out = append(out, key)
	}
	return out, nil
}

// scanEntries returns the object keys of the index entries under prefix,
// which starts with indexPrefix, sorted.
func scanEntries(txn *badger.Txn, indexPrefix, prefix []byte) ([]string, error) {
	out := []string{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		var val []byte
		if item.ValueSize() > 0 {
			var err error
			if val, err = valueCopy(item); err != nil {
				return nil, err
			}
		}
		_, key, err := parseEntry(item.Key()[len(indexPrefix):], val)
		if err != nil {
			return nil, fmt.Errorf("index entry: %w: %w", store.ErrCorrupt, err)
		}
		out = append(out, key)
	}
	// Inline keys come out sorted; hashed ones sort by their hash.
	sort.Strings(out)
	return out, nil
}

// ListKeys implements cache.Store.
func (b *bounded) ListKeys() []string {
	var out []string
	err := b.sp.view(func(txn *badger.Txn, k keys, _ []string) error {
		var err error
		out, err = scanObjKeys(txn, k.objPrefix())
		return err
	})
	if err != nil {
		b.logReadErr("list keys", err)
		return nil
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func (b *bounded) unknownIndex(op, name string) error {
	return fmt.Errorf("store: %s %s: index %q does not exist: %w", op, b.info.Name, name, store.ErrNotFound)
}

// IndexKeys implements cache.Indexer, from the persisted index entries.
func (b *bounded) IndexKeys(indexName, indexedValue string) ([]string, error) {
	set, closed := b.state()
	if closed {
		return nil, b.closedErr("index keys")
	}
	if _, ok := set.Position(indexName); !ok {
		return nil, b.unknownIndex("index keys", indexName)
	}
	var out []string
	err := b.sp.view(func(txn *badger.Txn, k keys, _ []string) error {
		var err error
		out, err = scanEntries(txn, k.indexPrefix(indexName), k.valuePrefix(indexName, indexedValue))
		return err
	})
	if err != nil {
		return nil, b.readErr("index keys", err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// ByIndex implements cache.Indexer.
func (b *bounded) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return b.byValues("by index", indexName, []string{indexedValue})
}

// Index implements cache.Indexer.
func (b *bounded) Index(indexName string, obj interface{}) ([]interface{}, error) {
	set, closed := b.state()
	if closed {
		return nil, b.closedErr("index")
	}
	i, ok := set.Position(indexName)
	if !ok {
		return nil, b.unknownIndex("index", indexName)
	}
	if typednil.Is(obj) {
		return nil, fmt.Errorf("store: index %q: nil object: %w", indexName, store.ErrInvalid)
	}
	vals, err := set.ValuesOf(i, "", obj)
	if err != nil {
		return nil, fmt.Errorf("store: index %q: %w", indexName, err)
	}
	return b.byValues("index", indexName, vals)
}

// byValues returns the objects having any of vals in the named index, each
// once, read in one transaction.
func (b *bounded) byValues(op, indexName string, vals []string) ([]interface{}, error) {
	set, closed := b.state()
	if closed {
		return nil, b.closedErr(op)
	}
	if _, ok := set.Position(indexName); !ok {
		return nil, b.unknownIndex(op, indexName)
	}
	out := []interface{}{}
	seq := b.seq.Load() // before the transaction opens (see bounded.seq)
	err := b.sp.view(func(txn *badger.Txn, k keys, _ []string) error {
		seen := map[string]bool{}
		for _, v := range vals {
			ks, err := scanEntries(txn, k.indexPrefix(indexName), k.valuePrefix(indexName, v))
			if err != nil {
				return err
			}
			for _, key := range ks {
				if seen[key] {
					continue
				}
				seen[key] = true
				obj, ok, err := b.getLocked(txn, k, seq, key)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("index %q entry %q names missing object %q: %w", indexName, v, key, store.ErrCorrupt)
				}
				out = append(out, obj)
			}
		}
		return nil
	})
	if err != nil {
		return nil, b.readErr(op, err)
	}
	return out, nil
}

// ListIndexFuncValues implements cache.Indexer: one key per value is read,
// then the iterator seeks past the value's other entries. An unknown index
// has no values (empty, not nil, as client-go).
func (b *bounded) ListIndexFuncValues(indexName string) []string {
	set, closed := b.state()
	if closed {
		return nil
	}
	if _, ok := set.Position(indexName); !ok {
		return []string{}
	}
	out := []string{}
	err := b.sp.view(func(txn *badger.Txn, k keys, _ []string) error {
		prefix := k.indexPrefix(indexName)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); {
			item := it.Item()
			var val []byte
			if item.ValueSize() > 0 {
				var err error
				if val, err = valueCopy(item); err != nil {
					return err
				}
			}
			v, _, err := parseEntry(item.Key()[len(prefix):], val)
			if err != nil {
				return fmt.Errorf("index %q entry: %w: %w", indexName, store.ErrCorrupt, err)
			}
			out = append(out, v)
			end := prefixEnd(k.valuePrefix(indexName, v))
			if end == nil {
				break
			}
			it.Seek(end)
		}
		return nil
	})
	if err != nil {
		b.logReadErr("list index values", err)
		return nil
	}
	return out
}

// GetIndexers implements cache.Indexer.
func (b *bounded) GetIndexers() cache.Indexers {
	set, _ := b.state()
	return set.Indexers()
}

// AddIndexers implements cache.Indexer: every stored object is decoded to
// compute its values, and the new entries are persisted before the indexes
// become visible.
func (b *bounded) AddIndexers(newIndexers cache.Indexers) error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	set, closed := b.state()
	if closed {
		return b.closedErr("add indexers")
	}
	if len(newIndexers) == 0 {
		return nil // nothing to add: do not decode and rewrite every object's values
	}
	// As Open does: the store could not be opened again with the index
	// set it would record.
	if err := checkIndexNames(newIndexers); err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	nset, err := set.With(newIndexers)
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	vals, err := b.computeValues(nset)
	if err != nil {
		return fmt.Errorf("store: add indexers: backfill: %w", err)
	}
	if err := b.sp.PersistIndexes(context.Background(), nset, vals); err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	b.mu.Lock()
	b.set = nset
	b.mu.Unlock()
	return nil
}

// Close implements store.Store.
func (b *bounded) Close() error {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.cacheMu.Lock()
	b.lru.Clear()
	b.cacheMu.Unlock()
	return b.sp.Close()
}

var _ store.Store = (*bounded)(nil)

var _ store.ReadFailer = (*bounded)(nil)
