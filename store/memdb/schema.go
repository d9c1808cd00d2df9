package memdb

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/informerdb/informerdb/indexer"
)

// The schema is fixed (go-memdb cannot change it after NewMemDB), so user
// index functions are not memdb indexes: every index entry is a row of the
// entries table, which makes AddIndexers an ordinary write transaction.
const (
	tableObjects = "objects" // one objectRow per key
	tableEntries = "entries" // one entryRow per (index, value, key)
	tableMeta    = "meta"    // exactly one metaRow
	indexID      = "id"      // the only memdb index of every table
	// indexIDPrefix asks go-memdb for a prefix scan of the id index.
	indexIDPrefix = indexID + "_prefix"
)

// objectRow is a stored object. Rows are immutable once inserted: older read
// transactions may still hold them, so a change inserts a new row.
type objectRow struct {
	id  []byte // []byte(key), converted once: go-memdb asks for it repeatedly
	key string
	obj interface{}
	// vals are the object's index values, aligned with the index set of
	// the same transaction's metaRow, so that an update or delete removes
	// its entries without calling index functions again.
	vals [][]string
	data []byte // the object's encoding in file mode, for snapshots
}

// entryRow is one index entry: the object under key has value among its
// values for index. It carries the object, so that ByIndex needs no second
// lookup.
type entryRow struct {
	id    []byte // entryID(index, value, key), computed once
	value string
	key   string
	obj   interface{}
}

// metaRow is the state that must agree with the objects and entries of a
// snapshot: the resume point, the index set the entries were made with, and
// the number of objects (go-memdb does not keep a table's size).
type metaRow struct {
	rv    string
	set   *indexer.IndexSet
	count int
}

// entryPrefix appends the encoding of index and, when withValue, value to b.
// Both are length-prefixed, so the encoding of (index, value) is never a
// prefix of another pair's: a prefix scan finds exactly the entries of one
// index, or of one index value, whatever bytes the strings contain.
func entryPrefix(b []byte, index, value string, withValue bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(index)))
	b = append(b, index...)
	if withValue {
		b = binary.AppendUvarint(b, uint64(len(value)))
		b = append(b, value...)
	}
	return b
}

// entryID is the id of the entry (index, value, key). Keys come last and
// unprefixed, so a scan of one index value yields keys in sorted order.
func entryID(index, value, key string) []byte {
	b := make([]byte, 0, len(index)+len(value)+len(key)+4)
	b = entryPrefix(b, index, value, true)
	return append(b, key...)
}

// objectIndexer indexes objectRows by key.
type objectIndexer struct{}

func (objectIndexer) FromObject(raw interface{}) (bool, []byte, error) {
	r, ok := raw.(*objectRow)
	if !ok {
		return false, nil, fmt.Errorf("objects table: got %T, want *objectRow", raw)
	}
	return true, r.id, nil
}

func (objectIndexer) FromArgs(args ...interface{}) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("objects table: want 1 argument, got %d", len(args))
	}
	k, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("objects table: argument is %T, want string", args[0])
	}
	return []byte(k), nil
}

// entryIndexer indexes entryRows by (index, value, key), and supports prefix
// scans by index or by (index, value).
type entryIndexer struct{}

func (entryIndexer) FromObject(raw interface{}) (bool, []byte, error) {
	r, ok := raw.(*entryRow)
	if !ok {
		return false, nil, fmt.Errorf("entries table: got %T, want *entryRow", raw)
	}
	return true, r.id, nil
}

func stringArgs(args []interface{}) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("entries table: argument %d is %T, want string", i, a)
		}
		out[i] = s
	}
	return out, nil
}

func (entryIndexer) FromArgs(args ...interface{}) ([]byte, error) {
	s, err := stringArgs(args)
	if err != nil {
		return nil, err
	}
	if len(s) != 3 {
		return nil, fmt.Errorf("entries table: want index, value and key, got %d arguments", len(s))
	}
	return entryID(s[0], s[1], s[2]), nil
}

func (entryIndexer) PrefixFromArgs(args ...interface{}) ([]byte, error) {
	s, err := stringArgs(args)
	if err != nil {
		return nil, err
	}
	switch len(s) {
	case 1:
		return entryPrefix(nil, s[0], "", false), nil
	case 2:
		return entryPrefix(nil, s[0], s[1], true), nil
	}
	return nil, fmt.Errorf("entries table: want index and optional value, got %d arguments", len(s))
}

// metaIndexer gives the single metaRow a constant id.
type metaIndexer struct{}

var metaID = []byte("state")

func (metaIndexer) FromObject(raw interface{}) (bool, []byte, error) {
	if _, ok := raw.(*metaRow); !ok {
		return false, nil, fmt.Errorf("meta table: got %T, want *metaRow", raw)
	}
	return true, metaID, nil
}

func (metaIndexer) FromArgs(args ...interface{}) ([]byte, error) {
	return metaID, nil
}

func schema() *memdb.DBSchema {
	table := func(name string, idx memdb.Indexer) *memdb.TableSchema {
		return &memdb.TableSchema{
			Name: name,
			Indexes: map[string]*memdb.IndexSchema{
				indexID: {Name: indexID, Unique: true, Indexer: idx},
			},
		}
	}
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tableObjects: table(tableObjects, objectIndexer{}),
		tableEntries: table(tableEntries, entryIndexer{}),
		tableMeta:    table(tableMeta, metaIndexer{}),
	}}
}
