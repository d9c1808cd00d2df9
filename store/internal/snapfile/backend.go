package snapfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/diskusage"
	"github.com/informerdb/informerdb/store/internal/loadcheck"
)

// Backend is what the backends whose persistent form is a snapshot file
// (memory, memdb) share; a backend gives only how it holds a store's
// objects (New, Load and the Source it returns). It is the backend's
// store.RawDriver: snapshot files keep no index entries or values (a store
// rebuilds them when it loads the file), so exported records have no
// Values and the stores' Info lists no indexes, and URLs without a path (a
// store without a file, which no other process can read) are refused. A
// Backend is safe for concurrent use; it must not be copied once used.
type Backend struct {
	// Scheme and FormatVersion are the backend's.
	Scheme        string
	FormatVersion int
	// New returns a store without a file (scheme://); opts may be nil.
	New func(opts *store.Options) (store.Store, error)
	// Load returns the store o.Name of a file, holding what l gives, and
	// the Source the file's snapshots read it from. It is called with the
	// file's lock held (see Handle.Lock), so it must not take it; on error,
	// nothing of the file changes. f closes the file for the store.
	Load func(o store.Options, f *Handle, l Loaded) (store.Store, Source, error)

	// mu guards files, opening, and file.refs, file.unlock and entry.open
	// of every file. It is taken before a file's mu.
	mu sync.Mutex
	// files are the snapshot files open in this process, by cleaned
	// absolute path. The stores of one file share it, so a snapshot
	// written by any of them holds all of them.
	files map[string]*file
	// opening holds the files whose first store is being opened, without
	// mu while it waits for the file's lock and reads the file.
	opening openings
}

// Loaded is a store's state in its file, decoded, as Backend.Load gets it.
type Loaded struct {
	Op      string            // names the open in errors: "open NAME in SCHEME:///path"
	Indexes *indexer.IndexSet // of the store's Options.Indexers
	// Puts are the stored objects as puts with their key, their values
	// under Indexes (computed afresh, which is also how a changed index
	// set is rebuilt) and their stored encoding (Data).
	Puts            []indexer.Prepared
	ResourceVersion string
	// Reset, when not empty, says why the store starts empty (see
	// store.Info.Reset).
	Reset string
}

// A Source is the committed state of one store of a file, which the file's
// snapshots write.
type Source interface {
	// Committed returns the section a snapshot writes for the store: h
	// (its name and identity, as recorded at open and by
	// Handle.SetIndexes) with the store's resume point, and its records,
	// as of one commit. It is called with the file's lock held (see
	// Handle.Lock), also once the store is closed: it then returns the
	// state the store closed in. The records must not change once it
	// returns: a snapshot reads them later, without the lock.
	Committed(h Header) Section
}

// file is one snapshot file open in this process: what its next snapshot
// writes. It is safe for concurrent use.
type file struct {
	path string
	refs int // open stores; guarded by Backend.mu
	// unlock releases the file's lock against other processes (Lock),
	// once no store of it is open; guarded by Backend.mu.
	unlock func()

	// writeMu serializes snapshot writes, so a snapshot taken later is never
	// replaced by one taken earlier.
	writeMu sync.Mutex

	mu     sync.Mutex // guards stores and the h and src of each; see Handle.Lock
	stores map[string]*entry
}

// entry is one store of a file.
type entry struct {
	h    Header // name and identity (and resume point, as read from the file)
	src  Source
	open bool // guarded by Backend.mu
}

// Committed implements Source for a store read from the file and not
// opened since.
func (s *rawSection) Committed(h Header) Section {
	return Section{Header: h, Len: len(s.data), Records: maps.All(s.data)}
}

// Open is the backend's store.Driver Open: scheme:// opens a store without
// a file (New), scheme:///abs/path/file.snap a store of that file.
func (b *Backend) Open(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	p := driver.NewParams(u)
	opts.SnapshotInterval = p.Duration("snapshot_interval", opts.SnapshotInterval)
	opts.LockTimeout = p.Duration("lock_timeout", opts.LockTimeout)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if u.Host != "" || u.Opaque != "" {
		return nil, fmt.Errorf("store: open %s: want %s:// or %[2]s:///absolute/path/file.snap (three slashes): %w", u.Redacted(), b.Scheme, store.ErrInvalid)
	}
	if u.Path == "" || u.Path == "/" {
		for _, name := range []string{"snapshot_interval", "lock_timeout"} {
			if u.Query().Has(name) {
				return nil, fmt.Errorf("store: open %s: %s needs a file (%s:///path/file.snap): %w", u.Redacted(), name, b.Scheme, store.ErrInvalid)
			}
		}
		return b.New(&opts)
	}
	path, err := filePath(b.Scheme, u.Path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", u.Redacted(), err)
	}
	return b.openFile(ctx, path, opts)
}

// openFile opens store o.Name of the snapshot file at path.
func (b *Backend) openFile(ctx context.Context, path string, o store.Options) (store.Store, error) {
	where := b.Scheme + "://" + path
	if o.Codec == nil {
		return nil, fmt.Errorf("store: open %s in %s: a %s store with a file needs Options.Codec to write its snapshots: %w", o.Name, where, b.Scheme, store.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.opening.Wait(ctx, &b.mu, path, o.LockTimeout); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, err)
	}
	f := b.files[path]
	if f == nil {
		// The first store of the file in this process locks and reads it
		// without mu (see openings); done runs before mu is released.
		defer b.opening.Start(path)()
		var err error
		if f, err = b.lockAndRead(ctx, path, o.Name, where, o.LockTimeout); err != nil {
			return nil, err
		}
		defer func() {
			if f.refs == 0 { // the open failed: nothing holds the file
				f.unlock()
			}
		}()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.stores[o.Name]
	if e != nil && e.open {
		return nil, fmt.Errorf("store: open %s in %s: %w", o.Name, where, store.ErrInUse)
	}
	want := driver.MetaFor(o, b.FormatVersion)
	l := Loaded{Op: "open " + o.Name + " in " + where}
	var err error
	if l.Indexes, err = indexer.NewIndexSet(o.Indexers); err != nil {
		return nil, fmt.Errorf("store: %s: %w", l.Op, err)
	}
	if e != nil {
		prev := e.src.Committed(e.h)
		r, err := driver.CompareMeta(o.Name, where, prev.Meta, want)
		if err != nil {
			return nil, err
		}
		l.Reset = r.Reset
		if r.Reset == "" {
			if l.Puts, l.Reset, err = decode(l.Op, o, l.Indexes, prev.Records); err != nil {
				return nil, err
			}
		}
		if l.Reset == "" {
			l.ResourceVersion = prev.ResourceVersion
		}
	}
	h := &Handle{b: b, f: f, name: o.Name, stop: make(chan struct{})}
	s, src, err := b.Load(o, h, l)
	if err != nil {
		return nil, err
	}
	// Recorded only now that nothing can fail: a failed open leaves the
	// file's state as it was.
	if e == nil {
		e = &entry{}
		f.stores[o.Name] = e
	}
	e.h, e.src, e.open = Header{Name: o.Name, Meta: want}, src, true
	f.refs++
	if b.files == nil {
		b.files = map[string]*file{}
	}
	b.files[path] = f
	if o.SnapshotInterval > 0 {
		h.done = make(chan struct{})
		go h.snapshotEvery(o.SnapshotInterval)
	}
	return s, nil
}

// decode decodes records with o.Codec into puts under set. keyReset, if not
// empty, says that o.KeyFunc no longer computes the keys the records are
// stored under (see loadcheck.KeyCheck): the store starts empty.
func decode(op string, o store.Options, set *indexer.IndexSet, records iter.Seq2[string, []byte]) (ps []indexer.Prepared, keyReset string, err error) {
	keys := loadcheck.NewKeyCheck(o.KeyFunc)
	var ops []store.Op
	var data [][]byte
	for key, d := range records {
		obj, err := indexer.Decode(o.Codec, d)
		if err != nil {
			return nil, "", fmt.Errorf("store: %s: object %q: %w", op, key, err)
		}
		keys.Check(key, obj)
		ops = append(ops, store.Op{Type: store.OpPut, Key: key, Object: obj})
		data = append(data, d)
	}
	if r := keys.Reset(o.KeyFuncName); r != "" {
		return nil, r, nil
	}
	p := indexer.Preparer{KeyFunc: o.KeyFunc, Indexes: set}
	if ps, err = p.Prepare(op, ops); err != nil {
		return nil, "", err
	}
	// The stored encodings are kept rather than computed again.
	for i := range ps {
		ps[i].Data = data[i]
	}
	return ps, "", nil
}

// Handle ties one open store to its snapshot file. It is safe for
// concurrent use.
type Handle struct {
	b    *Backend
	f    *file
	name string
	stop chan struct{} // closed by Close to stop snapshotEvery
	done chan struct{} // closed when snapshotEvery returns; nil without it
}

// Lock locks the state of every store of the file against snapshots, which
// call Source.Committed with it held: a backend whose Source reads state
// that commits change (memory's maps) changes it with the lock held, and a
// snapshot then copies every store of the file at one instant.
func (h *Handle) Lock() { h.f.mu.Lock() }

// Unlock unlocks what Lock locked.
func (h *Handle) Unlock() { h.f.mu.Unlock() }

// SetIndexes records the store's index names, as of a commit that changed
// them, for the next snapshot; the caller must hold Lock.
func (h *Handle) SetIndexes(names []string) {
	h.f.stores[h.name].h.Meta.Indexes = slices.Clone(names)
}

// DiskSize returns the bytes the snapshot file (shared by every store of
// the file) takes on disk, 0 before its first snapshot: store.DiskSizer.
func (h *Handle) DiskSize() (int64, error) {
	fi, err := os.Stat(h.f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("snapfile: size of %s: %w", h.f.path, err)
	}
	return diskusage.Of(fi), nil
}

// Close stops the store's periodic snapshots, writes a last snapshot,
// releases the store's name and, with the file's last store, the file. Its
// Source must keep returning the state the store closed in.
func (h *Handle) Close() error {
	close(h.stop)
	if h.done != nil {
		<-h.done
	}
	err := h.f.snapshot()
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.f.stores[h.name].open = false
	h.f.refs--
	if h.f.refs == 0 {
		delete(h.b.files, h.f.path)
		h.f.unlock()
	}
	if err != nil {
		return fmt.Errorf("store: close %s: %w", h.name, err)
	}
	return nil
}

func (h *Handle) snapshotEvery(d time.Duration) {
	defer close(h.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			if err := h.f.snapshot(); err != nil {
				klog.Background().Error(err, "Writing a snapshot failed; the previous one stays", "store", h.name, "file", h.f.path)
			}
		}
	}
}

// snapshot writes the committed state of every store of the file, taken
// under mu; the write itself does not block commits.
func (f *file) snapshot() error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	return Write(f.path, f.committed())
}

// committed returns the committed state of every store, sorted by name.
func (f *file) committed() []Section {
	f.mu.Lock()
	defer f.mu.Unlock()
	secs := make([]Section, 0, len(f.stores))
	for _, name := range slices.Sorted(maps.Keys(f.stores)) {
		e := f.stores[name]
		secs = append(secs, e.src.Committed(e.h))
	}
	return secs
}
