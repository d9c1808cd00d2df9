package memdb

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/internal/writes"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Scheme is the URL scheme of this backend.
const Scheme = "memdb"

// FormatVersion is the version of the records of snapshot files (each
// object's codec encoding under its key), recorded in their metadata and
// reported in store.Info.
const FormatVersion = 1

// backend holds the snapshot files this process has open, and opens URLs.
var backend = &snapfile.Backend{Scheme: Scheme, FormatVersion: FormatVersion, New: New, Load: load}

func init() {
	store.Register(Scheme, backend)
}

// New returns an empty store kept in a go-memdb database, without a file.
// opts may be nil. The store is safe for concurrent use; see the package
// documentation.
func New(opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	set, err := indexer.NewIndexSet(o.Indexers)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", o.Name, err)
	}
	return newStore(o, set)
}

// newStore returns an empty store for o, which has its defaults filled in,
// with the index set of o.Indexers.
func newStore(o store.Options, set *indexer.IndexSet) (*memStore, error) {
	primary, err := memdb.NewMemDB(schema())
	if err != nil {
		// The schema is a constant: this is a bug, not bad input.
		return nil, fmt.Errorf("store: open %s: memdb schema: %w", o.Name, err)
	}
	// A snapshot of a fresh database does not track mutations for watch
	// channels, which nobody uses here and which cost every write
	// allocations.
	db := primary.Snapshot()
	txn := db.Txn(true)
	if err := txn.Insert(tableMeta, &metaRow{set: set}); err != nil {
		txn.Abort()
		return nil, fmt.Errorf("store: open %s: memdb: %w", o.Name, err)
	}
	txn.Commit()

	s := &memStore{db: db, info: driver.MetaFor(o, FormatVersion).Info(Scheme, o.Name, ""), keyFunc: o.KeyFunc, codec: o.Codec}
	s.info.Indexes = nil // the meta row's
	s.Writes = writes.New(o.Name, s.write, &s.seen)
	s.view.Store(db.Txn(false))
	return s, nil
}

// memStore is a store.Store in a go-memdb database (see the package
// documentation for its concurrency).
type memStore struct {
	// Writes maps the write methods onto write; ResourceVersion is the
	// meta row's, not Writes'.
	writes.Writes

	info    store.Info // static parts; ResourceVersion and Indexes come from the meta row
	keyFunc cache.KeyFunc
	codec   store.Codec // nil unless given in Options; Export uses it
	// fileCodec encodes every put in file mode (nil without a file), so a
	// snapshot only copies bytes and an object the codec rejects fails its
	// write, not a later snapshot.
	fileCodec store.Codec
	file      *snapfile.Handle // nil without a file

	// writeMu serializes writers and Close: views must be published in
	// commit order, which go-memdb's own writer lock does not cover.
	writeMu sync.Mutex
	// db is the database; nil once closed, so a closed store lets its
	// contents be garbage collected. Guarded by writeMu.
	db *memdb.MemDB
	// view is a read transaction of the last committed state, shared by
	// every reader (saving each read two allocations), or nil once the
	// store is closed. go-memdb's read transactions never change their own
	// fields (v1.3.5; TestSnapshotReads runs many readers on one view under
	// the race detector).
	view atomic.Pointer[memdb.Txn]
	// closedIndexers are the store's indexers when it closed, which
	// GetIndexers still reports. Written before view is cleared, whose
	// atomic store publishes it.
	closedIndexers cache.Indexers
	// final is, in file mode, the read transaction of the state the store
	// closed in, which the file's snapshots keep writing (Committed).
	// Written before view is cleared, as closedIndexers.
	final *memdb.Txn
	// seen is LastStoreSyncResourceVersion, moved by each write once
	// readers see it.
	seen writes.Seen
}

var (
	_ store.Store    = (*memStore)(nil)
	_ store.Exporter = (*memStore)(nil)
)

func (s *memStore) closedErr(op string) error {
	return fmt.Errorf("store: %s %s: %w", op, s.info.Name, store.ErrClosed)
}

// readTxn returns the read transaction of the last committed state, or
// false once the store is closed.
func (s *memStore) readTxn() (*memdb.Txn, bool) {
	v := s.view.Load()
	return v, v != nil
}

// metaOf returns the meta row of txn's snapshot. There is always one: New
// inserts it and writers replace it.
func metaOf(txn *memdb.Txn) *metaRow {
	raw, err := txn.First(tableMeta, indexID)
	if err != nil || raw == nil {
		panic(fmt.Sprintf("memdb: meta row missing (err %v): the store is corrupt", err))
	}
	return raw.(*metaRow)
}

// Close implements store.Store. In file mode it writes a last snapshot, and
// returns the error of that write.
func (s *memStore) Close() error {
	// Wait for a running write: it commits before the store closes.
	s.writeMu.Lock()
	if s.db == nil {
		s.writeMu.Unlock()
		return nil
	}
	if s.file != nil {
		// Kept for the file before letting go of the view, so a snapshot
		// running meanwhile still finds it.
		s.final = s.view.Load()
	}
	s.closedIndexers = metaOf(s.view.Load()).set.Indexers()
	s.view.Store(nil)
	s.db = nil
	s.writeMu.Unlock()
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}

// Export implements store.Exporter: the records and Info of one read
// transaction, encoded with Options.Codec.
func (s *memStore) Export(ctx context.Context, fn func(store.Record) error) (store.Info, error) {
	if s.codec == nil {
		return store.Info{}, fmt.Errorf("store: export %s: the store was opened without Options.Codec, which export needs: %w", s.info.Name, store.ErrInvalid)
	}
	txn, ok := s.readTxn()
	if !ok {
		return store.Info{}, s.closedErr("export")
	}
	info := s.infoOf(txn)
	it, err := txn.Get(tableObjects, indexID)
	if err != nil {
		return store.Info{}, fmt.Errorf("store: export %s: memdb: %w", s.info.Name, err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if err := ctx.Err(); err != nil {
			return store.Info{}, fmt.Errorf("store: export %s: %w", s.info.Name, err)
		}
		r := raw.(*objectRow)
		data := r.data // in file mode, encoded when it was written
		var err error
		if data == nil {
			data, err = indexer.Encode(s.codec, r.obj)
		}
		if err != nil {
			return store.Info{}, fmt.Errorf("store: export %s: encode %s with %s codec: %w", s.info.Name, r.key, s.codec.Name(), err)
		}
		if err := fn(store.Record{Key: r.key, Data: data, Values: r.vals}); err != nil {
			return store.Info{}, fmt.Errorf("store: export %s: %w", s.info.Name, err)
		}
	}
	return info, nil
}

// infoOf returns the Info of txn's snapshot.
func (s *memStore) infoOf(txn *memdb.Txn) store.Info {
	info := s.info
	m := metaOf(txn)
	info.ResourceVersion = m.rv
	info.Indexes = append([]string{}, m.set.Names()...)
	return info
}

// Info implements store.Store.
func (s *memStore) Info() store.Info {
	info := s.info
	txn, ok := s.readTxn()
	if !ok {
		return info
	}
	return s.infoOf(txn)
}

// ResourceVersion implements store.Store.
func (s *memStore) ResourceVersion() string {
	txn, ok := s.readTxn()
	if !ok {
		return ""
	}
	return metaOf(txn).rv
}

// Resync implements cache.Store; it does nothing but report a closed store.
func (s *memStore) Resync() error {
	if _, ok := s.readTxn(); !ok {
		return s.closedErr("resync")
	}
	return nil
}

// Get implements cache.Store.
func (s *memStore) Get(obj interface{}) (interface{}, bool, error) {
	return indexer.GetByObject(s.keyFunc, obj, s.GetByKey)
}

// GetByKey implements cache.Store.
func (s *memStore) GetByKey(key string) (interface{}, bool, error) {
	txn, ok := s.readTxn()
	if !ok {
		return nil, false, s.closedErr("get")
	}
	raw, err := txn.First(tableObjects, indexID, key)
	if err != nil {
		return nil, false, fmt.Errorf("store: get %s: memdb: %w", key, err)
	}
	if raw == nil {
		return nil, false, nil
	}
	return raw.(*objectRow).obj, true, nil
}

// List implements cache.Store. A closed store lists nothing.
func (s *memStore) List() []interface{} {
	txn, ok := s.readTxn()
	if !ok {
		return nil
	}
	list := make([]interface{}, 0, metaOf(txn).count)
	for r := range objects(txn) {
		list = append(list, r.obj)
	}
	return list
}

// ListKeys implements cache.Store. A closed store lists nothing.
func (s *memStore) ListKeys() []string {
	txn, ok := s.readTxn()
	if !ok {
		return nil
	}
	list := make([]string, 0, metaOf(txn).count)
	for r := range objects(txn) {
		list = append(list, r.key)
	}
	return list
}

// objects yields every object row of txn's snapshot, in key order.
func objects(txn *memdb.Txn) iter.Seq[*objectRow] {
	return func(yield func(*objectRow) bool) {
		it, err := txn.Get(tableObjects, indexID)
		if err != nil {
			// Only an unknown table or index fails, and the schema is fixed.
			panic(fmt.Sprintf("memdb: scan objects: %v", err))
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			if !yield(raw.(*objectRow)) {
				return
			}
		}
	}
}

// forEachEntry calls fn for every entry of index (and of value, when
// withValue) in txn's snapshot, ordered by value, then key.
func forEachEntry(txn *memdb.Txn, index, value string, withValue bool, fn func(*entryRow)) {
	var it memdb.ResultIterator
	var err error
	if withValue {
		it, err = txn.Get(tableEntries, indexIDPrefix, index, value)
	} else {
		it, err = txn.Get(tableEntries, indexIDPrefix, index)
	}
	if err != nil {
		panic(fmt.Sprintf("memdb: scan entries: %v", err))
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		fn(raw.(*entryRow))
	}
}

// indexRead returns the read transaction of the last commit, its index set
// and the position in it of the index name, which must exist.
func (s *memStore) indexRead(op, name string) (*memdb.Txn, *indexer.IndexSet, int, error) {
	txn, ok := s.readTxn()
	if !ok {
		return nil, nil, 0, s.closedErr(op)
	}
	set := metaOf(txn).set
	i, ok := set.Position(name)
	if !ok {
		return nil, nil, 0, fmt.Errorf("store: %s: index %q does not exist: %w", op, name, store.ErrNotFound)
	}
	return txn, set, i, nil
}

// ByIndex implements cache.Indexer.
func (s *memStore) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	txn, _, _, err := s.indexRead("by index", indexName)
	if err != nil {
		return nil, err
	}
	list := []interface{}{}
	forEachEntry(txn, indexName, indexedValue, true, func(e *entryRow) { list = append(list, e.obj) })
	return list, nil
}

// IndexKeys implements cache.Indexer. The keys are sorted, as client-go's.
func (s *memStore) IndexKeys(indexName, indexedValue string) ([]string, error) {
	txn, _, _, err := s.indexRead("index keys", indexName)
	if err != nil {
		return nil, err
	}
	keys := []string{}
	forEachEntry(txn, indexName, indexedValue, true, func(e *entryRow) { keys = append(keys, e.key) })
	return keys, nil
}

// Index implements cache.Indexer: the objects that share at least one value
// of the named index with obj, each once.
func (s *memStore) Index(indexName string, obj interface{}) ([]interface{}, error) {
	txn, set, i, err := s.indexRead("index", indexName)
	if err != nil {
		return nil, err
	}
	vals, err := set.LookupValues(i, obj)
	if err != nil {
		return nil, err
	}
	list := []interface{}{}
	if len(vals) == 1 {
		forEachEntry(txn, indexName, vals[0], true, func(e *entryRow) { list = append(list, e.obj) })
		return list, nil
	}
	// Several values may lead to the same object: return it once.
	seen := map[string]struct{}{}
	for _, v := range vals {
		forEachEntry(txn, indexName, v, true, func(e *entryRow) {
			if _, dup := seen[e.key]; !dup {
				seen[e.key] = struct{}{}
				list = append(list, e.obj)
			}
		})
	}
	return list, nil
}

// ListIndexFuncValues implements cache.Indexer: the values of the named index
// that at least one object has; empty, not nil, for an unknown index, as
// client-go; nil for a closed store.
func (s *memStore) ListIndexFuncValues(indexName string) []string {
	txn, ok := s.readTxn()
	if !ok {
		return nil
	}
	if _, ok := metaOf(txn).set.Position(indexName); !ok {
		return []string{}
	}
	out := []string{}
	// Entries are ordered by value, so the entries of one value are
	// adjacent.
	forEachEntry(txn, indexName, "", false, func(e *entryRow) {
		if len(out) == 0 || out[len(out)-1] != e.value {
			out = append(out, e.value)
		}
	})
	return out
}

// GetIndexers implements cache.Indexer. It returns a copy: the store's index
// set only changes through AddIndexers.
func (s *memStore) GetIndexers() cache.Indexers {
	txn, ok := s.readTxn()
	if !ok {
		return maps.Clone(s.closedIndexers)
	}
	return metaOf(txn).set.Indexers()
}
