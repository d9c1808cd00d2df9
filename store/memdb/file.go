package memdb

import (
	"fmt"
	"iter"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// load returns the store o.Name of a snapshot file holding l (see
// snapfile.Backend.Load), filled in one transaction. Snapshots read its
// current read transaction (fileSource).
func load(o store.Options, f *snapfile.Handle, l snapfile.Loaded) (store.Store, snapfile.Source, error) {
	s, err := newStore(o, l.Indexes)
	if err != nil {
		return nil, nil, err
	}
	s.fileCodec, s.file, s.info.Reset = o.Codec, f, l.Reset
	tx, err := s.begin(l.Op)
	if err != nil {
		return nil, nil, err
	}
	defer tx.abort() // a no-op after commit
	// The puts carry their stored encodings, which file mode keeps.
	if err := apply(tx.w, tx.r, metaOf(tx.r), l.Puts, l.ResourceVersion, false); err != nil {
		return nil, nil, fmt.Errorf("store: %s: memdb: %w", l.Op, err)
	}
	// The store has seen what its resume point says.
	tx.commitThen(func() { s.seen.Store(l.ResourceVersion) })
	return s, (*fileSource)(s), nil
}

// fileSource is a store of a file as its snapshots see it.
type fileSource memStore

// Committed implements snapfile.Source: the records, resume point and index
// names of the store's current read transaction (of the one it closed in,
// once closed), which agree, and which later commits do not change.
func (src *fileSource) Committed(h snapfile.Header) snapfile.Section {
	s := (*memStore)(src)
	txn, ok := s.readTxn()
	if !ok {
		// Close sets final before it clears the view.
		txn = s.final
	}
	m := metaOf(txn)
	h.ResourceVersion = m.rv
	h.Meta.Indexes = slices.Clone(m.set.Names())
	return snapfile.Section{Header: h, Len: m.count, Records: txnRecords(txn)}
}

// txnRecords yields the key and encoding of every object of txn's snapshot.
func txnRecords(txn *memdb.Txn) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for r := range objects(txn) {
			if !yield(r.key, r.data) {
				return
			}
		}
	}
}

// DiskSize implements store.DiskSizer: the size of the store's snapshot
// file (shared by every store of the file), 0 before its first snapshot. A
// store without a file has nothing on disk, and says so with an error.
func (s *memStore) DiskSize() (int64, error) {
	if s.file == nil {
		return 0, fmt.Errorf("store: disk size of %s: a memdb store without a file keeps nothing on disk: %w", s.info.Name, store.ErrInvalid)
	}
	return s.file.DiskSize()
}

var (
	_ store.DiskSizer = (*memStore)(nil)
	_ snapfile.Source = (*fileSource)(nil)
)
