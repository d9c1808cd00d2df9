package memdb

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/writes"
	"github.com/informerdb/informerdb/store"
)

// writeTx is a write in progress: the write transaction and the committed
// state it starts from. It holds the store's writeMu until commit or abort.
type writeTx struct {
	s *memStore
	w *memdb.Txn
	// r reads the state w starts from. Writes read from r, never from w:
	// go-memdb answers a read in a write transaction with changes from a
	// clone of the radix tree, which drops its cache of nodes already
	// copied, so every later insert would copy its whole path again.
	r    *memdb.Txn
	done bool
}

// begin starts a write, waiting for a running one. It fails once the store
// is closed.
func (s *memStore) begin(op string) (*writeTx, error) {
	s.writeMu.Lock()
	if s.db == nil {
		s.writeMu.Unlock()
		return nil, s.closedErr(op)
	}
	// With writeMu held, the view is exactly the committed state.
	return &writeTx{s: s, w: s.db.Txn(true), r: s.view.Load()}, nil
}

// commitThen commits the write, publishes its state to readers and runs
// then, when not nil, before the next write starts.
func (t *writeTx) commitThen(then func()) {
	t.w.Commit()
	t.s.view.Store(t.s.db.Txn(false))
	if then != nil {
		then()
	}
	t.done = true
	t.s.writeMu.Unlock()
}

// abort drops the write; a no-op after commit or abort.
func (t *writeTx) abort() {
	if t.done {
		return
	}
	t.w.Abort()
	t.done = true
	t.s.writeMu.Unlock()
}

// write validates ops, then applies them and, when rv is not empty, the new
// resume point in one memdb write transaction. With replace, ops are the
// complete new contents.
func (s *memStore) write(ctx context.Context, op string, ops []store.Op, rv string, replace bool, rule writes.Rule) error {
	return s.writePrepared(ctx, op, ops, nil, nil, rv, replace, rule)
}

// writePrepared is write with ops already prepared against set (ps), when
// set is not nil: they are used if the store's index set is still set.
func (s *memStore) writePrepared(ctx context.Context, op string, ops []store.Op, set *indexer.IndexSet, ps []indexer.Prepared, rv string, replace bool, rule writes.Rule) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	// Prepare before taking the write lock, so that key and index functions
	// do not hold up other writers; if AddIndexers changed the index set
	// meanwhile, prepare again.
	if set == nil {
		txn, ok := s.readTxn()
		if !ok {
			return s.closedErr(op)
		}
		set = metaOf(txn).set
	}
	for {
		if ps == nil {
			var err error
			if ps, err = s.prepare(op, ops, set); err != nil {
				return err
			}
		}
		tx, err := s.begin(op)
		if err != nil {
			return err
		}
		m := metaOf(tx.r)
		if m.set != set {
			tx.abort()
			set, ps = m.set, nil
			continue
		}
		if err := apply(tx.w, tx.r, m, ps, rv, replace); err != nil {
			tx.abort()
			return fmt.Errorf("store: %s: memdb: %w", op, err)
		}
		tx.commitThen(func() {
			var last interface{} // the object whose resourceVersion the store sees
			if n := len(ps); n > 0 {
				last = ps[n-1].Object
			}
			s.seen.After(last, rv, rule)
		})
		return nil
	}
}

// apply makes the changes of one write inside w; r reads the state w started
// from. An error (only a broken schema could cause one) leaves w to be
// aborted.
func apply(w, r *memdb.Txn, m *metaRow, ps []indexer.Prepared, rv string, replace bool) error {
	names := m.set.Names()
	count := m.count
	// current holds the rows of keys this write already changed (nil for
	// deleted), which r does not see.
	var current map[string]*objectRow
	if len(ps) > 1 || replace {
		current = make(map[string]*objectRow, len(ps))
	}
	if replace {
		keep := make(map[string]struct{}, len(ps))
		for i := range ps {
			keep[ps[i].Key] = struct{}{}
		}
		// r is the state w started from, which w's changes do not touch.
		for row := range objects(r) {
			if _, ok := keep[row.key]; ok {
				continue
			}
			if err := deleteRow(w, names, row); err != nil {
				return err
			}
			current[row.key] = nil
			count--
		}
	}
	for i := range ps {
		p := &ps[i]
		old, changed := current[p.Key]
		if !changed {
			raw, err := r.First(tableObjects, indexID, p.Key)
			if err != nil {
				return err
			}
			old, _ = raw.(*objectRow)
		}
		switch p.Type {
		case store.OpPut:
			row, err := putRow(w, names, old, p)
			if err != nil {
				return err
			}
			if old == nil {
				count++
			}
			if current != nil {
				current[p.Key] = row
			}
		case store.OpDelete:
			if old != nil {
				if err := deleteRow(w, names, old); err != nil {
					return err
				}
				count--
			}
			if current != nil {
				current[p.Key] = nil
			}
		}
	}
	if rv != "" || count != m.count {
		next := &metaRow{rv: m.rv, set: m.set, count: count}
		if rv != "" {
			next.rv = rv
		}
		if err := w.Insert(tableMeta, next); err != nil {
			return err
		}
	}
	return nil
}

// putRow stores p's object and its index entries, replacing old (nil when the
// key is new) and the entries old no longer has.
func putRow(txn *memdb.Txn, names []string, old *objectRow, p *indexer.Prepared) (*objectRow, error) {
	row := &objectRow{id: []byte(p.Key), key: p.Key, obj: p.Object, vals: p.Values, data: p.Data}
	if err := txn.Insert(tableObjects, row); err != nil {
		return nil, err
	}
	if old != nil {
		if err := deleteEntries(txn, names, p.Key, old.vals, p.Values); err != nil {
			return nil, err
		}
	}
	// Entries carry the object, so even unchanged values are rewritten.
	return row, insertEntries(txn, names, row, nil)
}

// insertEntries inserts the entries of row, for every index or, when only is
// not nil, for the indexes at the positions it lists.
func insertEntries(txn *memdb.Txn, names []string, row *objectRow, only []int) error {
	for i, vs := range row.vals {
		if only != nil && !slices.Contains(only, i) {
			continue
		}
		for _, v := range vs {
			e := &entryRow{id: entryID(names[i], v, row.key), value: v, key: row.key, obj: row.obj}
			if err := txn.Insert(tableEntries, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteRow removes r and its index entries.
func deleteRow(txn *memdb.Txn, names []string, r *objectRow) error {
	if err := txn.Delete(tableObjects, r); err != nil {
		return fmt.Errorf("delete %s: %w", r.key, err)
	}
	return deleteEntries(txn, names, r.key, r.vals, nil)
}

// deleteEntries deletes the entries of key for its values vals, but for the
// values keep (aligned with vals, when not nil) still holds. Values an index
// function repeats have one entry.
func deleteEntries(txn *memdb.Txn, names []string, key string, vals, keep [][]string) error {
	for i, vs := range vals {
		for j, v := range vs {
			if slices.Contains(vs[:j], v) || keep != nil && slices.Contains(keep[i], v) {
				continue
			}
			if err := txn.Delete(tableEntries, &entryRow{id: entryID(names[i], v, key)}); err != nil {
				return fmt.Errorf("delete entry %q=%q of %s: %w", names[i], v, key, err)
			}
		}
	}
	return nil
}

// prepare validates and encodes ops against set: keys, index values and,
// with a file, encodings.
func (s *memStore) prepare(op string, ops []store.Op, set *indexer.IndexSet) ([]indexer.Prepared, error) {
	p := indexer.Preparer{KeyFunc: s.keyFunc, Indexes: set, Codec: s.fileCodec}
	return p.Prepare(op, ops)
}

// PrepareBatch implements store.BatchPreparer.
func (s *memStore) PrepareBatch(b store.Batch) (store.PreparedBatch, error) {
	txn, ok := s.readTxn()
	if !ok {
		return nil, s.closedErr("commit")
	}
	set := metaOf(txn).set
	ps, err := s.prepare("commit", b.Ops, set)
	if err != nil {
		return nil, err
	}
	return &preparedBatch{s: s, b: b, set: set, ps: ps}, nil
}

// preparedBatch is a Commit whose operations are prepared.
type preparedBatch struct {
	s   *memStore
	b   store.Batch
	set *indexer.IndexSet // the index set ps were prepared against
	ps  []indexer.Prepared
}

// Commit implements store.PreparedBatch.
func (pb *preparedBatch) Commit(ctx context.Context) error {
	return pb.s.writePrepared(ctx, "commit", pb.b.Ops, pb.set, pb.ps, pb.b.ResourceVersion, false, writes.CommitRule(pb.b))
}

var _ store.BatchPreparer = (*memStore)(nil)

// AddIndexers implements cache.Indexer: in one write transaction, the new
// indexes are added to the index set and backfilled from every stored object.
// An index function that fails on any object, or a name already in use
// (store.ErrIndexExists), leaves the store unchanged.
func (s *memStore) AddIndexers(newIndexers cache.Indexers) error {
	tx, err := s.begin("add indexers")
	if err != nil {
		return err
	}
	defer tx.abort() // a no-op after commit
	txn, rtxn := tx.w, tx.r
	m := metaOf(rtxn)
	set, err := m.set.With(newIndexers)
	if err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	if len(newIndexers) == 0 {
		return nil // nothing to add: do not rewrite every row
	}
	// Where each index of the new set was in the old one, or -1.
	from := make([]int, set.Len())
	var added []int
	for i, name := range set.Names() {
		j, ok := m.set.Position(name)
		if !ok {
			j = -1
			added = append(added, i)
		}
		from[i] = j
	}
	rows := slices.Collect(objects(rtxn))
	// Compute every new value before any insert, so that a failure aborts
	// cheaply.
	vals := make([][][]string, len(rows))
	for n, r := range rows {
		v := make([][]string, set.Len())
		for i, j := range from {
			if j >= 0 {
				// Stored values are kept, not recomputed: the entries
				// were made from them.
				v[i] = r.vals[j]
				continue
			}
			v[i], err = set.ValuesOf(i, r.key, r.obj)
			if err != nil {
				return fmt.Errorf("store: add indexers: backfill: %w", err)
			}
		}
		vals[n] = v
	}
	newNames := set.Names()
	for n, r := range rows {
		row := &objectRow{id: r.id, key: r.key, obj: r.obj, vals: vals[n], data: r.data}
		if err := txn.Insert(tableObjects, row); err != nil {
			return fmt.Errorf("store: add indexers: memdb: %w", err)
		}
		if err := insertEntries(txn, newNames, row, added); err != nil {
			return fmt.Errorf("store: add indexers: memdb: %w", err)
		}
	}
	if err := txn.Insert(tableMeta, &metaRow{rv: m.rv, set: set, count: m.count}); err != nil {
		return fmt.Errorf("store: add indexers: memdb: %w", err)
	}
	tx.commitThen(nil)
	return nil
}
