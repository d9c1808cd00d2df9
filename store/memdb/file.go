package memdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Snapshot files open in this process, by cleaned absolute path. Stores of one
// file share its fileDB, so a snapshot written by any of them holds all.
var (
	filesMu sync.Mutex // guards files, opening and fileDB.refs of every file
	files   = map[string]*fileDB{}
	// opening holds the files whose first store is being opened, without
	// filesMu while it waits for the file's lock and reads the file.
	opening snapfile.Openings
)

// fileDB is every store of one snapshot file: what the next snapshot writes.
// It is safe for concurrent use.
type fileDB struct {
	path string
	refs int // open stores; guarded by filesMu
	// unlock releases the file's lock against other processes
	// (snapfile.Lock), once no store of it is open; guarded by filesMu.
	unlock func()

	// writeMu serializes snapshot writes, so a snapshot taken later is never
	// replaced by one taken earlier.
	writeMu sync.Mutex

	mu       sync.Mutex // guards sections and the fields of each section
	sections map[string]*fileSection
}

// fileSection is one store of a file. Its records come from the open store's
// current read transaction, from the frozen last transaction of a store
// closed in this process, or, for a store not opened since the file was
// read, from the file.
type fileSection struct {
	meta  store.Meta
	rv    string
	data  map[string][]byte // records read from the file; nil once opened
	open  *memStore         // the open store, or nil
	final *memdb.Txn        // the state the store was closed in, or nil
}

// loadFile reads the snapshot at path; a missing file is an empty database.
func loadFile(path string) (*fileDB, error) {
	db := &fileDB{path: path, sections: map[string]*fileSection{}}
	section := func(name string) *fileSection {
		s := db.sections[name]
		if s == nil {
			s = &fileSection{data: map[string][]byte{}}
			db.sections[name] = s
		}
		return s
	}
	headers, err := snapfile.Read(path, func(h *snapfile.Header, key string, data []byte) error {
		section(h.Name).data[key] = slices.Clone(data)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return db, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s://%s: %w", Scheme, path, err)
	}
	for _, h := range headers {
		s := section(h.Name)
		s.meta, s.rv = h.Meta, h.ResourceVersion
	}
	return db, nil
}

// NewFile opens the store named opts.Name in the snapshot file at path (an
// absolute path), creating the file on the first snapshot: the objects and
// resume point of the file's last snapshot are loaded, and a new snapshot is
// written on Close and every opts.SnapshotInterval. opts.Codec is required.
// The store is safe for concurrent use.
func NewFile(ctx context.Context, path string, opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	clean, err := snapfile.FilePath(Scheme, path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return openFile(ctx, clean, o)
}

// openFile opens store o.Name of the snapshot file at path.
func openFile(ctx context.Context, path string, o store.Options) (store.Store, error) {
	where := Scheme + "://" + path
	if o.Codec == nil {
		return nil, fmt.Errorf("store: open %s in %s: a memdb store with a file needs Options.Codec to write its snapshots: %w", o.Name, where, store.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, err)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	if err := opening.Wait(ctx, &filesMu, path, o.LockTimeout); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, err)
	}
	fdb := files[path]
	if fdb == nil {
		// The first store of the file in this process locks it against
		// other processes, before reading it, without filesMu: the
		// stores of other files open and close meanwhile, and other
		// opens of this one wait until this open is over (done runs
		// before filesMu is released).
		defer opening.Start(path)()
		var unlock func()
		var err error
		if fdb, unlock, err = snapfile.LockAndLoad(ctx, &filesMu, path, o.Name, where, o.LockTimeout, loadFile); err != nil {
			return nil, err
		}
		fdb.unlock = unlock
		defer func() {
			if fdb.refs == 0 { // the open failed: nothing holds the file
				fdb.unlock()
			}
		}()
	}
	fdb.mu.Lock()
	defer fdb.mu.Unlock()
	sec := fdb.sections[o.Name]
	if sec != nil && sec.open != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, store.ErrInUse)
	}
	want := store.MetaFor(o, FormatVersion)
	s, err := newStore(o)
	if err != nil {
		return nil, err
	}
	s.fileCodec = o.Codec
	if sec != nil {
		r, err := store.CompareMeta(o.Name, where, sec.meta, want)
		if err != nil {
			return nil, err
		}
		if r.Reset != "" {
			s.info.Reset = r.Reset
		} else {
			keyReset, err := s.load(where, sec)
			if err != nil {
				return nil, err
			}
			// As a scope change: the objects are stored under keys the
			// key function no longer computes; s stays empty.
			s.info.Reset = keyReset
		}
	}
	// Recorded only now that nothing can fail: a failed open leaves the
	// file's state as it was.
	if sec == nil {
		sec = &fileSection{}
		fdb.sections[o.Name] = sec
	}
	sec.meta, sec.data, sec.final, sec.open = want, nil, nil, s
	fdb.refs++
	files[path] = fdb
	s.file = &fileHandle{db: fdb, name: o.Name, stop: make(chan struct{})}
	if o.SnapshotInterval > 0 {
		s.file.done = make(chan struct{})
		go s.file.snapshotEvery(o.SnapshotInterval)
	}
	return s, nil
}

// load fills the new store s with the records of sec, decoded, with index
// entries computed afresh (which is also how an index set change rebuilds
// them), in one transaction. If the store's key function no longer
// computes the keys the records are stored under (see indexer.KeyCheck),
// it loads nothing and says so in keyReset.
func (s *memStore) load(where string, sec *fileSection) (keyReset string, err error) {
	op := "open " + s.info.Name + " in " + where
	var records iter.Seq2[string, []byte]
	switch {
	case sec.final != nil:
		records = txnRecords(sec.final)
	default:
		records = maps.All(sec.data)
	}
	var ops []store.Op
	var data [][]byte
	keys := indexer.NewKeyCheck(s.keyFunc)
	for key, d := range records {
		obj, err := indexer.Decode(s.fileCodec, d)
		if err != nil {
			return "", fmt.Errorf("store: %s: object %q: %w", op, key, err)
		}
		keys.Check(key, obj)
		ops = append(ops, store.Op{Type: store.OpPut, Key: key, Object: obj})
		data = append(data, d)
	}
	if r := keys.Reset(s.info.KeyFunc); r != "" {
		return r, nil
	}
	tx, err := s.begin(op)
	if err != nil {
		return "", err
	}
	defer tx.abort() // a no-op after commit
	m := metaOf(tx.r)
	// The stored encodings are kept rather than computed again.
	p := indexer.Preparer{KeyFunc: s.keyFunc, Indexes: m.set}
	ps, err := p.Prepare(op, ops)
	if err != nil {
		return "", err
	}
	for i := range ps {
		ps[i].Data = data[i]
	}
	if err := apply(tx.w, tx.r, m, ps, sec.rv, false); err != nil {
		return "", fmt.Errorf("store: %s: memdb: %w", op, err)
	}
	// The store has seen what its resume point says.
	tx.commitThen(func() { s.seen.Store(sec.rv) })
	return "", nil
}

// txnRecords yields the key and encoding of every object of txn's snapshot.
func txnRecords(txn *memdb.Txn) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		it, err := txn.Get(tableObjects, indexID)
		if err != nil {
			panic(fmt.Sprintf("memdb: scan objects: %v", err))
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			r := raw.(*objectRow)
			if !yield(r.key, r.data) {
				return
			}
		}
	}
}

// fileHandle ties an open store to its snapshot file.
type fileHandle struct {
	db   *fileDB
	name string
	stop chan struct{} // closed by close to stop snapshotEvery
	done chan struct{} // closed when snapshotEvery returns; nil without it
}

// freeze records final, the state the store is closed in, as its section's
// contents: later snapshots of the file write it.
func (f *fileHandle) freeze(final *memdb.Txn) {
	f.db.mu.Lock()
	defer f.db.mu.Unlock()
	sec := f.db.sections[f.name]
	sec.final, sec.open = final, nil
	sec.rv = metaOf(final).rv
	sec.meta.Indexes = slices.Clone(metaOf(final).set.Names())
}

// close stops the periodic snapshots, writes a last one and releases the
// file when no store of it is open.
func (f *fileHandle) close() error {
	close(f.stop)
	if f.done != nil {
		<-f.done
	}
	err := f.db.snapshot()
	filesMu.Lock()
	f.db.refs--
	if f.db.refs == 0 {
		delete(files, f.db.path)
		f.db.unlock()
	}
	filesMu.Unlock()
	if err != nil {
		return fmt.Errorf("store: close %s: %w", f.name, err)
	}
	return nil
}

func (f *fileHandle) snapshotEvery(d time.Duration) {
	defer close(f.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			if err := f.db.snapshot(); err != nil {
				klog.Background().Error(err, "Writing a snapshot failed; the previous one stays", "store", f.name, "file", f.db.path)
			}
		}
	}
}

// snapshot writes every store of the file. Each store's section comes from
// one read transaction, so its records and resume point agree; the write
// itself blocks neither commits nor reads.
func (db *fileDB) snapshot() error {
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	return snapfile.Write(db.path, db.committed())
}

// committed returns the committed state of every store of the file, as
// snapshot writes it (see there), sorted by name.
func (db *fileDB) committed() []snapfile.Section {
	db.mu.Lock()
	secs := make([]snapfile.Section, 0, len(db.sections))
	for _, name := range slices.Sorted(maps.Keys(db.sections)) {
		s := db.sections[name]
		h := snapfile.Header{Name: name, Meta: s.meta, ResourceVersion: s.rv}
		txn := s.final
		if s.open != nil {
			// freeze runs under mu before the store lets go of its
			// database, so an open store always has one.
			txn, _ = s.open.readTxn()
		}
		if txn == nil {
			secs = append(secs, snapfile.Section{Header: h, Len: len(s.data), Records: maps.All(s.data)})
			continue
		}
		m := metaOf(txn)
		h.ResourceVersion = m.rv
		h.Meta.Indexes = slices.Clone(m.set.Names())
		secs = append(secs, snapfile.Section{Header: h, Len: m.count, Records: txnRecords(txn)})
	}
	db.mu.Unlock()
	return secs
}

// DiskSize implements store.DiskSizer: the size of the store's snapshot
// file (shared by every store of the file), 0 before its first snapshot. A
// store without a file has nothing on disk, and says so with an error.
func (s *memStore) DiskSize() (int64, error) {
	if s.file == nil {
		return 0, fmt.Errorf("store: disk size of %s: a memdb store without a file keeps nothing on disk: %w", s.info.Name, store.ErrInvalid)
	}
	return snapfile.Size(s.file.db.path)
}

var _ store.DiskSizer = (*memStore)(nil)
