package bolt

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// openDefault opens a store that keeps every object decoded in memory: an
// indexer.Base over a persister writing bbolt transactions.
func openDefault(f *file, o store.Options, set *indexer.IndexSet) (store.Store, error) {
	var (
		c        *indexer.Cache
		keyReset string
	)
	rv, reset, err := prepareStore(f, o, set, func() error {
		var (
			found loadFindings
			err   error
		)
		if c, found, err = load(f, o, set); err != nil {
			return err
		}
		if keyReset = found.keyReset; keyReset != "" {
			// As a scope change (prepareStore): start empty (load
			// returned an empty cache).
			return emptyStore(f, o, set, keyReset)
		}
		if found.stale != nil {
			return rewriteValues(f, o, set, c, found.stale)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		rv, reset = "", keyReset
	}
	info := storeInfo(o, rv, reset)
	p := &persister{file: f, name: o.Name, meta: driver.MetaFor(o, FormatVersion), names: set.Names()}
	base, err := indexer.NewBase(indexer.BaseConfig{
		Info: info, Persister: p, Options: o, Cache: c,
		// writeOps reads each key's old record from the file.
		SelfDiffing: true,
		// bbolt copies the values of a transaction into its pages when it
		// commits, before Persist returns, and keeps no reference to them.
		CopiesData: true,
	})
	if err != nil {
		return nil, err
	}
	return &defaultStore{Base: base, file: f}, nil
}

// defaultStore is a default-mode store: an indexer.Base, which serves every
// read from memory, together with its file, for what needs the file itself
// (record-level export). It is safe for concurrent use.
type defaultStore struct {
	*indexer.Base
	file *file
}

// loaded is one object read from the file, decoded by load's workers.
type loaded struct {
	key  []byte // memory-mapped: valid during the read transaction
	rec  []byte // its key record
	seq  uint64
	data []byte
}

// loadFindings is what load found besides the objects.
type loadFindings struct {
	// stale describes the indexes whose stored values differ from what
	// their functions compute (see indexer.ValueCheck); nil if none.
	stale []string
	// keyReset, if not empty, says that the key function no longer
	// computes the keys the objects are stored under (see
	// indexer.KeyCheck).
	keyReset string
}

// load decodes every object of the store into a new Cache, with the index
// values set's functions compute, and checks them and their keys (see
// loadFindings). Decoding dominates (about 11 us per Pod with protobuf), so
// it runs on every CPU; the data is read straight from the memory map
// inside one read transaction, as codecs never retain their input.
//
// It joins keys/ and objects/: the key records, ordered by sequence number,
// walk objects/ in its order (sequential pages). A record without its
// object, or an object without a record, is ErrCorrupt.
func load(f *file, o store.Options, set *indexer.IndexSet) (c *indexer.Cache, found loadFindings, err error) {
	c = indexer.NewCache(set)
	check := indexer.NewValueCheck(set)
	keys := indexer.NewKeyCheck(o.KeyFunc)
	var ps []indexer.Prepared
	err = viewStore(f, o.Name, func(b *buckets) error {
		items, err := joinRecords(b)
		if err != nil {
			return err
		}
		ps, err = decodeAll(items, o.Codec, check, keys, set.Len())
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			// An index function that fails on a stored object.
			return nil, found, fmt.Errorf("store: open %s in %s: %w", o.Name, f.path, err)
		}
		return nil, found, fileError(f.path, o, fmt.Errorf("load store %q: %w", o.Name, err))
	}
	if found.keyReset = keys.Reset(o.KeyFuncName); found.keyReset != "" {
		return c, found, nil // empty
	}
	c.Replace(ps)
	found.stale = check.Stale()
	return c, found, nil
}

// emptyStore empties the store o.Name and its resume point, in one
// transaction, because of why.
func emptyStore(f *file, o store.Options, set *indexer.IndexSet, why string) error {
	indexer.LogKeyReset(o.Name, f.path, why)
	err := updateStore(f, o.Name, func(b *buckets) error {
		if err := b.clear(set.Names()); err != nil {
			return err
		}
		return putRV(b, "")
	})
	if err != nil {
		return fmt.Errorf("store: open %s in %s: empty the store (%s): %w", o.Name, f.path, why, err)
	}
	return nil
}

// rewriteValues stores the index values set's functions compute for every
// object, when the stored ones differed (stale): one transaction, which
// leaves the store's metadata as it is. The values come from c if it is not
// nil (load computed them), else the objects are decoded from the file and
// the functions run on them.
func rewriteValues(f *file, o store.Options, set *indexer.IndexSet, c *indexer.Cache, stale []string) error {
	indexer.LogStale(o.Name, f.path, stale)
	err := updateStore(f, o.Name, func(b *buckets) error {
		m, err := getMeta(b)
		if err != nil {
			return err
		}
		if c == nil {
			return rebuildIndexes(b, set, o.Codec, nil, m)
		}
		return writeIndexes(b, set, func(key string, _ uint64) ([][]string, error) {
			v, ok := c.IndexValues(key)
			if !ok {
				return nil, fmt.Errorf("object %q is stored but was not loaded: %w", shorten(key), store.ErrCorrupt)
			}
			return v, nil
		}, m)
	})
	if err != nil {
		return fmt.Errorf("store: open %s in %s: store the index values of changed index functions: %w", o.Name, f.path, err)
	}
	return nil
}

// joinRecords returns every key record of b with its object, in sequence
// number order.
func joinRecords(b *buckets) ([]loaded, error) {
	var items []loaded
	kc := b.keys.Cursor()
	for k, rec := kc.First(); k != nil; k, rec = kc.Next() {
		rec, err := b.open("key record", k, rec)
		if err != nil {
			return nil, err
		}
		seq, err := recordSeq(rec)
		if err != nil {
			return nil, fmt.Errorf("object %q: %w", shorten(string(k)), err)
		}
		items = append(items, loaded{key: k, rec: rec, seq: seq})
	}
	// Replace numbers objects in key order: then this is sorted already.
	if !slices.IsSortedFunc(items, compareLoaded) {
		slices.SortFunc(items, compareLoaded)
	}
	// A damaged record usually has a wrong number: report the key of the
	// first record without its object before an object without a record.
	var orphan error
	missing := -1
	i := 0
	oc := b.objects.Cursor()
	for sk, data := oc.First(); sk != nil; sk, data = oc.Next() {
		if len(sk) != seqLen {
			return nil, fmt.Errorf("malformed object key %q: %w", sk, store.ErrCorrupt)
		}
		seq := binary.BigEndian.Uint64(sk)
		for i < len(items) && items[i].seq < seq {
			if missing < 0 {
				missing = i
			}
			i++
		}
		if i == len(items) || items[i].seq > seq {
			if orphan == nil {
				orphan = fmt.Errorf("object %d has no key record: %w", seq, store.ErrCorrupt)
			}
			continue
		}
		it := &items[i]
		var err error
		if it.data, err = b.openObject(string(it.key), sk, data); err != nil {
			return nil, err
		}
		i++
	}
	if missing < 0 && i < len(items) {
		missing = i
	}
	if missing >= 0 {
		it := items[missing]
		return nil, fmt.Errorf("object %q: its object %d is missing: %w", shorten(string(it.key)), it.seq, store.ErrCorrupt)
	}
	if orphan != nil {
		return nil, orphan
	}
	return items, nil
}

func compareLoaded(a, b loaded) int { return cmp.Compare(a.seq, b.seq) }

// decodeAll decodes items in parallel.
func decodeAll(items []loaded, codec store.Codec, check *indexer.ValueCheck, keys *indexer.KeyCheck, nindexes int) ([]indexer.Prepared, error) {
	ps := make([]indexer.Prepared, len(items))
	workers := min(runtime.GOMAXPROCS(0), len(items)/256+1)
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	chunk := (len(items) + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(items))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := guard(func() error {
				for i := lo; i < hi; i++ {
					it := &items[i]
					_, long, vals, err := decodeKeyRecord(it.rec, nindexes)
					if err != nil {
						return fmt.Errorf("object %q: %w", shorten(string(it.key)), err)
					}
					key, err := keyOf(it.key, long)
					if err != nil {
						return err
					}
					obj, err := indexer.Decode(codec, it.data)
					if err != nil {
						return fmt.Errorf("object %q: %w", key, err)
					}
					keys.Check(key, obj)
					if nindexes > 0 {
						if vals, err = check.Values(key, obj, vals); err != nil {
							return err
						}
					}
					ps[i] = indexer.Prepared{Type: store.OpPut, Key: key, Object: obj, Values: vals}
				}
				return nil
			})
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ps, firstErr
}

// persister writes a default-mode store's changes, one bbolt transaction
// per call. indexer.Base serializes its calls.
type persister struct {
	file *file
	name string

	meta  driver.Meta // the recorded identity; Indexes follows PersistIndexes
	names []string    // index names, aligned with index values
}

// update runs fn on the store's buckets in one read-write transaction.
func (p *persister) update(fn func(b *buckets) error) error {
	return updateStore(p.file, p.name, fn)
}

// viewStore runs fn on the buckets of the store name in one read
// transaction of f, turning bbolt's panics on damaged files into
// ErrCorrupt (guard). A store that is not in the file is ErrCorrupt: its
// caller opened it.
func viewStore(f *file, name string, fn func(b *buckets) error) error {
	return guard(func() error {
		return f.db.View(func(tx *bbolt.Tx) error {
			b, err := storeBuckets(tx, name)
			if err != nil {
				return err
			}
			if b == nil {
				return fmt.Errorf("store %q vanished: %w", name, store.ErrCorrupt)
			}
			return fn(b)
		})
	})
}

func updateStore(f *file, name string, fn func(b *buckets) error) error {
	err := guard(func() error {
		return f.update(func(tx *bbolt.Tx) error {
			b, err := storeBuckets(tx, name)
			if err != nil {
				return err
			}
			if b == nil {
				return fmt.Errorf("store %q vanished from the file: %w", name, store.ErrCorrupt)
			}
			return fn(b)
		})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("%s: %w", f.path, store.ErrClosed)
	case errors.Is(err, berrors.ErrKeyTooLarge), errors.Is(err, berrors.ErrValueTooLarge), errors.Is(err, berrors.ErrKeyRequired):
		return fmt.Errorf("bolt %s: %w: %w", f.path, store.ErrInvalid, err)
	case errors.Is(err, store.ErrCorrupt):
		return withHint(fmt.Errorf("bolt %s: %w", f.path, err))
	}
	return fmt.Errorf("bolt %s: %w", f.path, err)
}

// Persist implements indexer.Persister. It reads old index values from the
// file rather than from changes, so the file stays self-consistent even if
// it were ever to disagree with the cache.
func (p *persister) Persist(ctx context.Context, changes []indexer.Change, rv string, replace bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ops := keyOps(len(changes), func(i int) *indexer.Prepared { return &changes[i].Prepared })
	return p.update(func(b *buckets) error {
		var err error
		if replace {
			err = replaceAll(b, p.names, ops)
		} else {
			err = writeOps(b, p.names, ops)
		}
		if err != nil {
			return err
		}
		if rv != "" {
			return putRV(b, rv)
		}
		return nil
	})
}

// PersistIndexes implements indexer.Persister.
func (p *persister) PersistIndexes(ctx context.Context, set *indexer.IndexSet, values map[string][][]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	meta := p.meta
	meta.Indexes = append([]string(nil), set.Names()...)
	err := p.update(func(b *buckets) error {
		return writeIndexes(b, set, func(key string, _ uint64) ([][]string, error) {
			v, ok := values[key]
			if !ok {
				return nil, fmt.Errorf("no index values for %q", key)
			}
			return v, nil
		}, meta)
	})
	if err != nil {
		return err
	}
	p.meta, p.names = meta, meta.Indexes
	return nil
}

// Close implements indexer.Persister.
func (p *persister) Close() error {
	return p.file.release(p.name)
}
