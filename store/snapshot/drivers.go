package snapshot

import (
	"context"
	"net/url"
	"sync"

	"github.com/informerdb/informerdb/store"
)

// Raw drivers registered with this package, by URL scheme, override the
// store registry's: a scheme not registered here goes through store.Stores,
// store.Export and store.Import, which reach every bundled backend (each
// registers its raw driver with store.Register).
var (
	driversMu sync.RWMutex // guards drivers
	drivers   = map[string]store.RawDriver{}
)

// RegisterDriver makes d the driver this package uses for URLs of scheme,
// replacing any earlier one. It is safe for concurrent use.
func RegisterDriver(scheme string, d store.RawDriver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[scheme] = d
}

func lookup(rawURL string) (store.RawDriver, *url.URL) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil
	}
	driversMu.RLock()
	defer driversMu.RUnlock()
	return drivers[u.Scheme], u
}

func storesOf(ctx context.Context, rawURL string) ([]store.Info, error) {
	if d, u := lookup(rawURL); d != nil {
		return d.Stores(ctx, u)
	}
	return store.Stores(ctx, rawURL)
}

func frozenViewOf(ctx context.Context, rawURL string) (string, func() error, error) {
	if d, u := lookup(rawURL); d != nil {
		return store.FrozenViewOf(ctx, d, u)
	}
	return store.FrozenView(ctx, rawURL)
}

func listStoresOf(ctx context.Context, rawURL string) ([]store.StoreEntry, error) {
	if d, u := lookup(rawURL); d != nil {
		return store.ListStoresOf(ctx, d, u)
	}
	return store.ListStores(ctx, rawURL)
}

func exportOf(ctx context.Context, rawURL, name string, fn func(store.Record) error) (store.Info, error) {
	if d, u := lookup(rawURL); d != nil {
		return d.Export(ctx, u, name, fn)
	}
	return store.Export(ctx, rawURL, name, fn)
}

func importInto(ctx context.Context, rawURL string, info store.Info, next func() (store.Record, error)) error {
	if d, u := lookup(rawURL); d != nil {
		return d.Import(ctx, u, info, next)
	}
	return store.Import(ctx, rawURL, info, next)
}
