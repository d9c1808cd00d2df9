package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Snapshot files open in this process, by cleaned absolute path. Stores of
// one file share its fileDB, so a snapshot written by any of them holds all.
var (
	filesMu sync.Mutex // guards files, opening, and fileDB.refs and section.open of every file
	files   = map[string]*fileDB{}
	// opening holds the files whose first store is being opened, without
	// filesMu while it waits for the file's lock and reads the file.
	opening snapfile.Openings
)

// fileDB is the committed state of every store of one snapshot file: what the
// next snapshot writes. It is safe for concurrent use.
type fileDB struct {
	path string
	refs int // open stores; guarded by filesMu
	// unlock releases the file's lock against other processes
	// (snapfile.Lock), once no store of it is open; guarded by filesMu.
	unlock func()

	// writeMu serializes snapshot writes, so a snapshot taken later is never
	// replaced by one taken earlier.
	writeMu sync.Mutex

	mu       sync.Mutex // guards sections and their contents
	sections map[string]*section
}

// section is one store's committed state: encoded objects, resume point and
// identity. Data slices are never modified once stored, so a snapshot can
// share them.
type section struct {
	meta store.Meta
	rv   string
	data map[string][]byte
	open bool // guarded by filesMu
}

// loadFile reads the snapshot at path; a missing file is an empty database.
func loadFile(path string) (*fileDB, error) {
	db := &fileDB{path: path, sections: map[string]*section{}}
	headers, err := snapfile.Read(path, func(h *snapfile.Header, key string, data []byte) error {
		s := db.sections[h.Name]
		if s == nil {
			s = &section{data: map[string][]byte{}}
			db.sections[h.Name] = s
		}
		s.data[key] = slices.Clone(data)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return db, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: open memory://%s: %w", path, err)
	}
	for _, h := range headers {
		s := db.sections[h.Name]
		if s == nil {
			s = &section{data: map[string][]byte{}}
			db.sections[h.Name] = s
		}
		s.meta, s.rv = h.Meta, h.ResourceVersion
	}
	return db, nil
}

// openFile opens store o.Name of the snapshot file at path.
func openFile(ctx context.Context, path string, o store.Options) (store.Store, error) {
	where := "memory://" + path
	if o.Codec == nil {
		return nil, fmt.Errorf("store: open %s in %s: a memory store with a file needs Options.Codec to write its snapshots: %w", o.Name, where, store.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, err)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	if err := opening.Wait(ctx, &filesMu, path, o.LockTimeout); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, err)
	}
	db := files[path]
	if db == nil {
		// The first store of the file in this process locks it against
		// other processes, before reading it, without filesMu: the
		// stores of other files open and close meanwhile, and other
		// opens of this one wait until this open is over (done runs
		// before filesMu is released).
		defer opening.Start(path)()
		var unlock func()
		var err error
		if db, unlock, err = snapfile.LockAndLoad(ctx, &filesMu, path, o.Name, where, o.LockTimeout, loadFile); err != nil {
			return nil, err
		}
		db.unlock = unlock
		defer func() {
			if db.refs == 0 { // the open failed: nothing holds the file
				db.unlock()
			}
		}()
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	sec := db.sections[o.Name]
	if sec != nil && sec.open {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, store.ErrInUse)
	}
	want := store.MetaFor(o, FormatVersion)
	info := baseInfo(o)
	if sec == nil {
		sec = &section{data: map[string][]byte{}}
	} else {
		r, err := store.CompareMeta(o.Name, where, sec.meta, want)
		if err != nil {
			return nil, err
		}
		if r.Reset != "" {
			info.Reset = r.Reset
			sec = &section{data: map[string][]byte{}}
		}
	}
	cache, keyReset, err := decodeSection(where, o, sec)
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		// As a scope change: the objects are stored under keys the key
		// function no longer computes, and cache is empty.
		info.Reset = keyReset
		sec = &section{data: map[string][]byte{}}
	}
	info.ResourceVersion = sec.rv
	fst := &fileStore{db: db, name: o.Name, stop: make(chan struct{})}
	base, err := indexer.NewBase(indexer.BaseConfig{Info: info, Persister: fst, Options: o, Cache: cache})
	if err != nil {
		return nil, err
	}
	// Committed only now that nothing can fail: a failed open leaves the
	// file's state as it was.
	sec.meta, sec.open = want, true
	db.sections[o.Name] = sec
	db.refs++
	files[path] = db
	if o.SnapshotInterval > 0 {
		fst.done = make(chan struct{})
		go fst.snapshotEvery(o.SnapshotInterval)
	}
	return &fileBase{Base: base, path: path}, nil
}

// fileBase is a store of a snapshot file: the store, and the file's size.
type fileBase struct {
	*indexer.Base
	path string
}

// DiskSize implements store.DiskSizer: the size of the snapshot file (shared
// by every store of the file), 0 before its first snapshot.
func (f *fileBase) DiskSize() (int64, error) { return snapfile.Size(f.path) }

var (
	_ store.DiskSizer     = (*fileBase)(nil)
	_ store.BatchPreparer = (*fileBase)(nil)
)

// decodeSection decodes a section's objects into a cache with o's indexes;
// the index entries are computed afresh, which is also how an index set
// change rebuilds them. keyReset, if not empty, says that o.KeyFunc no
// longer computes the keys the objects are stored under (see
// indexer.KeyCheck), and the store must start empty: c is empty then.
func decodeSection(where string, o store.Options, sec *section) (c *indexer.Cache, keyReset string, err error) {
	set, err := indexer.NewIndexSet(o.Indexers)
	if err != nil {
		return nil, "", err
	}
	keys := indexer.NewKeyCheck(o.KeyFunc)
	ops := make([]store.Op, 0, len(sec.data))
	for key, data := range sec.data {
		obj, err := indexer.Decode(o.Codec, data)
		if err != nil {
			return nil, "", fmt.Errorf("store: open %s in %s: object %q: %w", o.Name, where, key, err)
		}
		keys.Check(key, obj)
		ops = append(ops, store.Op{Type: store.OpPut, Key: key, Object: obj})
	}
	if r := keys.Reset(o.KeyFuncName); r != "" {
		return indexer.NewCache(set), r, nil
	}
	p := indexer.Preparer{KeyFunc: o.KeyFunc, Indexes: set}
	ps, err := p.Prepare("open "+o.Name+" in "+where, ops)
	if err != nil {
		return nil, "", err
	}
	c = indexer.NewCache(set)
	c.Apply(ps)
	return c, "", nil
}

// fileStore is the Persister of one store of a snapshot file: commits go to
// the file's committed state, which snapshots write out.
type fileStore struct {
	db   *fileDB
	name string
	stop chan struct{} // closed by Close to stop snapshotEvery
	done chan struct{} // closed when snapshotEvery returns; nil without it
}

// Persist implements indexer.Persister. It cannot fail: the state is memory.
func (f *fileStore) Persist(_ context.Context, changes []indexer.Change, rv string, replace bool) error {
	f.db.mu.Lock()
	defer f.db.mu.Unlock()
	sec := f.db.sections[f.name]
	if replace {
		sec.data = make(map[string][]byte, len(changes))
	}
	for i := range changes {
		c := &changes[i]
		if c.Type == store.OpPut {
			sec.data[c.Key] = c.Data
		} else {
			delete(sec.data, c.Key)
		}
	}
	if rv != "" {
		sec.rv = rv
	}
	return nil
}

// SelfDiffing implements indexer.SelfDiffer: a snapshot section holds
// encoded objects only, replaced by key.
func (f *fileStore) SelfDiffing() bool { return true }

// PersistIndexes implements indexer.Persister: only the index names are
// recorded, since a snapshot's index entries are rebuilt on load.
func (f *fileStore) PersistIndexes(_ context.Context, set *indexer.IndexSet, _ map[string][][]string) error {
	f.db.mu.Lock()
	defer f.db.mu.Unlock()
	f.db.sections[f.name].meta.Indexes = slices.Clone(set.Names())
	return nil
}

// Close implements indexer.Persister: it stops the periodic snapshots, writes
// a last one and releases the store's name.
func (f *fileStore) Close() error {
	close(f.stop)
	if f.done != nil {
		<-f.done
	}
	err := f.db.snapshot()
	filesMu.Lock()
	defer filesMu.Unlock()
	f.db.sections[f.name].open = false
	f.db.refs--
	if f.db.refs == 0 {
		delete(files, f.db.path)
		f.db.unlock()
	}
	if err != nil {
		return fmt.Errorf("store: close %s: %w", f.name, err)
	}
	return nil
}

func (f *fileStore) snapshotEvery(d time.Duration) {
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

// snapshot writes the committed state of every store of the file. The state
// is copied under mu, so the file is a point in time at which each store's
// resume point matches its objects; the write itself runs without blocking
// commits.
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
		data := maps.Clone(s.data)
		secs = append(secs, snapfile.Section{
			Header:  snapfile.Header{Name: name, Meta: s.meta, ResourceVersion: s.rv},
			Len:     len(data),
			Records: maps.All(data),
		})
	}
	db.mu.Unlock()
	return secs
}
