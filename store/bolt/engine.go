package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	shared "github.com/informerdb/informerdb/store/internal/bounded"
)

// engine is the bounded mode's storage: one store's buckets in the file,
// read in bbolt read transactions and written in bbolt write transactions
// (layout.go). The bounded store serializes its writes.
type engine struct {
	file  *file
	name  string
	codec store.Codec
	// meta is the recorded identity; Indexes follows AddIndexes.
	meta driver.Meta
}

// View implements shared.Engine.
func (e *engine) View(op string, fn func(tx shared.Tx) error) error {
	err := guard(func() error {
		return e.file.db.View(func(tx *bbolt.Tx) error {
			b, err := storeBuckets(tx, e.name)
			if err != nil {
				return err
			}
			if b == nil {
				return fmt.Errorf("store vanished from the file: %w", store.ErrCorrupt)
			}
			return fn(boltTx{b})
		})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("store: %s %s: %w", op, e.name, store.ErrClosed)
	}
	// Any failure reading the file: the hint as for corruption.
	return hinted{fmt.Errorf("store: %s %s: bolt %s: %w", op, e.name, e.file.path, err)}
}

// Commit implements shared.Engine.
func (e *engine) Commit(_ context.Context, ps []indexer.Prepared, set *indexer.IndexSet, rv string, replace bool) error {
	return updateStore(e.file, e.name, func(b *buckets) error {
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
}

// AddIndexes implements shared.Engine: every key record is rewritten with
// its values under set, and the index buckets with its entries, in one
// transaction.
func (e *engine) AddIndexes(set *indexer.IndexSet, cached func(key string) (interface{}, bool)) error {
	meta := e.meta
	meta.Indexes = append([]string(nil), set.Names()...)
	err := updateStore(e.file, e.name, func(b *buckets) error {
		return rebuildIndexes(b, set, e.codec, cached, meta)
	})
	if err != nil {
		return err
	}
	e.meta = meta
	return nil
}

// Close implements shared.Engine.
func (e *engine) Close() error { return e.file.release(e.name) }

// boltTx implements shared.Tx over a store's buckets in a read transaction.
type boltTx struct{ b *buckets }

// Object implements shared.Tx.
func (t boltTx) Object(key string, use func(data []byte) error) (bool, error) {
	bk := boltKey(key)
	rec := t.b.keys.Get(bk)
	if rec == nil {
		return false, nil
	}
	rec, err := t.b.open("key record", bk, rec)
	if err != nil {
		return false, err
	}
	seq, err := recordSeq(rec)
	if err != nil {
		return false, fmt.Errorf("key %q: %w", shorten(key), err)
	}
	data, err := objectOf(t.b, key, seq)
	if err != nil {
		return false, err
	}
	return true, use(data)
}

// Objects implements shared.Tx, in key order.
func (t boltTx) Objects(fn func(key string, load shared.Loader) error) error {
	var key string
	var seq uint64
	load := func(use func([]byte) error) error {
		data, err := objectOf(t.b, key, seq)
		if err != nil {
			return err
		}
		return use(data)
	}
	c := t.b.keys.Cursor()
	for k, rec := c.First(); k != nil; k, rec = c.Next() {
		rec, err := t.b.open("key record", k, rec)
		if err != nil {
			return err
		}
		if key, seq, err = recordIdentity(k, rec); err != nil {
			return err
		}
		if err := fn(key, load); err != nil {
			return err
		}
	}
	return nil
}

// Keys implements shared.Tx, in key order.
func (t boltTx) Keys(fn func(key string) error) error {
	c := t.b.keys.Cursor()
	for k, rec := c.First(); k != nil; k, rec = c.Next() {
		rec, err := t.b.open("key record", k, rec)
		if err != nil {
			return err
		}
		key, err := recordKey(k, rec)
		if err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
	}
	return nil
}

// Indexed implements shared.Tx, in the order of the objects' sequence
// numbers (which is also the order of their objects in the file). The
// entries name the objects' numbers: their key records are not read.
func (t boltTx) Indexed(index, value string, fn func(key string, load shared.Loader) error) error {
	ib, err := indexBucketOf(t.b, index)
	if err != nil {
		return err
	}
	var key string
	var seq uint64
	load := func(use func([]byte) error) error {
		data, err := objectOf(t.b, key, seq)
		if err != nil {
			return err
		}
		return use(data)
	}
	prefix := indexEntryPrefix(value)
	c := ib.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+seqLen {
			return fmt.Errorf("malformed index entry %q: %w", k, store.ErrCorrupt)
		}
		v, err := t.b.open("index entry", k, v)
		if err != nil {
			return err
		}
		key, seq = string(v), binary.BigEndian.Uint64(k[len(prefix):])
		if err := fn(key, load); err != nil {
			return err
		}
	}
	return nil
}

// Values implements shared.Tx. It visits one entry per distinct value,
// seeking past the others. A long value, kept under its digest, is read
// from the key record of the entry's object, whose values are aligned with
// the index names the transaction's metadata records.
func (t boltTx) Values(index string, fn func(value string) error) error {
	ib, err := indexBucketOf(t.b, index)
	if err != nil {
		return err
	}
	pos, nindexes := -1, 0
	c := ib.Cursor()
	for k, key := c.First(); k != nil; {
		v, _, err := splitIndexEntry(k)
		if err != nil {
			return err
		}
		if key, err = t.b.open("index entry", k, key); err != nil {
			return err
		}
		value := string(v)
		if isDigest(v) {
			if pos < 0 {
				m, err := getMeta(t.b)
				if err != nil {
					return err
				}
				pos, nindexes = slices.Index(m.Indexes, index), len(m.Indexes)
			}
			if value, err = longValue(t.b, string(key), pos, nindexes, v); err != nil {
				return err
			}
		}
		if err := fn(value); err != nil {
			return err
		}
		end := prefixEnd(k[:len(k)-seqLen])
		if end == nil {
			break
		}
		k, key = c.Seek(end)
	}
	return nil
}

var _ shared.Engine = (*engine)(nil)
