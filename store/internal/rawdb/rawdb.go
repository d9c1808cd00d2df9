// Package rawdb is what the raw drivers (store.RawDriver, store.RawView) of
// the backends that keep many stores in one database, each with its own
// metadata (bolt, badger), have in common: listing the stores, exporting a
// store and reading its index entries in one read transaction, with errors
// named alike, the checks of an Import and a Drop, reading a URL's path and
// parameters, waiting for another process's lock, and the registry of the
// databases open in this process. A backend gives its
// engine's read transaction ([Tx]), how it opens one ([Reader]), and how it
// writes the records [Records] hands out.
package rawdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// Tx is one read transaction of a backend's database.
type Tx interface {
	// EachStore calls fn with the name of every store the transaction
	// holds, and its Info or the error reading its metadata gave: an
	// error wrapping store.ErrIncompatible or store.ErrCorrupt for a
	// store this build cannot read, store.ErrNotFound for one that is
	// gone but not yet deleted (see store.StoreEntry). It skips what is
	// no store at all. An error of fn, or one about the database itself,
	// ends the call.
	EachStore(ctx context.Context, fn func(name string, info store.Info, err error) error) error
	// Export calls fn for every record of the store name, and returns
	// its Info. A store it does not hold is store.ErrNotFound.
	Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error)
	// IndexEntries calls fn with every index entry (index name, value,
	// object key) of the store name as a bounded-mode open would serve
	// it: the entries the store keeps or, for a store that keeps none (last
	// written in the default mode), those its objects' index values imply
	// (see ImpliedEntries).
	IndexEntries(ctx context.Context, name string, fn func(index, value, key string) error) error
}

// Reader runs fn on a view of the database at u in one read transaction;
// op names the operation in the errors Reader makes itself (opening the
// database). A backend's raw driver reads through its Reader, which is
// safe for concurrent use.
type Reader func(ctx context.Context, op string, u *url.URL, fn func(v *View) error) error

// Stores implements store.RawDriver.Stores: ListStores, failing on a store
// that cannot be read.
func (r Reader) Stores(ctx context.Context, u *url.URL) ([]store.Info, error) {
	return driver.StoreInfos(r.ListStores(ctx, u))
}

// ListStores implements store.RawDriver.ListStores (see View.ListStores).
func (r Reader) ListStores(ctx context.Context, u *url.URL) (entries []store.StoreEntry, err error) {
	err = r(ctx, "list stores", u, func(v *View) error {
		entries, err = v.ListStores(ctx)
		return err
	})
	return entries, err
}

// Export implements store.RawDriver.Export (see View.Export).
func (r Reader) Export(ctx context.Context, u *url.URL, name string, fn func(store.Record) error) (info store.Info, err error) {
	err = r(ctx, "export "+name, u, func(v *View) error {
		info, err = v.Export(ctx, name, fn)
		return err
	})
	return info, err
}

// IndexEntries reads the index entries of the store name (see
// View.IndexEntries).
func (r Reader) IndexEntries(ctx context.Context, u *url.URL, name string, fn func(index, value, key string) error) error {
	return r(ctx, "index entries of "+name, u, func(v *View) error {
		return v.IndexEntries(ctx, name, fn)
	})
}

// View is a store.RawView over a Tx: the reads of a backend's raw driver
// and of its live views. Like its Tx, it is not safe for concurrent use.
type View struct {
	Tx Tx
	// Backend is the backend's URL scheme, the Backend of the entries of
	// stores that cannot be read.
	Backend string
	// Where names the database in errors (a redacted URL).
	Where string
	// Guard, if set, runs each read, turning a panic of the engine on
	// damaged files into an error wrapping store.ErrCorrupt.
	Guard func(func() error) error
	// Wrap, if set, finishes every error the view names itself with (a
	// backend's advice on damage).
	Wrap func(error) error
}

var _ store.RawView = (*View)(nil)

func (v *View) run(fn func() error) error {
	if v.Guard == nil {
		return fn()
	}
	return v.Guard(fn)
}

func (v *View) fail(op string, err error) error {
	err = fmt.Errorf("store: %s %s: %w", op, v.Where, err)
	if v.Wrap != nil {
		err = v.Wrap(err)
	}
	return err
}

// ListStores implements store.RawView: every store of the transaction, in
// name order, each with its Info or why this build cannot read it.
func (v *View) ListStores(ctx context.Context) ([]store.StoreEntry, error) {
	var entries []store.StoreEntry
	err := v.run(func() error {
		return v.Tx.EachStore(ctx, func(name string, info store.Info, err error) error {
			switch {
			case err == nil:
				entries = append(entries, store.StoreEntry{Info: info})
				return nil
			case errors.Is(err, store.ErrNotFound):
				err = fmt.Errorf("%w (drop it again to delete the rest)", err)
			case !errors.Is(err, store.ErrIncompatible) && !errors.Is(err, store.ErrCorrupt):
				return err
			}
			entries = append(entries, store.StoreEntry{Info: store.Info{Backend: v.Backend, Name: name}, Err: v.fail("list stores", err)})
			return nil
		})
	})
	if err != nil {
		return nil, v.fail("list stores", err)
	}
	slices.SortFunc(entries, func(a, b store.StoreEntry) int { return strings.Compare(a.Info.Name, b.Info.Name) })
	return entries, nil
}

// Export implements store.RawView. An error of fn is returned as it is.
func (v *View) Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	var info store.Info
	var fnErr error
	err := v.run(func() (err error) {
		info, err = v.Tx.Export(ctx, name, func(r store.Record) error {
			fnErr = fn(r)
			return fnErr
		})
		return err
	})
	if fnErr != nil {
		return store.Info{}, fnErr
	}
	if err != nil {
		return store.Info{}, v.fail("export "+name+" from", err)
	}
	return info, nil
}

// IndexEntries calls fn with every index entry of the store name (see
// Tx.IndexEntries): what the snapshot tool's verify compares with the
// objects' index values. An error of fn is returned as it is.
func (v *View) IndexEntries(ctx context.Context, name string, fn func(index, value, key string) error) error {
	var fnErr error
	err := v.run(func() error {
		return v.Tx.IndexEntries(ctx, name, func(index, value, key string) error {
			fnErr = fn(index, value, key)
			return fnErr
		})
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return v.fail("index entries of "+name+" from", err)
	}
	return nil
}

// ImpliedEntries calls fn with the index entries that vals, the index
// values of the object key aligned with the index names, imply: one per
// value. It stops at fn's first error.
func ImpliedEntries(names []string, key string, vals [][]string, fn func(index, value, key string) error) error {
	for i, vs := range vals {
		for _, v := range vs {
			if err := fn(names[i], v, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckName refuses a store name a Drop or an Import cannot take: empty,
// or longer than maxLen bytes.
func CheckName(name string, maxLen int) error {
	if name == "" || len(name) > maxLen {
		return fmt.Errorf("store name must have 1 to %d bytes: %w", maxLen, store.ErrInvalid)
	}
	return nil
}

// CheckImport refuses an Import of info into a backend whose store names
// have at most maxNameLen bytes: a name CheckName refuses, or index names
// that are not sorted and unique (as the values of the records are aligned
// with them).
func CheckImport(info store.Info, maxNameLen int) error {
	if err := CheckName(info.Name, maxNameLen); err != nil {
		return err
	}
	if !slices.IsSorted(info.Indexes) || len(slices.Compact(slices.Clone(info.Indexes))) != len(info.Indexes) {
		return fmt.Errorf("index names %q are not sorted and unique: %w", info.Indexes, store.ErrInvalid)
	}
	return nil
}

// Records reads the records of an Import, checked as every backend checks
// them. It is not safe for concurrent use.
type Records struct {
	// Meta is what the imported store records: info's identity at the
	// backend's format version. A source that keeps no index values (a
	// memory snapshot file) yields records without them: the store then
	// records no indexes, so that opening it with indexers rebuilds them
	// from the objects. The first record tells.
	Meta driver.Meta
	// ResourceVersion is the resume point the store records.
	ResourceVersion string

	next  func() (store.Record, error)
	first *store.Record // read by NewRecords, not yet handed out
	eof   bool
	n     int // records read, to name one in errors
}

// NewRecords starts reading the records next yields for an Import of info
// at formatVersion; it reads the first one. An error of next is returned as
// it is.
func NewRecords(info store.Info, formatVersion int, next func() (store.Record, error)) (*Records, error) {
	r := &Records{
		Meta: driver.Meta{FormatVersion: formatVersion, Codec: info.Codec, Type: info.Type, KeyFunc: info.KeyFunc,
			Scope: info.Scope, Indexes: slices.Clone(info.Indexes)},
		ResourceVersion: info.ResourceVersion,
		next:            next,
	}
	first, err := next()
	switch {
	case errors.Is(err, io.EOF):
		r.eof = true
	case err != nil:
		return nil, err
	default:
		r.first = &first
		if first.Values == nil {
			r.Meta.Indexes = nil
		}
	}
	return r, nil
}

// Next returns the next record, or io.EOF after the last one. Its Data is
// a copy, the caller's to keep; its Values are nil when the store records no
// indexes. A record is refused, with an error wrapping store.ErrInvalid
// that names it, when its key is one driver.CheckKey refuses, it has no data
// (no codec encodes an object in 0 bytes) or its values are not aligned
// with Meta.Indexes. Errors of ctx and of the source are returned as they
// are.
func (r *Records) Next(ctx context.Context) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	var rec store.Record
	switch {
	case r.first != nil:
		rec, r.first = *r.first, nil
	case r.eof:
		return store.Record{}, io.EOF
	default:
		var err error
		if rec, err = r.next(); err != nil {
			r.eof = errors.Is(err, io.EOF)
			return store.Record{}, err
		}
	}
	r.n++
	if err := driver.CheckKey(rec.Key); err != nil {
		return store.Record{}, fmt.Errorf("record %d: %w", r.n, err)
	}
	names := r.Meta.Indexes
	if len(names) == 0 {
		rec.Values = nil
	}
	if len(rec.Values) != len(names) {
		return store.Record{}, fmt.Errorf("record %q has values for %d indexes, the store has %d (%q): %w", rec.Key, len(rec.Values), len(names), names, store.ErrInvalid)
	}
	if len(rec.Data) == 0 {
		return store.Record{}, fmt.Errorf("record %q has no data: %w", rec.Key, store.ErrInvalid)
	}
	rec.Data = slices.Clone(rec.Data)
	return rec, nil
}

// PrefixEnd returns the smallest key past every key starting with p, or nil
// if there is none (p is all 0xff): where a scan of the prefix p ends.
func PrefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Twice is the error of an Import given the key twice: the first record
// would stay.
func Twice(key string) error {
	return fmt.Errorf("record %q given twice: %w", key, store.ErrInvalid)
}
