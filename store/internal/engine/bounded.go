package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/writes"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// Config is what New needs besides the engine.
type Config struct {
	Info    store.Info    // static parts, not ResourceVersion or Indexes
	Options store.Options // with defaults; KeyFunc, Codec and CacheSize (> 0) are used
	// Indexes is the index set the stored index values are aligned with.
	Indexes *indexer.IndexSet
	// ResourceVersion is the stored resume point, once opening settled it.
	ResourceVersion string
	// CheckData, when set, refuses encodings the engine cannot store.
	CheckData func(key string, data []byte) error
}

// Store is the bounded-mode store over an Engine. It is safe for concurrent
// use.
type Store struct {
	writes.Writes
	// ReadFailures keeps the failures of List, ListKeys and
	// ListIndexFuncValues, which cannot return them.
	driver.ReadFailures

	eng       Engine
	info      store.Info // static parts
	codec     store.Codec
	kf        cache.KeyFunc
	checkData func(key string, data []byte) error

	// writeMu serializes writers (write, AddIndexers, Close).
	writeMu sync.Mutex

	mu     sync.RWMutex // guards set and closed
	set    *indexer.IndexSet
	closed bool

	seen *writes.Seen // the resume point and LastStoreSyncResourceVersion

	// lru holds decoded objects; it is safe for concurrent use, and
	// readers' hits take no other lock. What adds to it or updates it
	// holds cacheMu and checks or changes seq under it.
	cacheMu sync.Mutex
	lru     *lru.Cache

	// seq orders reads against writes, as a sequence lock over the cache:
	// a writer makes it odd before its commit and even again once it has
	// updated the cache, under cacheMu. A reader loads it before its
	// transaction opens; while it is unchanged (and even), the cache
	// holds exactly the objects of that transaction's snapshot, so the
	// reader may use a hit or add what it decoded. Once it changed, a
	// commit may be in the snapshot but not in the cache, or the other
	// way round: the reader decodes from its transaction and caches
	// nothing. No lock is held across a read, so a long List never delays
	// a writer, nor the readers queued behind that writer.
	seq atomic.Uint64

	// afterCommit and afterRead, set by tests (SetTestHooks), run in the
	// windows a concurrent operation can hit.
	afterCommit func()
	afterRead   func(key string)
}

// New returns the store over eng, which opening has settled (its resume
// point, index values and entries agree with cfg).
func New(eng Engine, cfg Config) *Store {
	s := &Store{
		eng:       eng,
		info:      cfg.Info,
		codec:     cfg.Options.Codec,
		kf:        cfg.Options.KeyFunc,
		checkData: cfg.CheckData,
		set:       cfg.Indexes,
		seen:      writes.NewSeen(cfg.ResourceVersion),
		lru:       lru.New(cfg.Options.CacheSize),
	}
	s.Writes = writes.New(s.info.Name, s.write, s.seen)
	return s
}

func (s *Store) state() (set *indexer.IndexSet, closed bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.set, s.closed
}

func (s *Store) closedErr(op string) error {
	return fmt.Errorf("store: %s %s: %w", op, s.info.Name, store.ErrClosed)
}

// CheckOpen returns the error of the operation op on the store once it is
// closed, or nil, for the backend's own methods (Export).
func (s *Store) CheckOpen(op string) error {
	if _, closed := s.state(); closed {
		return s.closedErr(op)
	}
	return nil
}

// index returns the current index set and the position of the named index
// in it, or the error of the operation op: the store is closed, or the
// index does not exist.
func (s *Store) index(op, name string) (*indexer.IndexSet, int, error) {
	set, closed := s.state()
	if closed {
		return nil, 0, s.closedErr(op)
	}
	i, ok := set.Position(name)
	if !ok {
		return nil, 0, fmt.Errorf("store: %s %s: index %q does not exist: %w", op, s.info.Name, name, store.ErrNotFound)
	}
	return set, i, nil
}

// view runs fn in a read transaction of the engine. A reader that uses or
// fills the cache loads seq before it calls view (see Store.seq).
func (s *Store) view(op string, fn func(tx Tx) error) error {
	err := s.eng.View(op, fn)
	if err != nil && errors.Is(err, store.ErrClosed) {
		return s.closedErr(op)
	}
	return err
}

// readFailed records err, the failure of a read that cannot return it; a
// read racing Close is no failure.
func (s *Store) readFailed(op string, err error, kv ...interface{}) {
	if errors.Is(err, store.ErrClosed) {
		return
	}
	klog.Background().Error(err, "Reading the store failed; returning nothing", append([]interface{}{"op", op, "store", s.info.Name}, kv...)...)
	s.Failed(err)
}

// cached returns key's object from the cache if it is the one of a snapshot
// opened after seq was loaded (see Store.seq).
func (s *Store) cached(seq uint64, key string) (interface{}, bool) {
	if seq%2 != 0 {
		return nil, false
	}
	obj, ok := s.lru.Get(key)
	// After the Get: a writer changes seq before it changes the cache,
	// so an unchanged seq means the Get saw no change the snapshot lacks.
	if !ok || s.seq.Load() != seq {
		return nil, false
	}
	return obj, true
}

// fill adds obj, decoded from a snapshot opened after seq was loaded, to the
// cache unless a write has begun since: the writer updates the cache under
// cacheMu after its commit, so what is added before it is refreshed or
// removed, and nothing older is added after it.
func (s *Store) fill(seq uint64, key string, obj interface{}) {
	s.cacheMu.Lock()
	if s.seq.Load() == seq && seq%2 == 0 {
		s.lru.Add(key, obj)
	}
	s.cacheMu.Unlock()
}

// reader decodes the objects of one read, whose transaction opened after
// seq was loaded. use, bound once, is what it gives Loaders, so that
// reading an object allocates no more than decoding it.
type reader struct {
	s   *Store
	seq uint64
	use func(data []byte) error
	key string      // of the object being decoded
	obj interface{} // decoded by use
}

// newReader returns the reader of a read whose transaction opens next.
func (s *Store) newReader() *reader {
	r := &reader{s: s, seq: s.seq.Load()}
	r.use = r.decode
	return r
}

func (r *reader) decode(data []byte) error {
	obj, err := indexer.Decode(r.s.codec, data)
	if err != nil {
		return fmt.Errorf("decode %q with %s codec: %w: %w", r.key, r.s.codec.Name(), store.ErrCorrupt, err)
	}
	r.obj = obj
	return nil
}

// peek returns the object of key, from the cache or decoded with load, for
// the reads of many objects (List, ByIndex, Index): what it decodes is not
// cached, so that one large read does not evict the working set.
func (r *reader) peek(key string, load Loader) (interface{}, error) {
	if obj, ok := r.s.cached(r.seq, key); ok {
		return obj, nil
	}
	r.key, r.obj = key, nil
	if err := load(r.use); err != nil {
		return nil, err
	}
	if r.s.afterRead != nil {
		r.s.afterRead(key)
	}
	return r.obj, nil
}

// write validates ops, commits them with rv in one commit, then updates the
// cache.
func (s *Store) write(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule writes.Rule) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	set, closed := s.state()
	if closed {
		return s.closedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	p := indexer.Preparer{KeyFunc: s.kf, Indexes: set, Codec: s.codec, CheckData: s.checkData}
	ps, err := p.Prepare(op, ops)
	if err != nil {
		return err
	}
	cs := make([]indexer.Change, len(ps))
	for i := range ps {
		cs[i].Prepared = ps[i]
	}
	s.seq.Add(1) // odd: readers from now on bypass the cache (see seq)
	err = s.eng.Commit(ctx, cs, false, set, rv, replace)
	if err == nil && s.afterCommit != nil {
		s.afterCommit()
	}
	s.cacheMu.Lock()
	switch {
	case replace:
		s.lru.Clear()
	case err != nil:
		// The commit may have landed (its final sync failing): drop
		// what it may have changed.
		for i := range ps {
			s.lru.Remove(ps[i].Key)
		}
	default:
		// Objects written are the ones a watch event's reader asks for.
		for i := range ps {
			if ps[i].Type == store.OpPut {
				s.lru.Add(ps[i].Key, ps[i].Object)
			} else {
				s.lru.Remove(ps[i].Key)
			}
		}
	}
	s.seq.Add(1) // even: the cache has the commit
	s.cacheMu.Unlock()
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var last interface{} // the object whose resourceVersion the store sees
	if n := len(ps); n > 0 {
		last = ps[n-1].Object
	}
	s.seen.After(last, rv, rule)
	return nil
}

// Resync implements cache.Store; it does nothing but report a closed store.
func (s *Store) Resync() error { return s.CheckOpen("resync") }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	info := s.info
	info.ResourceVersion = s.ResourceVersion()
	info.Indexes = append([]string(nil), s.set.Names()...)
	return info
}

// Get implements cache.Store.
func (s *Store) Get(obj interface{}) (interface{}, bool, error) {
	return indexer.GetByObject(s.kf, obj, s.GetByKey)
}

// GetByKey implements cache.Store: from the cache, or decoded from the
// engine and cached.
func (s *Store) GetByKey(key string) (interface{}, bool, error) {
	if _, closed := s.state(); closed {
		return nil, false, s.closedErr("get")
	}
	// The fast path takes no lock but the cache's own (see Store.seq).
	if obj, ok := s.cached(s.seq.Load(), key); ok {
		return obj, true, nil
	}
	r := s.newReader()
	found := false
	err := s.view("get", func(tx Tx) error {
		if obj, ok := s.cached(r.seq, key); ok {
			r.obj, found = obj, true
			return nil
		}
		r.key, r.obj = key, nil
		var err error
		if found, err = tx.Object(key, r.use); err != nil || !found {
			return err
		}
		if s.afterRead != nil {
			s.afterRead(key)
		}
		s.fill(r.seq, key, r.obj)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return r.obj, found, nil
}

// List implements cache.Store, decoding every object not in the cache
// without caching it. An error (a damaged database) is logged, kept
// (store.ReadFailer) and lists nothing.
func (s *Store) List() []interface{} {
	if _, closed := s.state(); closed {
		return nil
	}
	list := []interface{}{} // empty, not nil, as client-go's
	r := s.newReader()
	err := s.view("list", func(tx Tx) error {
		return tx.Objects(func(key string, load Loader) error {
			obj, err := r.peek(key, load)
			if err != nil {
				return err
			}
			list = append(list, obj)
			return nil
		})
	})
	if err != nil {
		s.readFailed("list", err)
		return nil
	}
	return list
}

// ListKeys implements cache.Store.
func (s *Store) ListKeys() []string {
	if _, closed := s.state(); closed {
		return nil
	}
	keys := []string{}
	err := s.view("list keys", func(tx Tx) error {
		return tx.Keys(func(key string) error {
			keys = append(keys, key)
			return nil
		})
	})
	if err != nil {
		s.readFailed("list keys", err)
		return nil
	}
	return keys
}

// IndexKeys implements cache.Indexer, from the persisted index entries.
func (s *Store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	if _, _, err := s.index("index keys", indexName); err != nil {
		return nil, err
	}
	keys := []string{}
	err := s.view("index keys", func(tx Tx) error {
		return tx.Indexed(indexName, indexedValue, func(key string, _ Loader) error {
			keys = append(keys, key)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(keys)
	return keys, nil
}

// ByIndex implements cache.Indexer: the keys come from the persisted index
// entries, the objects from the cache or the engine (not cached).
func (s *Store) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	if _, _, err := s.index("by index", indexName); err != nil {
		return nil, err
	}
	return s.byValues("by index", indexName, []string{indexedValue})
}

// Index implements cache.Indexer: the objects sharing a value of the named
// index with obj, each once.
func (s *Store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	set, i, err := s.index("index", indexName)
	if err != nil {
		return nil, err
	}
	vals, err := set.LookupValues(i, obj)
	if err != nil {
		return nil, err
	}
	return s.byValues("index", indexName, vals)
}

// byValues returns the objects having any of vals in the named index, each
// once, read in one transaction.
func (s *Store) byValues(op, indexName string, vals []string) ([]interface{}, error) {
	list := []interface{}{}
	r := s.newReader()
	err := s.view(op, func(tx Tx) error {
		var seen map[string]bool
		if len(vals) > 1 {
			seen = map[string]bool{}
		}
		for _, v := range vals {
			err := tx.Indexed(indexName, v, func(key string, load Loader) error {
				if seen != nil {
					if seen[key] {
						return nil
					}
					seen[key] = true
				}
				obj, err := r.peek(key, load)
				if err != nil {
					return err
				}
				list = append(list, obj)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// ListIndexFuncValues implements cache.Indexer. An unknown index has no
// values (empty, not nil, as client-go).
func (s *Store) ListIndexFuncValues(indexName string) []string {
	set, closed := s.state()
	if closed {
		return nil
	}
	if _, ok := set.Position(indexName); !ok {
		return []string{}
	}
	out := []string{}
	err := s.view("list index values", func(tx Tx) error {
		return tx.Values(indexName, func(value string) error {
			out = append(out, value)
			return nil
		})
	})
	if err != nil {
		s.readFailed("list index values", err, "index", indexName)
		return nil
	}
	return out
}

// GetIndexers implements cache.Indexer.
func (s *Store) GetIndexers() cache.Indexers {
	set, _ := s.state()
	return set.Indexers()
}

// AddIndexers implements cache.Indexer: the new indexes are computed for
// every stored object (decoding those not cached), read in one transaction,
// and persisted in one commit before they become visible.
func (s *Store) AddIndexers(newIndexers cache.Indexers) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	set, closed := s.state()
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
	// With writeMu held, nothing changes between the read and the commit.
	vals, err := indexValues(s.eng, "add indexers", s.codec, nset, func(key string) (interface{}, bool) { return s.lru.Get(key) })
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	if err := s.eng.SetIndexes(context.Background(), nset, vals); err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	s.mu.Lock()
	s.set = nset
	s.mu.Unlock()
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cacheMu.Lock()
	s.lru.Clear()
	s.cacheMu.Unlock()
	return s.eng.Close()
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.ReadFailer = (*Store)(nil)
)

// CacheLen returns how many decoded objects the cache holds, for the
// backends' tests.
func (s *Store) CacheLen() int {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	return s.lru.Len()
}
