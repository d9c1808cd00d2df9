package bolt

import (
	"bytes"
	"cmp"
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
	shared "github.com/informerdb/informerdb/store/internal/engine"
	"github.com/informerdb/informerdb/store/internal/loadcheck"
)

// engine is a store's storage, in either mode: its buckets in the file
// (layout.go). The shared store serializes its writes.
type engine struct {
	file *file
	name string
	// meta is the recorded identity; Indexes follows SetIndexes.
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

// Commit implements shared.Engine. It reads what each change replaces from
// the file (writeOps), even if diffed, so the file stays self-consistent.
func (e *engine) Commit(_ context.Context, cs []indexer.Change, _ bool, set *indexer.IndexSet, rv string, replace bool) error {
	return updateStore(e.file, e.name, func(b *buckets) error {
		ops := make([]keyOp, len(cs))
		for i := range cs {
			ops[i] = keyOp{k: boltKey(cs[i].Key), p: &cs[i].Prepared}
		}
		write := writeOps
		if replace {
			write = replaceAll
		}
		if err := write(b, set.Names(), ops); err != nil {
			return err
		}
		if rv != "" {
			return putRV(b, rv)
		}
		return nil
	})
}

// SetIndexes implements shared.Engine, in one transaction.
func (e *engine) SetIndexes(_ context.Context, set *indexer.IndexSet, values map[string][][]string) error {
	meta := e.meta
	meta.Indexes = append([]string(nil), set.Names()...)
	err := updateStore(e.file, e.name, func(b *buckets) error {
		return writeIndexes(b, set, func(key string, _ uint64) ([][]string, error) {
			v, ok := values[key]
			if !ok {
				return nil, fmt.Errorf("object %q is stored but has no index values: %w", shorten(key), store.ErrCorrupt)
			}
			return v, nil
		}, meta)
	})
	if err != nil {
		return err
	}
	e.meta = meta
	return nil
}

// Empty implements shared.Engine, in one transaction.
func (e *engine) Empty(why string) error {
	loadcheck.LogKeyReset(e.name, e.file.path, why)
	err := updateStore(e.file, e.name, func(b *buckets) error {
		if err := b.clear(e.meta.Indexes); err != nil {
			return err
		}
		return putRV(b, "")
	})
	if err != nil {
		return fmt.Errorf("store: open %s in %s: empty the store (%s): %w", e.name, e.file.path, why, err)
	}
	return nil
}

// Close implements shared.Engine.
func (e *engine) Close() error { return e.file.release(e.name) }

// updateStore runs fn on the buckets of the store name in one write
// transaction of f (see file.update).
func updateStore(f *file, name string, fn func(b *buckets) error) error {
	err := guard(func() error {
		return f.update(func(tx *bbolt.Tx) error {
			b, err := storeBuckets(tx, name)
			if err != nil {
				return err
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
	load := t.loaderOf(&key, &seq)
	return eachIdentity(t.b, func(_ []byte, k string, s uint64) error {
		key, seq = k, s
		return fn(key, load)
	})
}

// loaderOf returns the Loader of the object *key, *seq name when it is
// called: one Loader for a whole walk.
func (t boltTx) loaderOf(key *string, seq *uint64) shared.Loader {
	return func(use func([]byte) error) error {
		data, err := objectOf(t.b, *key, *seq)
		if err != nil {
			return err
		}
		return use(data)
	}
}

// Keys implements shared.Tx, in key order.
func (t boltTx) Keys(fn func(key string) error) error {
	return eachIdentity(t.b, func(_ []byte, key string, _ uint64) error { return fn(key) })
}

// Indexed implements shared.Tx, in the order of the objects' sequence
// numbers, which the entries hold: the key records are not read.
func (t boltTx) Indexed(index, value string, fn func(key string, load shared.Loader) error) error {
	ib, err := indexBucketOf(t.b, index)
	if err != nil {
		return err
	}
	var key string
	var seq uint64
	load := t.loaderOf(&key, &seq)
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

// Values implements shared.Tx: one entry per distinct value (eachEntry).
func (t boltTx) Values(index string, fn func(value string) error) error {
	ib, err := indexBucketOf(t.b, index)
	if err != nil {
		return err
	}
	indexes := func() ([]string, error) {
		m, err := getMeta(t.b)
		return m.Indexes, err
	}
	return eachEntry(t.b, ib, index, indexes, true, func(value, _ string) error { return fn(value) })
}

// Sample implements shared.Tx, in key order.
func (t boltTx) Sample(n int, fn func(r shared.Record) error) error {
	m, err := getMeta(t.b)
	if err != nil {
		return err
	}
	c := t.b.keys.Cursor()
	for k, rec := c.First(); k != nil && n > 0; k, rec = c.Next() {
		n--
		key, seq, vals, err := t.b.keyRecord(k, rec, len(m.Indexes))
		if err != nil {
			continue
		}
		data, err := objectOf(t.b, key, seq)
		if err != nil {
			continue
		}
		if err := fn(shared.Record{Key: key, Values: vals, Data: data}); err != nil {
			return err
		}
	}
	return nil
}

// allBatch is how many records All hands over at a time.
const allBatch = 256

// All implements shared.Tx: it joins keys/ and objects/ (joinRecords), then
// hands the records over in the order of objects/ in the file, the objects
// read straight from the memory map.
func (t boltTx) All(_ context.Context, _ bool, fn func(rs []shared.Record) error) error {
	items, err := joinRecords(t.b)
	if err != nil {
		return err
	}
	m, err := getMeta(t.b)
	if err != nil {
		return err
	}
	nindexes := len(m.Indexes)
	for lo := 0; lo < len(items); lo += allBatch {
		rs := make([]shared.Record, min(allBatch, len(items)-lo))
		for i := range rs {
			it := &items[lo+i]
			_, long, vals, err := decodeKeyRecord(it.rec, nindexes)
			if err != nil {
				return fmt.Errorf("object %q: %w", shorten(string(it.key)), err)
			}
			key, err := keyOf(it.key, long)
			if err != nil {
				return err
			}
			rs[i] = shared.Record{Key: key, Values: vals, Data: it.data}
		}
		if err := fn(rs); err != nil {
			return err
		}
	}
	return nil
}

// joined is a key record with its object, memory-mapped.
type joined struct {
	key  []byte
	rec  []byte // the key record
	seq  uint64
	data []byte // the object
}

// joinRecords returns every key record of b with its object, reading
// objects/ in order; a record or object without the other is ErrCorrupt.
func joinRecords(b *buckets) ([]joined, error) {
	var items []joined
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
		items = append(items, joined{key: k, rec: rec, seq: seq})
	}
	// Replace numbers objects in key order: then this is sorted already.
	bySeq := func(a, b joined) int { return cmp.Compare(a.seq, b.seq) }
	if !slices.IsSortedFunc(items, bySeq) {
		slices.SortFunc(items, bySeq)
	}
	var orphan error
	i := 0
	oc := b.objects.Cursor()
	for sk, data := oc.First(); sk != nil; sk, data = oc.Next() {
		if len(sk) != seqLen {
			return nil, fmt.Errorf("malformed object key %q: %w", sk, store.ErrCorrupt)
		}
		seq := binary.BigEndian.Uint64(sk)
		for i < len(items) && items[i].seq < seq {
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
	// A damaged record usually has a wrong number: report the key of the
	// first record without its object before an object without a record.
	for _, it := range items {
		if it.data == nil {
			return nil, fmt.Errorf("object %q: its object %d is missing: %w", shorten(string(it.key)), it.seq, store.ErrCorrupt)
		}
	}
	if orphan != nil {
		return nil, orphan
	}
	return items, nil
}

var _ shared.Engine = (*engine)(nil)
