package memory

import (
	"context"
	"fmt"
	"net/url"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Scheme is the URL scheme of this backend.
const Scheme = "memory"

// FormatVersion is the version of the records in snapshot files: the
// codec's encoding of each object under its key.
const FormatVersion = 1

func init() {
	store.Register(Scheme, rawDriver)
}

func open(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	p := store.NewParams(u)
	opts.SnapshotInterval = p.Duration("snapshot_interval", opts.SnapshotInterval)
	opts.LockTimeout = p.Duration("lock_timeout", opts.LockTimeout)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if u.Host != "" || u.Opaque != "" {
		return nil, fmt.Errorf("store: open %s: want memory:// or memory:///absolute/path/file.snap (three slashes): %w", u.Redacted(), store.ErrInvalid)
	}
	if u.Path == "" || u.Path == "/" {
		for _, name := range []string{"snapshot_interval", "lock_timeout"} {
			if u.Query().Has(name) {
				return nil, fmt.Errorf("store: open %s: %s needs a file (memory:///path/file.snap): %w", u.Redacted(), name, store.ErrInvalid)
			}
		}
		return New(&opts)
	}
	path, err := snapfile.FilePath(Scheme, u.Path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", u.Redacted(), err)
	}
	return openFile(ctx, path, opts)
}

// New returns an empty memory store that lives as long as the process.
// opts may be nil.
func New(opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	info := baseInfo(o)
	// A memory store keeps objects as given; encoding them would only cost.
	o.Codec = nil
	return indexer.NewBase(indexer.BaseConfig{Info: info, Options: o})
}

// NewFile opens the store named opts.Name in the snapshot file at path,
// creating it on the first snapshot: the objects and resume point of the
// file's last snapshot are loaded, and a new snapshot is written on Close and
// every opts.SnapshotInterval. opts.Codec is required.
func NewFile(ctx context.Context, path string, opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	clean, err := snapfile.FilePath(Scheme, path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return openFile(ctx, clean, o)
}

func baseInfo(o store.Options) store.Info {
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
	return info
}
