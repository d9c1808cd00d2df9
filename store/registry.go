package store

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Driver opens stores of one backend.
type Driver interface {
	// Open opens the store named opts.Name at u. opts has its defaults
	// filled in; URL parameters take precedence over opts, and the driver
	// rejects parameters it does not know (see store/driver.Params).
	Open(ctx context.Context, u *url.URL, opts Options) (Store, error)
}

// DriverFunc adapts a function to Driver.
type DriverFunc func(ctx context.Context, u *url.URL, opts Options) (Store, error)

// Open calls f.
func (f DriverFunc) Open(ctx context.Context, u *url.URL, opts Options) (Store, error) {
	return f(ctx, u, opts)
}

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// Register makes a backend available under a URL scheme. Backends call it
// from init. It panics if d is nil or the scheme is taken, as
// database/sql.Register does: both are programming errors.
func Register(scheme string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d == nil {
		panic("store: Register driver is nil")
	}
	if _, dup := drivers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	drivers[scheme] = d
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	return slices.Sorted(maps.Keys(drivers))
}

// Open opens the store named by opts.Name in the database at rawURL, e.g.
// "memory://", "bolt:///var/lib/app/cache.db?durability=nosync".
// opts may be nil. A URL without a registered scheme (a plain path, "",
// file://) fails with ErrInvalid and an error that lists the registered
// schemes.
func Open(ctx context.Context, rawURL string, opts *Options) (Store, error) {
	d, u, err := driverFor("open", rawURL)
	if err != nil {
		return nil, err
	}
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return d.Open(ctx, u, o)
}

// CheckURL returns the error Open would return for rawURL before it reaches
// a backend: a malformed URL, or a scheme no registered backend serves. It
// does not look at the path: the backend does, when it opens it.
func CheckURL(rawURL string) error {
	_, _, err := driverFor("open", rawURL)
	return err
}

// moduleBackends are the schemes of this module's backends: a URL naming
// one that is not registered lacks the blank import of its package.
var moduleBackends = []string{"badger", "bolt", "memdb", "memory"}

// driverFor parses rawURL and returns the driver registered for its scheme;
// op names the operation in errors.
func driverFor(op, rawURL string) (Driver, *url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("store: %s %q: %w: %w", op, rawURL, ErrInvalid, err)
	}
	driversMu.RLock()
	d := drivers[u.Scheme]
	driversMu.RUnlock()
	if d != nil {
		return d, u, nil
	}
	if slices.Contains(moduleBackends, u.Scheme) {
		return nil, nil, fmt.Errorf("store: %s %q: the %s backend is not registered (forgotten import of github.com/informerdb/informerdb/store/%s?); registered: %s: %w",
			op, rawURL, u.Scheme, u.Scheme, schemeList(), ErrInvalid)
	}
	// A path is not guessed at: a new file has no content to tell its backend.
	what := fmt.Sprintf("unknown scheme %q", u.Scheme)
	if u.Scheme == "" {
		what = "no scheme"
	}
	return nil, nil, fmt.Errorf("store: %s %q: not a database URL (%s): want <scheme>://<path>, the scheme one of %s "+
		"(e.g. bolt:///var/lib/app/cache.db, badger:///var/lib/app/cache, memory://): %w",
		op, rawURL, what, schemeList(), ErrInvalid)
}

func schemeList() string {
	s := Schemes()
	if len(s) == 0 {
		return "none (import a backend package)"
	}
	return strings.Join(s, ", ")
}
