package memory

import (
	"context"
	"maps"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// load returns the store o.Name of a snapshot file holding l (see
// snapfile.Backend.Load): a store whose commits also go to the file's
// committed state, which snapshots write out.
func load(o store.Options, f *snapfile.Handle, l snapfile.Loaded) (store.Store, snapfile.Source, error) {
	info := driver.MetaFor(o, FormatVersion).Info(Scheme, o.Name, l.ResourceVersion)
	info.Reset = l.Reset
	cache := indexer.NewCache(l.Indexes, l.Puts)
	fst := &fileStore{file: f, rv: l.ResourceVersion, data: make(map[string][]byte, len(l.Puts))}
	for i := range l.Puts {
		fst.data[l.Puts[i].Key] = l.Puts[i].Data
	}
	base, err := indexer.NewBase(indexer.BaseConfig{
		Info: info, Persister: fst, Options: o, Cache: cache,
		// A snapshot section holds encoded objects only, replaced by key.
		SelfDiffing: true,
	})
	if err != nil {
		return nil, nil, err
	}
	return &fileBase{Base: base, file: f}, fst, nil
}

// fileBase is a store of a snapshot file: the store, and the file's size.
type fileBase struct {
	*indexer.Base
	file *snapfile.Handle
}

// DiskSize implements store.DiskSizer: the size of the snapshot file (shared
// by every store of the file), 0 before its first snapshot.
func (f *fileBase) DiskSize() (int64, error) { return f.file.DiskSize() }

var (
	_ store.DiskSizer     = (*fileBase)(nil)
	_ store.BatchPreparer = (*fileBase)(nil)
)

// fileStore is the Persister of one store of a snapshot file, and its
// snapfile.Source: commits go to its encoded objects and resume point,
// guarded by the file's lock, so that a snapshot copies every store of the
// file at one instant.
type fileStore struct {
	file *snapfile.Handle
	rv   string
	// data holds the encoded objects by key. Its slices are never modified
	// once stored, so a snapshot can share them.
	data map[string][]byte
}

// Commit implements indexer.Persister. It cannot fail: the state is memory.
func (f *fileStore) Commit(_ context.Context, changes []indexer.Change, _ bool, _ *indexer.IndexSet, rv string, replace bool) error {
	f.file.Lock()
	defer f.file.Unlock()
	if replace {
		f.data = make(map[string][]byte, len(changes))
	}
	for i := range changes {
		c := &changes[i]
		if c.Type == store.OpPut {
			f.data[c.Key] = c.Data
		} else {
			delete(f.data, c.Key)
		}
	}
	if rv != "" {
		f.rv = rv
	}
	return nil
}

// SetIndexes implements indexer.Persister: only the index names are
// recorded, since a snapshot's index entries are rebuilt on load.
func (f *fileStore) SetIndexes(_ context.Context, set *indexer.IndexSet, _ map[string][][]string) error {
	f.file.Lock()
	defer f.file.Unlock()
	f.file.SetIndexes(set.Names())
	return nil
}

// Close implements indexer.Persister: it stops the periodic snapshots, writes
// a last one and releases the store's name.
func (f *fileStore) Close() error { return f.file.Close() }

// Committed implements snapfile.Source: a copy of the objects, so that
// commits go on while the snapshot is written. It runs with the file's lock
// held.
func (f *fileStore) Committed(h snapfile.Header) snapfile.Section {
	data := maps.Clone(f.data)
	h.ResourceVersion = f.rv
	return snapfile.Section{Header: h, Len: len(data), Records: maps.All(data)}
}
