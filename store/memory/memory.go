package memory

import (
	"context"
	"fmt"
	"net/url"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// Scheme is the URL scheme of this backend.
const Scheme = "memory"

// FormatVersion is the version of the snapshot file format.
const FormatVersion = 1

func init() {
	store.Register(Scheme, store.DriverFunc(open))
}

func open(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	p := store.NewParams(u)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if u.Host != "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("store: open %s: memory stores take no file yet: %w", u.Redacted(), store.ErrInvalid)
	}
	return New(&opts)
}

// New returns an empty memory store. opts may be nil.
func New(opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	info := store.Info{
		Backend:       Scheme,
		Name:          o.Name,
		FormatVersion: FormatVersion,
		KeyFunc:       o.KeyFuncName,
		Scope:         o.Scope,
	}
	if o.Codec != nil {
		info.Codec, info.Type = o.Codec.Name(), o.Codec.Type()
	}
	// A memory store keeps objects as given; encoding them would only cost.
	o.Codec = nil
	return indexer.NewBase(indexer.BaseConfig{Info: info, Persister: nopPersister{}, Options: o})
}

// nopPersister keeps nothing: the cache is the store.
type nopPersister struct{}

func (nopPersister) Persist(context.Context, []indexer.Change, string, bool) error { return nil }
func (nopPersister) PersistIndexes(context.Context, *indexer.IndexSet, map[string][][]string) error {
	return nil
}
func (nopPersister) Close() error { return nil }
