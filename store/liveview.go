package store

import (
	"context"
	"fmt"
	"net/url"
)

// RawLiveViewer is implemented by raw drivers that can read a database that
// stores of this process have open, every store of it at one point, through
// the handle those stores share: how a running process serves its own
// database read-only (snapshot.NewHandler). It is an interface of its own
// so that RawDrivers written before it keep compiling.
type RawLiveViewer interface {
	// LiveView calls fn with a read-only view of every store of the
	// database at u, as the stores of this process have committed it,
	// and returns fn's error. u is the URL the stores were opened with;
	// only its path counts (the parameters tune the stores, not the
	// view). LiveView never opens the database: when no store of this
	// process has it open, it fails with an error wrapping ErrClosed; a
	// URL that cannot name such a database (no file, a relative path)
	// fails with ErrInvalid. The view is valid until fn returns. Stores
	// of the process may close meanwhile: the view keeps reading what it
	// started with. Each backend documents its unit of consistency and
	// what a long view costs its writers.
	LiveView(ctx context.Context, u *url.URL, fn func(RawView) error) error
}

// RawView is a read-only view of the stores of one database at one point
// (see RawLiveViewer). It is valid only during the call it is given to, and
// is not safe for concurrent use.
type RawView interface {
	// ListStores returns every store of the view, in name order, as
	// RawDriver.ListStores does.
	ListStores(ctx context.Context) ([]StoreEntry, error)
	// Export calls fn for every record of the store named name in the
	// view and returns its Info at the view, as RawDriver.Export does;
	// a name the view does not hold fails with ErrNotFound. fn must not
	// retain Data.
	Export(ctx context.Context, name string, fn func(Record) error) (Info, error)
}

// LiveView calls fn with a read-only view of every store of the database at
// rawURL that stores of this process have open (see RawLiveViewer). A
// backend without live views fails with ErrInvalid.
func LiveView(ctx context.Context, rawURL string, fn func(RawView) error) error {
	d, u, err := driverFor("view", rawURL)
	if err != nil {
		return err
	}
	return liveViewOf(ctx, d, u, fn)
}

// liveViewOf is LiveView through the driver d, for callers that have their
// own registry of drivers (the snapshot package).
func liveViewOf(ctx context.Context, d Driver, u *url.URL, fn func(RawView) error) error {
	lv, ok := d.(RawLiveViewer)
	if !ok {
		return fmt.Errorf("store: view %s: the %s backend cannot serve a live view of its databases: %w", u.Redacted(), u.Scheme, ErrInvalid)
	}
	return lv.LiveView(ctx, u, fn)
}
