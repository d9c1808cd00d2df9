package store

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Driver opens stores of one backend.
type Driver interface {
	// Open opens the store named opts.Name at u. opts has its defaults
	// filled in; URL parameters take precedence over opts, and the driver
	// rejects parameters it does not know (see Params).
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
	s := make([]string, 0, len(drivers))
	for k := range drivers {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Open opens the store named by opts.Name in the database at rawURL, e.g.
// "memory://", "bolt:///var/lib/app/cache.db?durability=nosync".
// opts may be nil.
func Open(ctx context.Context, rawURL string, opts *Options) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w: %w", rawURL, ErrInvalid, err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("store: open %q: no scheme; want one of %s: %w", rawURL, schemeList(), ErrInvalid)
	}
	driversMu.RLock()
	d := drivers[u.Scheme]
	driversMu.RUnlock()
	if d == nil {
		return nil, fmt.Errorf("store: open %q: unknown scheme %q (forgotten import of github.com/informerdb/informerdb/store/%s?); registered: %s: %w",
			rawURL, u.Scheme, u.Scheme, schemeList(), ErrInvalid)
	}
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return d.Open(ctx, u, o)
}

func schemeList() string {
	s := Schemes()
	if len(s) == 0 {
		return "none (import a backend package)"
	}
	return strings.Join(s, ", ")
}
