package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// bounded is a store that keeps at most CacheSize decoded objects (the most
// recently used) and reads everything else from the file: objects by key,
// index lookups from the persisted index entries. It is safe for concurrent
// use.
type bounded struct {
	indexer.Writes
	// ReadFailures keeps the failures of List, ListKeys and
	// ListIndexFuncValues, which cannot return them.
	store.ReadFailures

	file  *file
	info  store.Info // static parts
	codec store.Codec
	kf    cache.KeyFunc
	lru   *lru.Cache // key -> decoded object; safe for concurrent use

	// writeMu serializes writers (Commit, Add, ..., AddIndexers, Close)
	// and guards metaRec.
	writeMu sync.Mutex
	metaRec store.Meta // the recorded identity; Indexes follows AddIndexers

	mu     sync.RWMutex // guards rv, closed and set
	rv     string
	closed bool
	set    *indexer.IndexSet

	// seen is LastStoreSyncResourceVersion, moved by write.
	seen *indexer.Seen

	// fillMu orders the cache fills of readers against the cache updates of
	// writers. A reader that misses holds it shared from the start of its
	// read transaction until it has added what it decoded; a writer holds it
	// exclusively while updating the cache after its commit. So a reader
	// that read an object before a commit adds it before the writer
	// replaces it, never after: the cache never keeps a stale object.
	// It does not order a reader's cache hits (see seq).
	// AddIndexers holds it exclusively across its transaction and the
	// swap of set, so a reader that takes set under it (as view's fn)
	// gets the set its transaction's records were written for.
	fillMu sync.RWMutex

	// seq tells readers whether the cache holds the objects of the
	// snapshot they read, as a sequence lock: a writer makes it odd before
	// its commit and even again once it has updated the cache (under
	// fillMu, exclusively). A reader loads it before its read transaction
	// opens and takes an object from the cache only while it is even and
	// unchanged (cached). Once it changed, a commit may be in the reader's
	// snapshot but not yet in the cache: fillMu alone does not prevent
	// that, since a reader may take it shared between a commit and the
	// writer taking it, and a hit there would be the object the commit
	// replaced (from ByIndex, one no longer having the value asked for).
	// The reader then decodes from its transaction. Taking fillMu
	// exclusively before the commit instead would make readers wait for
	// the commit's fsync.
	seq atomic.Uint64

	// afterCommit, when set (by tests), runs in write between the commit
	// and the cache update: the window in which readers see the new
	// snapshot while the cache still holds what it replaced.
	afterCommit func()
}

func openBounded(f *file, o store.Options, set *indexer.IndexSet) (store.Store, error) {
	var keyReset string
	rv, reset, err := prepareStore(f, o, set, func() (err error) {
		keyReset, err = checkSample(f, o, set)
		return err
	})
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		rv, reset = "", keyReset
	}
	s := &bounded{
		file:    f,
		info:    storeInfo(o, "", reset),
		codec:   o.Codec,
		kf:      o.KeyFunc,
		lru:     lru.New(o.CacheSize),
		rv:      rv,
		set:     set,
		metaRec: store.MetaFor(o, FormatVersion),
		seen:    indexer.NewSeen(rv),
	}
	s.Writes = indexer.NewWrites(s.info.Name, s.write, s.seen)
	return s, nil
}

// sampleSize is how many objects a bounded-mode open decodes to check its
// functions against what is stored (checkSample).
const sampleSize = 256

// checkSample checks, on the first sampleSize objects of the store in key
// order, that the index functions and the key function still compute the
// index values and keys stored with them. The bounded mode does not decode
// every object when it opens, as the default mode does (see load), so a
// sample is how it notices a function that changed under the same name:
// values that differ make it recompute every object's values and index
// entries (decoding them all, in one transaction), and a key that differs
// makes it empty the store and return why (keyReset). A change that alters
// no object of the sample goes unnoticed (see the package documentation).
func checkSample(f *file, o store.Options, set *indexer.IndexSet) (keyReset string, err error) {
	check := indexer.NewValueCheck(set)
	keys := indexer.NewKeyCheck(o.KeyFunc)
	err = viewStore(f, o.Name, func(b *buckets) error {
		c := b.keys.Cursor()
		n := 0
		for k, rec := c.First(); k != nil && n < sampleSize; k, rec = c.Next() {
			n++
			// An object that cannot be read is skipped: as
			// before the check, reading it fails, not the open.
			rec, err := b.open("key record", k, rec)
			if err != nil {
				continue
			}
			seq, long, vals, err := decodeKeyRecord(rec, set.Len())
			if err != nil {
				continue
			}
			key, err := keyOf(k, long)
			if err != nil {
				continue
			}
			data, err := objectOf(b, key, seq)
			if err != nil {
				continue
			}
			obj, err := indexer.Decode(o.Codec, data)
			if errors.Is(err, indexer.ErrUnknownKey) {
				// Not damage to one object: the key ring lacks the
				// key (a wrong key, a rotation's old key not
				// loaded), and the default mode would fail its open
				// on it too, rather than serve lists that are empty.
				return fmt.Errorf("object %q: %w", shorten(key), err)
			}
			if err != nil {
				continue
			}
			keys.Check(key, obj)
			if set.Len() > 0 {
				// An index function that fails on the object
				// fails its next write instead.
				_, _ = check.Values(key, obj, vals)
			}
		}
		return nil
	})
	if err != nil {
		return "", fileError(f.path, o, fmt.Errorf("check store %q: %w", o.Name, err))
	}
	if r := keys.Reset(o.KeyFuncName); r != "" {
		return r, emptyStore(f, o, set, r)
	}
	if stale := check.Stale(); stale != nil {
		return "", rewriteValues(f, o, set, nil, stale)
	}
	return "", nil
}

func (s *bounded) state() (closed bool, set *indexer.IndexSet) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed, s.set
}

func (s *bounded) closedErr(op string) error {
	return fmt.Errorf("store: %s %s: %w", op, s.info.Name, store.ErrClosed)
}

// view runs fn in a read transaction on the store's buckets, holding fillMu
// shared (see bounded.fillMu); fn gets seq as loaded before the
// transaction opened, for cached.
func (s *bounded) view(op string, fn func(b *buckets, seq uint64) error) error {
	s.fillMu.RLock()
	defer s.fillMu.RUnlock()
	seq := s.seq.Load()
	err := guard(func() error {
		return s.file.db.View(func(tx *bbolt.Tx) error {
			b, err := storeBuckets(tx, s.info.Name)
			if err != nil {
				return err
			}
			if b == nil {
				return fmt.Errorf("store vanished from the file: %w", store.ErrCorrupt)
			}
			return fn(b, seq)
		})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return s.closedErr(op)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
		return err
	}
	// Any other failure reading the file: the hint as for corruption.
	return hinted{fmt.Errorf("store: %s %s: bolt %s: %w", op, s.info.Name, s.file.path, err)}
}

// cached returns key's object from the cache if it is the one of a snapshot
// opened after seq was loaded (see bounded.seq).
func (s *bounded) cached(seq uint64, key string) (interface{}, bool) {
	if seq%2 != 0 {
		return nil, false
	}
	obj, ok := s.lru.Get(key)
	// After the Get: a writer changes seq before its commit, so an
	// unchanged seq means no commit the cache may lack has landed.
	if !ok || s.seq.Load() != seq {
		return nil, false
	}
	return obj, true
}

// getLocked returns the object under key, from the cache or decoded from b
// and added to the cache; seq is bounded.seq loaded before b's transaction
// opened. The caller holds fillMu shared, through view, so what it adds
// comes before the cache update of any commit its snapshot lacks.
func (s *bounded) getLocked(b *buckets, seq uint64, key string) (interface{}, bool, error) {
	if obj, ok := s.cached(seq, key); ok {
		return obj, true, nil
	}
	bk := boltKey(key)
	rec := b.keys.Get(bk)
	if rec == nil {
		return nil, false, nil
	}
	rec, err := b.open("key record", bk, rec)
	if err != nil {
		return nil, false, err
	}
	seq, err = recordSeq(rec)
	if err != nil {
		return nil, false, fmt.Errorf("key %q: %w", shorten(key), err)
	}
	data, err := objectOf(b, key, seq)
	if err != nil {
		return nil, false, err
	}
	obj, err := indexer.Decode(s.codec, data)
	if err != nil {
		return nil, false, fmt.Errorf("decode %q: %w", key, err)
	}
	s.lru.Add(key, obj)
	return obj, true, nil
}

// peekLocked is getLocked for bulk reads (List, ByIndex) of the object key
// numbered objSeq: it uses cached objects (cached, with seq) but does not
// add what it decodes, so one large read does not evict the working set.
func (s *bounded) peekLocked(b *buckets, seq uint64, key string, objSeq uint64) (interface{}, error) {
	if obj, ok := s.cached(seq, key); ok {
		return obj, nil
	}
	data, err := objectOf(b, key, objSeq)
	if err != nil {
		return nil, err
	}
	obj, err := indexer.Decode(s.codec, data)
	if err != nil {
		return nil, fmt.Errorf("decode %q: %w", key, err)
	}
	return obj, nil
}

// write validates ops, commits them with rv in one transaction, then
// updates the cache.
func (s *bounded) write(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule indexer.SeenRule) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	closed, set := s.state()
	if closed {
		return s.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	p := indexer.Preparer{KeyFunc: s.kf, Indexes: set, Codec: s.codec}
	ps, err := p.Prepare(op, ops)
	if err != nil {
		return err
	}
	s.seq.Add(1) // odd: readers from now on bypass the cache (see seq)
	err = updateStore(s.file, s.info.Name, func(b *buckets) error {
		var err error
		ops := keyOps(len(ps), func(i int) *indexer.Prepared { return &ps[i] })
		if replace {
			err = replaceAll(b, set.Names(), ops)
		} else {
			err = writeOps(b, set.Names(), ops)
		}
		if err != nil {
			return err
		}
		if rv != "" {
			return putRV(b, rv)
		}
		return nil
	})
	if err == nil && s.afterCommit != nil {
		s.afterCommit()
	}
	s.fillMu.Lock()
	switch {
	case replace:
		s.lru.Clear()
	case err != nil:
		// bbolt can fail a commit whose meta page it wrote (its
		// last fsync failing), leaving it visible to later
		// transactions: drop what it may have changed.
		for i := range ps {
			s.lru.Remove(ps[i].Key)
		}
	default:
		for i := range ps {
			if ps[i].Type == store.OpPut {
				s.lru.Add(ps[i].Key, ps[i].Object)
			} else {
				s.lru.Remove(ps[i].Key)
			}
		}
	}
	s.seq.Add(1) // even: the cache has the commit
	s.fillMu.Unlock()
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if rv != "" {
		s.mu.Lock()
		s.rv = rv
		s.mu.Unlock()
	}
	s.seen.After(ps, rv, rule)
	return nil
}

// Resync implements cache.Store; it does nothing but report a closed store.
func (s *bounded) Resync() error {
	if closed, _ := s.state(); closed {
		return s.closedErr("resync")
	}
	return nil
}

// ResourceVersion implements store.Store.
func (s *bounded) ResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// Info implements store.Store.
func (s *bounded) Info() store.Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	info := s.info
	info.ResourceVersion = s.rv
	info.Indexes = append([]string(nil), s.set.Names()...)
	return info
}

// Get implements cache.Store.
func (s *bounded) Get(obj interface{}) (interface{}, bool, error) {
	if typednil.Is(obj) {
		return nil, false, fmt.Errorf("store: get: nil object: %w", store.ErrInvalid)
	}
	key, err := indexer.CallKeyFunc(s.kf, obj)
	if err != nil {
		return nil, false, fmt.Errorf("store: get %T: key function: %w: %w", obj, store.ErrInvalid, err)
	}
	return s.GetByKey(key)
}

// GetByKey implements cache.Store.
func (s *bounded) GetByKey(key string) (interface{}, bool, error) {
	if closed, _ := s.state(); closed {
		return nil, false, s.closedErr("get")
	}
	// The fast path takes no lock but the cache's own; seq keeps it from
	// returning an object a landed commit replaced (see bounded.seq).
	if obj, ok := s.cached(s.seq.Load(), key); ok {
		return obj, true, nil
	}
	var (
		obj interface{}
		ok  bool
	)
	err := s.view("get", func(b *buckets, seq uint64) error {
		var err error
		obj, ok, err = s.getLocked(b, seq, key)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return obj, ok, nil
}

// List implements cache.Store. It decodes every object not in the cache:
// prefer indexes in bounded mode. An error (a damaged file) is logged and
// lists nothing.
func (s *bounded) List() []interface{} {
	if closed, _ := s.state(); closed {
		return nil
	}
	var list []interface{}
	err := s.view("list", func(b *buckets, seq uint64) error {
		list = []interface{}{}
		c := b.keys.Cursor()
		for k, rec := c.First(); k != nil; k, rec = c.Next() {
			rec, err := b.open("key record", k, rec)
			if err != nil {
				return err
			}
			key, objSeq, err := recordIdentity(k, rec)
			if err != nil {
				return err
			}
			obj, err := s.peekLocked(b, seq, key, objSeq)
			if err != nil {
				return err
			}
			list = append(list, obj)
		}
		return nil
	})
	if err != nil {
		klog.Background().Error(err, "Listing failed", "store", s.info.Name)
		s.Failed(err)
		return nil
	}
	return list
}

// ListKeys implements cache.Store.
func (s *bounded) ListKeys() []string {
	if closed, _ := s.state(); closed {
		return nil
	}
	var keys []string
	err := s.view("list keys", func(b *buckets, _ uint64) error {
		c := b.keys.Cursor()
		for k, rec := c.First(); k != nil; k, rec = c.Next() {
			rec, err := b.open("key record", k, rec)
			if err != nil {
				return err
			}
			key, err := recordKey(k, rec)
			if err != nil {
				return err
			}
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		klog.Background().Error(err, "Listing keys failed", "store", s.info.Name)
		s.Failed(err)
		return nil
	}
	if keys == nil {
		keys = []string{}
	}
	return keys
}

// indexBucket returns the bucket of the named index, or ErrNotFound.
func indexBucket(b *buckets, set *indexer.IndexSet, name string) (*bbolt.Bucket, error) {
	if _, ok := set.Position(name); !ok {
		return nil, fmt.Errorf("indexer: index %q does not exist: %w", name, store.ErrNotFound)
	}
	ib := b.index.Bucket([]byte(name))
	if ib == nil {
		return nil, fmt.Errorf("index bucket %q missing: %w", name, store.ErrCorrupt)
	}
	return ib, nil
}

// hit is an object found through an index entry.
type hit struct {
	key string
	seq uint64
}

// keysWithValue appends the objects having value in index ib, in the order
// of their sequence numbers (which is also the order of their objects in
// the file).
func keysWithValue(b *buckets, ib *bbolt.Bucket, value string, out []hit) ([]hit, error) {
	prefix := indexEntryPrefix(value)
	c := ib.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+seqLen {
			return nil, fmt.Errorf("malformed index entry %q: %w", k, store.ErrCorrupt)
		}
		v, err := b.open("index entry", k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, hit{key: string(v), seq: binary.BigEndian.Uint64(k[len(prefix):])})
	}
	return out, nil
}

// IndexKeys implements cache.Indexer, from the persisted index entries.
func (s *bounded) IndexKeys(indexName, indexedValue string) ([]string, error) {
	closed, set := s.state()
	if closed {
		return nil, s.closedErr("index keys")
	}
	keys := []string{}
	err := s.view("index keys", func(b *buckets, _ uint64) error {
		ib, err := indexBucket(b, set, indexName)
		if err != nil {
			return err
		}
		hits, err := keysWithValue(b, ib, indexedValue, nil)
		for _, h := range hits {
			keys = append(keys, h.key)
		}
		// Entries are in sequence number order.
		slices.Sort(keys)
		return err
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// ByIndex implements cache.Indexer: the keys come from the persisted index
// entries, the objects from the cache or the file.
func (s *bounded) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	closed, set := s.state()
	if closed {
		return nil, s.closedErr("by index")
	}
	var list []interface{}
	err := s.view("by index", func(b *buckets, seq uint64) error {
		ib, err := indexBucket(b, set, indexName)
		if err != nil {
			return err
		}
		hits, err := keysWithValue(b, ib, indexedValue, nil)
		if err != nil {
			return err
		}
		list = make([]interface{}, 0, len(hits))
		for _, h := range hits {
			obj, err := s.peekLocked(b, seq, h.key, h.seq)
			if err != nil {
				return err
			}
			list = append(list, obj)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// Index implements cache.Indexer: the objects sharing a value of the named
// index with obj.
func (s *bounded) Index(indexName string, obj interface{}) ([]interface{}, error) {
	closed, set := s.state()
	if closed {
		return nil, s.closedErr("index")
	}
	i, ok := set.Position(indexName)
	if !ok {
		return nil, fmt.Errorf("indexer: index %q does not exist: %w", indexName, store.ErrNotFound)
	}
	if typednil.Is(obj) {
		return nil, fmt.Errorf("indexer: index %q: nil object: %w", indexName, store.ErrInvalid)
	}
	vals, err := set.ValuesOf(i, "", obj)
	if err != nil {
		return nil, err
	}
	var list []interface{}
	err = s.view("index", func(b *buckets, seq uint64) error {
		ib, err := indexBucket(b, set, indexName)
		if err != nil {
			return err
		}
		var hits []hit
		for _, v := range vals {
			if hits, err = keysWithValue(b, ib, v, hits); err != nil {
				return err
			}
		}
		seen := make(map[string]bool, len(hits))
		list = make([]interface{}, 0, len(hits))
		for _, h := range hits {
			if seen[h.key] {
				continue
			}
			seen[h.key] = true
			obj, err := s.peekLocked(b, seq, h.key, h.seq)
			if err != nil {
				return err
			}
			list = append(list, obj)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// ListIndexFuncValues implements cache.Indexer. It visits one entry per
// distinct value, seeking past the others. An unknown index has no values
// (empty, not nil, as client-go).
func (s *bounded) ListIndexFuncValues(indexName string) []string {
	if closed, _ := s.state(); closed {
		return nil
	}
	var out []string
	err := s.view("list index values", func(b *buckets, _ uint64) error {
		// The set is taken in view, under fillMu: the index count and
		// position that decode long values' key records must be those
		// the records of this transaction were written with, and
		// AddIndexers rewrites them all.
		_, set := s.state()
		pos, ok := set.Position(indexName)
		if !ok {
			out = []string{}
			return nil
		}
		ib, err := indexBucket(b, set, indexName)
		if err != nil {
			return err
		}
		out = []string{}
		c := ib.Cursor()
		for k, key := c.First(); k != nil; {
			v, _, err := splitIndexEntry(k)
			if err != nil {
				return err
			}
			if key, err = b.open("index entry", k, key); err != nil {
				return err
			}
			value := string(v)
			if isDigest(v) {
				if value, err = longValue(b, string(key), pos, set.Len(), v); err != nil {
					return err
				}
			}
			out = append(out, value)
			end := prefixEnd(k[:len(k)-seqLen])
			if end == nil {
				break
			}
			k, key = c.Seek(end)
		}
		return nil
	})
	if err != nil {
		klog.Background().Error(err, "Listing index values failed", "store", s.info.Name, "index", indexName)
		s.Failed(err)
		return nil
	}
	return out
}

// GetIndexers implements cache.Indexer.
func (s *bounded) GetIndexers() cache.Indexers {
	_, set := s.state()
	return set.Indexers()
}

// AddIndexers implements cache.Indexer: the new indexes are computed for
// every stored object (decoding them) and persisted in one transaction
// before they become visible.
func (s *bounded) AddIndexers(newIndexers cache.Indexers) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	closed, set := s.state()
	if closed {
		return s.closedErr("add indexers")
	}
	if len(newIndexers) == 0 {
		return nil // nothing to add: do not decode and rewrite every object's values
	}
	nset, err := set.With(newIndexers)
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	meta := s.metaRec
	meta.Indexes = append([]string(nil), nset.Names()...)
	// Exclusively across the transaction and the swap of set: readers
	// that decode key records with the set (see fillMu) must not open a
	// transaction with the records rewritten for nset and still get set.
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	err = updateStore(s.file, s.info.Name, func(b *buckets) error {
		return rebuildIndexes(b, nset, s.codec, func(key string) (interface{}, bool) {
			return s.lru.Get(key)
		}, meta)
	})
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	s.metaRec = meta
	s.mu.Lock()
	s.set = nset
	s.mu.Unlock()
	return nil
}

// Close implements store.Store.
func (s *bounded) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.lru.Clear()
	return s.file.release(s.info.Name)
}

var _ store.Store = (*bounded)(nil)
var _ store.ReadFailer = (*bounded)(nil)
