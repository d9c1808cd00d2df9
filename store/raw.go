package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// Record is one stored object in its encoded form with its index values, as
// snapshots move it between databases without its Go type or index functions.
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
// record by record, without the objects' Go types or index functions. Its
// methods serve this package's functions of the same names (Stores,
// ListStores, Export, Import, Drop), given the parsed URL, and the snapshot
// tool.
type RawDriver interface {
	Driver
	Stores(ctx context.Context, u *url.URL) ([]Info, error)
	ListStores(ctx context.Context, u *url.URL) ([]StoreEntry, error)
	Export(ctx context.Context, u *url.URL, name string, fn func(Record) error) (Info, error)
	Import(ctx context.Context, u *url.URL, info Info, next func() (Record, error)) error
	Drop(ctx context.Context, u *url.URL, name string) error
}

// StoreEntry is one store of a database as ListStores finds it.
type StoreEntry struct {
	// Info describes the store. Only its Name is set when Err is not nil.
	Info Info
	// Err, if not nil, is why this build cannot read the store's metadata:
	// it wraps ErrIncompatible (another format version) or ErrCorrupt (a
	// damaged metadata record); or ErrNotFound for a store that is gone
	// but not its data (an interrupted Drop), listed so that a Drop of the
	// name can finish the job. Stores leaves such an entry out.
	Err error
}

// Gone reports whether e is a store that is gone but whose data is not
// all deleted yet (see Err).
func (e StoreEntry) Gone() bool { return errors.Is(e.Err, ErrNotFound) }

// RawFrozenViewer is implemented by raw drivers whose reads can change the
// database's files (badger replays its logs). FrozenView returns the URL of
// a view of the database at u that reads leave unchanged (for badger, a
// private copy), read by the same driver, and its release. It fails like
// the driver's reads (ErrNotFound, ErrLocked).
type RawFrozenViewer interface {
	FrozenView(ctx context.Context, u *url.URL) (view *url.URL, release func() error, err error)
}

// RawLiveViewer is implemented by raw drivers that can read a database the
// stores of this process have open, every store of it at one point, through
// the handle those stores share (snapshot.NewHandler serves it).
type RawLiveViewer interface {
	// LiveView calls fn with a read-only view of every store of the
	// database at u, as this process's stores have committed it, and
	// returns fn's error. Only u's path counts. LiveView never opens the
	// database: when no store of this process has it open it fails with
	// ErrClosed, and a URL that cannot name such a database with
	// ErrInvalid. The view is valid until fn returns, even if the stores
	// close meanwhile. Each backend documents its unit of consistency and
	// what a long view costs its writers.
	LiveView(ctx context.Context, u *url.URL, fn func(RawView) error) error
}

// RawView is a read-only view of the stores of one database at one point,
// valid only during the call it is given to and not safe for concurrent use.
type RawView interface {
	// ListStores returns every store of the view, in name order, as
	// RawDriver.ListStores does.
	ListStores(ctx context.Context) ([]StoreEntry, error)
	// Export calls fn for every record of the store named name in the
	// view (ErrNotFound if it has none) and returns its Info at the
	// view. fn must not retain Data.
	Export(ctx context.Context, name string, fn func(Record) error) (Info, error)
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

// LiveView calls fn with a read-only view of every store of the database at
// rawURL that stores of this process have open (see RawLiveViewer). A
// backend without live views fails with ErrInvalid.
func LiveView(ctx context.Context, rawURL string, fn func(RawView) error) error {
	d, u, err := driverFor("view", rawURL)
	if err != nil {
		return err
	}
	lv, ok := d.(RawLiveViewer)
	if !ok {
		return fmt.Errorf("store: view %s: the %s backend cannot serve a live view of its databases: %w", u.Redacted(), u.Scheme, ErrInvalid)
	}
	return lv.LiveView(ctx, u, fn)
}

// Stores returns the Info of every store in the database at rawURL. A store
// whose metadata cannot be read fails the call.
func Stores(ctx context.Context, rawURL string) ([]Info, error) {
	d, u, err := rawDriver("stores", rawURL)
	if err != nil {
		return nil, err
	}
	return d.Stores(ctx, u)
}

// ListStores returns every store in the database at rawURL, in name order,
// each with its Info or, where the backend can tell such stores apart, with
// why this build cannot read its metadata (StoreEntry.Err); with other
// backends, and for any other error, it fails as Stores does.
func ListStores(ctx context.Context, rawURL string) ([]StoreEntry, error) {
	d, u, err := rawDriver("list stores", rawURL)
	if err != nil {
		return nil, err
	}
	return d.ListStores(ctx, u)
}

// Export calls fn for every record of the store named name in the database
// at rawURL, read in one consistent view, and returns its Info at that view.
// fn must not retain Data.
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
// the records next yields until io.EOF, recording info's metadata and resume
// point. On error or a crash the store keeps its previous contents, or is
// left empty without a resume point. A key driver.CheckKey refuses fails it
// with ErrInvalid, naming the record by its position.
func Import(ctx context.Context, rawURL string, info Info, next func() (Record, error)) error {
	d, u, err := rawDriver("import", rawURL)
	if err != nil {
		return err
	}
	return d.Import(ctx, u, info, next)
}

// Drop deletes the store named name from the database at rawURL: its
// objects, index data, metadata and resume point, atomically (after an error
// or a crash the store is whole or gone); the database's other stores stay
// as they are.
//
// A name the database does not hold (or no database) fails with ErrNotFound;
// a store open in this process with ErrInUse; a database another process
// holds with ErrLocked after the lock timeout, or with ctx's error. An empty
// name, a malformed URL, an unknown scheme or a backend without RawDriver
// fail with ErrInvalid. See each backend's Drop for the space the store took.
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
