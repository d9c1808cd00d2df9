package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/dgraph-io/badger/v4"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	shared "github.com/informerdb/informerdb/store/internal/engine"
	"github.com/informerdb/informerdb/store/internal/loadcheck"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

// View implements shared.Engine.
func (s *space) View(op string, fn func(tx shared.Tx) error) error {
	err := s.view(func(txn *badger.Txn, k keys, names []string) error {
		return fn(&badgerTx{txn: txn, k: k, names: names})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrClosed):
		return fmt.Errorf("store: %s %s: %w", op, s.name, store.ErrClosed)
	case isStoreErr(err):
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return fmt.Errorf("store: %s %s: badger: %w", op, s.name, err)
}

// diff sets what each change replaces: an earlier change of the batch's, or
// the stored state (nothing, with replace).
func (s *space) diff(cs []indexer.Change, replace bool) error {
	type state struct {
		exists bool
		vals   [][]string
	}
	overlay := make(map[string]state, len(cs))
	return s.view(func(txn *badger.Txn, k keys, names []string) error {
		for i := range cs {
			c := &cs[i]
			cur, ok := overlay[c.Key]
			if !ok && !replace {
				_, err := txn.Get(k.obj(c.Key))
				switch {
				case errors.Is(err, badger.ErrKeyNotFound):
				case err != nil:
					return err
				default:
					cur.exists = true
					if len(names) > 0 {
						if cur.vals, err = readValues(txn, k, c.Key, len(names)); err != nil {
							return err
						}
					}
				}
			}
			c.Existed, c.OldValues = cur.exists, cur.vals
			if c.Type == store.OpPut {
				overlay[c.Key] = state{exists: true, vals: c.Values}
			} else {
				overlay[c.Key] = state{}
			}
		}
		return nil
	})
}

// readValues reads the value record of the object key, aligned with n
// index names.
func readValues(txn *badger.Txn, k keys, key string, n int) ([][]string, error) {
	item, err := txn.Get(k.vals(key))
	if err != nil {
		return nil, fmt.Errorf("index values of %q: %w: %w", key, store.ErrCorrupt, err)
	}
	return itemValues(item, key, n)
}

// itemValues decodes item, the value record of the object key.
func itemValues(item *badger.Item, key string, n int) (vals [][]string, err error) {
	err = value(item, func(v []byte) error {
		vals, err = decodeValues(v, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("index values of %q: %w: %w", key, store.ErrCorrupt, err)
	}
	return vals, nil
}

// Empty implements shared.Engine, as a scope change does (space.empty).
func (s *space) Empty(why string) error {
	loadcheck.LogKeyReset(s.name, s.where(), why)
	if err := s.empty(); err != nil {
		return fmt.Errorf("store: open %s in %s: empty the store (%s): %w", s.name, s.where(), why, err)
	}
	return nil
}

// badgerTx implements shared.Tx over a read transaction of the generation
// whose keys are k and whose value records are aligned with names.
type badgerTx struct {
	txn   *badger.Txn
	k     keys
	names []string
}

// Object implements shared.Tx.
func (t *badgerTx) Object(key string, use func(data []byte) error) (bool, error) {
	item, err := t.txn.Get(t.k.obj(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, objectData(item, len(t.k.objPrefix()), use)
}

// objectData calls use with the encoding of the object item; prefixLen is
// that of its key's object prefix.
func objectData(item *badger.Item, prefixLen int, use func(data []byte) error) error {
	return value(item, func(v []byte) error {
		_, data, err := parseObj(item.Key()[prefixLen:], v)
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
		}
		return use(data)
	})
}

// objectKey returns the key of the object item, whose badger key ends in
// suffix: inline in the badger key or, hashed, in the value.
func objectKey(item *badger.Item, suffix []byte) (string, error) {
	key, hashed, _, err := readComp(suffix)
	if err == nil && hashed {
		err = value(item, func(v []byte) error {
			key, _, err = parseObj(suffix, v)
			return err
		})
	}
	if err != nil {
		return "", fmt.Errorf("object key: %w: %w", store.ErrCorrupt, err)
	}
	return key, nil
}

// objectRecord returns the key and a copy of the encoding of the object
// item, whose badger key ends in suffix.
func objectRecord(item *badger.Item, suffix []byte) (key string, data []byte, err error) {
	err = value(item, func(v []byte) error {
		k, d, err := parseObj(suffix, v)
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
		}
		key, data = k, bytes.Clone(d)
		return nil
	})
	return key, data, err
}

// Objects implements shared.Tx, in the order of the badger keys: inline
// keys sorted, hashed ones by their hash.
func (t *badgerTx) Objects(fn func(key string, load shared.Loader) error) error {
	prefix := t.k.objPrefix()
	var item *badger.Item
	load := func(use func([]byte) error) error { return objectData(item, len(prefix), use) }
	return eachUnder(context.Background(), t.txn, prefix, func(it *badger.Item, suffix []byte) error {
		key, err := objectKey(it, suffix)
		if err != nil {
			return err
		}
		item = it
		return fn(key, load)
	})
}

// Keys implements shared.Tx, reading values only for hashed keys.
func (t *badgerTx) Keys(fn func(key string) error) error {
	return eachUnderPrefetch(context.Background(), t.txn, t.k.objPrefix(), false, func(item *badger.Item, suffix []byte) error {
		key, err := objectKey(item, suffix)
		if err != nil {
			return err
		}
		return fn(key)
	})
}

// Indexed implements shared.Tx, in key order: the entries are read first
// (inline keys come out sorted, hashed ones by their hash, so they are
// sorted), then each object by its key.
func (t *badgerTx) Indexed(index, value string, fn func(key string, load shared.Loader) error) error {
	keys := []string{}
	n := len(t.k.indexPrefix(index))
	err := eachUnderPrefetch(context.Background(), t.txn, t.k.valuePrefix(index, value), false, func(item *badger.Item, _ []byte) error {
		_, key, err := readEntry(item, n)
		keys = append(keys, key)
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(keys)
	var key string
	load := func(use func([]byte) error) error {
		found, err := t.Object(key, use)
		if err == nil && !found {
			err = fmt.Errorf("index %q entry %q names missing object %q: %w", index, value, key, store.ErrCorrupt)
		}
		return err
	}
	for _, key = range keys {
		if err := fn(key, load); err != nil {
			return err
		}
	}
	return nil
}

// readEntry returns the index value and object key of the index entry item;
// prefixLen is the length of its index's prefix.
func readEntry(item *badger.Item, prefixLen int) (value, key string, err error) {
	v, err := valueCopy(item)
	if err != nil {
		return "", "", err
	}
	if value, key, err = parseEntry(item.Key()[prefixLen:], v); err != nil {
		return "", "", fmt.Errorf("index entry %q: %w: %w", shortKey(item.Key()), store.ErrCorrupt, err)
	}
	return value, key, nil
}

// Values implements shared.Tx: one entry per value is read, then the
// iterator seeks past the value's other entries.
func (t *badgerTx) Values(index string, fn func(value string) error) error {
	prefix := t.k.indexPrefix(index)
	return eachGroup(t.txn, prefix, func(item *badger.Item) ([]byte, error) {
		v, _, err := readEntry(item, len(prefix))
		if err == nil {
			err = fn(v)
		}
		return t.k.valuePrefix(index, v), err
	})
}

// Sample implements shared.Tx, in the order of the badger keys.
func (t *badgerTx) Sample(n int, fn func(r shared.Record) error) error {
	i := 0
	err := eachUnder(context.Background(), t.txn, t.k.objPrefix(), func(item *badger.Item, suffix []byte) error {
		if i == n {
			return errSampled
		}
		i++
		key, data, err := objectRecord(item, suffix)
		if err == nil { // else left out (see shared.Tx)
			r := shared.Record{Key: key, Data: data}
			if len(t.names) > 0 {
				r.Values, _ = readValues(t.txn, t.k, key, len(t.names))
			}
			return fn(r)
		}
		return nil
	})
	if errors.Is(err, errSampled) {
		return nil
	}
	return err
}

// errSampled ends Sample's iteration.
var errSampled = errors.New("sampled")

const allBatch = 256

// All implements shared.Tx: the value records first, then the objects,
// copied out of badger.
func (t *badgerTx) All(ctx context.Context, values bool, fn func(rs []shared.Record) error) error {
	var vals map[string][][]string
	if values && len(t.names) > 0 {
		vals = map[string][][]string{}
		err := eachValues(ctx, t.txn, t.k, len(t.names), func(key string, v [][]string) error {
			vals[key] = v
			return nil
		})
		if err != nil {
			return fmt.Errorf("read index values: %w", err)
		}
	}
	rs := make([]shared.Record, 0, allBatch)
	err := eachUnder(ctx, t.txn, t.k.objPrefix(), func(item *badger.Item, suffix []byte) error {
		key, data, err := objectRecord(item, suffix)
		if err != nil {
			return err
		}
		r := shared.Record{Key: key, Data: data}
		if vals != nil {
			var ok bool
			if r.Values, ok = vals[key]; !ok {
				return fmt.Errorf("object %q has no index values: %w: %w", key, store.ErrCorrupt, errBadRecord)
			}
		}
		if rs = append(rs, r); len(rs) == allBatch {
			if err := fn(rs); err != nil {
				return err
			}
			rs = make([]shared.Record, 0, allBatch)
		}
		return nil
	})
	if err == nil && len(rs) > 0 {
		err = fn(rs)
	}
	return err
}

// eachValues calls fn with the object key and index values (of n indexes)
// of every value record of k's generation.
func eachValues(ctx context.Context, txn *badger.Txn, k keys, n int, fn func(key string, vals [][]string) error) error {
	if n == 0 {
		return nil
	}
	return eachUnder(ctx, txn, k.valsPrefix(), func(item *badger.Item, suffix []byte) error {
		key, hashed, rest, err := readComp(suffix)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("value record %q: %w: %w", suffix, store.ErrCorrupt, errBadRecord)
		}
		if hashed {
			oi, err := txn.Get(append(k.objPrefix(), suffix...))
			if err == nil {
				key, err = objectKey(oi, suffix)
			}
			if err != nil {
				return fmt.Errorf("object of value record %q: %w: %w", suffix, store.ErrCorrupt, err)
			}
		}
		vals, err := itemValues(item, key, n)
		if err != nil {
			return err
		}
		return fn(key, vals)
	})
}

// eachImpliedEntry calls fn with every index entry (index name, value,
// object key) the value records of k's generation imply.
func eachImpliedEntry(ctx context.Context, txn *badger.Txn, k keys, names []string, fn func(index, value, key string) error) error {
	return eachValues(ctx, txn, k, len(names), func(key string, vals [][]string) error {
		return rawdb.ImpliedEntries(names, key, vals, fn)
	})
}

// eachStoredEntry calls fn with every index entry (index name, value,
// object key) stored under k's generation.
func eachStoredEntry(ctx context.Context, txn *badger.Txn, k keys, fn func(index, value, key string) error) error {
	prefix := k.entriesPrefix()
	return eachUnder(ctx, txn, prefix, func(item *badger.Item, suffix []byte) error {
		index, rest, err := readLP(suffix)
		if err != nil {
			return fmt.Errorf("index entry %q: %w: %w", shortKey(item.Key()), store.ErrCorrupt, err)
		}
		value, key, err := readEntry(item, len(item.Key())-len(rest))
		if err != nil {
			return err
		}
		return fn(index, value, key)
	})
}

var _ shared.Engine = (*space)(nil)
