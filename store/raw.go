package store

import (
	"context"
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
// snapshot tool's way in.
type RawDriver interface {
	Driver
	// Stores returns the Info of every store in the database at u.
	Stores(ctx context.Context, u *url.URL) ([]Info, error)
	// Export reads the store named name at u in one consistent view.
	Export(ctx context.Context, u *url.URL, name string, fn func(Record) error) (Info, error)
	// Import replaces the store named info.Name at u with the records next
	// yields until it returns io.EOF, recording info's metadata and resume
	// point. It is atomic: on error or a crash the store keeps its previous
	// contents, or is left empty without a resume point so that its
	// informer relists. A record with a key CheckKey refuses (the empty
	// key) fails it with an error wrapping ErrInvalid that names the
	// record by its position.
	Import(ctx context.Context, u *url.URL, info Info, next func() (Record, error)) error
}

func rawDriver(op, rawURL string) (RawDriver, *url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("store: %s %q: %w: %w", op, rawURL, ErrInvalid, err)
	}
	driversMu.RLock()
	d := drivers[u.Scheme]
	driversMu.RUnlock()
	if d == nil {
		return nil, nil, fmt.Errorf("store: %s %q: unknown scheme %q; registered: %s: %w", op, rawURL, u.Scheme, schemeList(), ErrInvalid)
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

// Export reads the store named name in the database at rawURL.
func Export(ctx context.Context, rawURL, name string, fn func(Record) error) (Info, error) {
	d, u, err := rawDriver("export", rawURL)
	if err != nil {
		return Info{}, err
	}
	return d.Export(ctx, u, name, fn)
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
