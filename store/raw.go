package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// Record is one stored object in its encoded form together with its index
// values, as snapshots move it between databases without knowing its Go
// type or the index functions that produced the values.
type Record struct {
	Key  string
	Data []byte
	// Values are the object's index values, aligned with Info.Indexes of
	// the store it belongs to.
	Values [][]string
}

// Exporter is implemented by stores that can hand out their records: an
// informer's open store can be snapshotted while it keeps writing.
type Exporter interface {
	// Export calls fn for every record of one consistent view of the store,
	// and returns the store's Info at that view (its resume point describes
	// exactly the records handed out). fn must not retain Data.
	Export(ctx context.Context, fn func(Record) error) (Info, error)
}

// RawDriver is implemented by drivers whose databases can be read and written
// record by record, without the objects' Go types or index functions: the
// snapshot tool's way in, and how Stores, ListStores, Export, Import and
// Drop reach a backend. Every bundled backend implements it.
type RawDriver interface {
	Driver
	// Stores returns the Info of every store in the database at u. A store
	// whose metadata cannot be read fails the call.
	Stores(ctx context.Context, u *url.URL) ([]Info, error)
	// ListStores returns every store of the database at u, in name order:
	// each with its Info, or with the error that reading its metadata
	// gave, if that error wraps ErrIncompatible or ErrCorrupt, or
	// ErrNotFound for a store that is gone but not yet deleted (see
	// StoreEntry.Err). Any other error (the database's own damage, the
	// lock, ctx) fails the call. A backend whose databases cannot hold an
	// unreadable store beside readable ones (one file with one checksum)
	// returns its Stores, as driver.EntriesOf makes them.
	ListStores(ctx context.Context, u *url.URL) ([]StoreEntry, error)
	// Export reads the store named name at u in one consistent view.
	Export(ctx context.Context, u *url.URL, name string, fn func(Record) error) (Info, error)
	// Import replaces the store named info.Name at u with the records next
	// yields until it returns io.EOF, recording info's metadata and resume
	// point. It is atomic: on error or a crash the store keeps its previous
	// contents, or is left empty without a resume point so that its
	// informer relists. A record with a key driver.CheckKey refuses (the
	// empty key) fails it with an error wrapping ErrInvalid that names the
	// record by its position.
	Import(ctx context.Context, u *url.URL, info Info, next func() (Record, error)) error
	// Drop deletes the store named name from the database at u: its
	// objects, index data, metadata and resume point. It is atomic: after
	// an error or a crash at any point the store is either whole or gone
	// (a later Open of the name finds an empty store without a resume
	// point). The database's other stores are untouched. A name the
	// database does not hold fails with an error wrapping ErrNotFound, a
	// store open in this process with ErrInUse, a database another
	// process holds with ErrLocked once the lock timeout or ctx ends, and
	// an empty name with ErrInvalid.
	Drop(ctx context.Context, u *url.URL, name string) error
}

// StoreEntry is one store of a database as ListStores finds it.
type StoreEntry struct {
	// Info describes the store. Only its Name is set when Err is not nil.
	Info Info
	// Err, if not nil, is why this build cannot read the store's metadata:
	// it wraps ErrIncompatible (a store of another format version) or
	// ErrCorrupt (a damaged metadata record). Or it wraps ErrNotFound: the
	// store is gone but not its data, as a Drop interrupted after its
	// atomic step leaves it (badger); a Drop of the name deletes the rest.
	// Such an entry is listed so that a tool that checks names against
	// the list (snapshot drop) can finish the job; it is no store, and
	// Stores leaves it out.
	Err error
}

// Gone reports whether e is a store that is gone but whose data is not
// all deleted yet (see Err).
func (e StoreEntry) Gone() bool { return errors.Is(e.Err, ErrNotFound) }

// RawFrozenViewer is implemented by raw drivers whose reads can change the
// files of the database they read: badger replays its logs and truncates a
// damaged value-log tail when it opens a directory, and deletes the tables
// its MANIFEST does not list. FrozenView returns the URL of a view of the
// database at u that reads leave the database's files as they are (for
// badger, a private copy of the directory), and a function that releases
// the view; the same driver reads it. A check of a database that must not
// change what it checks (snapshot.Verify) reads through it. It fails like
// the driver's reads: ErrNotFound for a missing database, ErrLocked when
// another process holds it past the lock timeout.
type RawFrozenViewer interface {
	FrozenView(ctx context.Context, u *url.URL) (view *url.URL, release func() error, err error)
}

func rawDriver(op, rawURL string) (RawDriver, *url.URL, error) {
	d, u, err := driverFor(op, rawURL)
	if err != nil {
		return nil, nil, err
	}
	rd, ok := d.(RawDriver)
	if !ok {
		return nil, nil, fmt.Errorf("store: %s %q: the %s backend cannot be read record by record: %w", op, rawURL, u.Scheme, ErrInvalid)
	}
	return rd, u, nil
}

// Stores returns the Info of every store in the database at rawURL.
func Stores(ctx context.Context, rawURL string) ([]Info, error) {
	d, u, err := rawDriver("stores", rawURL)
	if err != nil {
		return nil, err
	}
	return d.Stores(ctx, u)
}

// ListStores returns every store in the database at rawURL, in name order,
// naming those whose metadata this build cannot read (see StoreEntry) where
// the backend can tell them apart. With other backends, it is Stores: a
// store that cannot be read fails the call.
func ListStores(ctx context.Context, rawURL string) ([]StoreEntry, error) {
	d, u, err := rawDriver("list stores", rawURL)
	if err != nil {
		return nil, err
	}
	return d.ListStores(ctx, u)
}

// Export reads the store named name in the database at rawURL.
func Export(ctx context.Context, rawURL, name string, fn func(Record) error) (Info, error) {
	d, u, err := rawDriver("export", rawURL)
	if err != nil {
		return Info{}, err
	}
	return d.Export(ctx, u, name, fn)
}

// FrozenView returns the URL of a view of the database at rawURL that
// reads leave unchanged, and its release (see RawFrozenViewer); for a
// backend whose reads change nothing, rawURL itself.
func FrozenView(ctx context.Context, rawURL string) (view string, release func() error, err error) {
	d, u, err := rawDriver("view", rawURL)
	if err != nil {
		return "", nil, err
	}
	fv, ok := d.(RawFrozenViewer)
	if !ok {
		return u.String(), func() error { return nil }, nil
	}
	v, release, err := fv.FrozenView(ctx, u)
	if err != nil {
		return "", nil, err
	}
	return v.String(), release, nil
}

// Import replaces the store named info.Name in the database at rawURL with
// the records next yields until io.EOF.
func Import(ctx context.Context, rawURL string, info Info, next func() (Record, error)) error {
	d, u, err := rawDriver("import", rawURL)
	if err != nil {
		return err
	}
	return d.Import(ctx, u, info, next)
}

// Drop deletes the store named name from the database at rawURL, which must
// not be open for writing in another process: its objects, index data,
// metadata and resume point go, atomically, and the other stores of the
// database stay as they are. It is how an operator removes the store of an
// informer that no longer runs (a namespace a controller-runtime cache
// dropped, a resource a factory stopped watching) without deleting the
// whole database, which would make every informer relist.
//
// A name the database does not hold (or a database that does not exist)
// fails with an error wrapping ErrNotFound; a store open in this process
// with ErrInUse (close it first); a database another process holds with
// ErrLocked after the lock timeout (lock_timeout=), or with ctx's error.
// An empty name, a malformed URL, an unknown scheme or a backend without
// RawDriver fail with ErrInvalid. See each backend's Drop for what happens
// to the space the store took.
func Drop(ctx context.Context, rawURL, name string) error {
	op := "drop " + name + " from"
	if name == "" {
		op = "drop from"
	}
	d, u, err := driverFor(op, rawURL)
	if err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("store: drop from %s: empty store name: %w", u.Redacted(), ErrInvalid)
	}
	dd, ok := d.(RawDriver)
	if !ok {
		return fmt.Errorf("store: drop %s from %s: the %s backend cannot drop a store: %w", name, u.Redacted(), u.Scheme, ErrInvalid)
	}
	return dd.Drop(ctx, u, name)
}
