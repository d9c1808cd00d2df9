package badger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

// Scheme is the URL scheme of this backend.
const Scheme = "badger"

func init() {
	store.Register(Scheme, store.DriverFunc(openURL))
}

func openURL(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	p := store.NewParams(u)
	p.Common(&opts)
	cfg := defaultDBConfig()
	cfg.gcInterval = p.Duration("gc_interval", cfg.gcInterval)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if u.Host != "" || u.Opaque != "" || !filepath.IsAbs(u.Path) {
		return nil, fmt.Errorf("store: open %s: want badger:///absolute/directory (three slashes): %w", u.Redacted(), store.ErrInvalid)
	}
	return open(ctx, u.Path, &opts, cfg)
}

// Open opens the store named opts.Name in the badger database in directory
// dir, creating both if needed. opts may be nil; opts.Codec is required. The
// value log is garbage collected every DefaultGCInterval.
func Open(ctx context.Context, dir string, opts *store.Options) (store.Store, error) {
	return open(ctx, dir, opts, defaultDBConfig())
}

func open(ctx context.Context, dir string, opts *store.Options, cfg dbConfig) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	if o.Codec == nil {
		return nil, fmt.Errorf("store: open %s in badger://%s: a Codec is required: %w", o.Name, dir, store.ErrInvalid)
	}
	if dir == "" {
		return nil, fmt.Errorf("store: open %s: empty directory: %w", o.Name, store.ErrInvalid)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: open %s in badger://%s: %w: %w", o.Name, dir, store.ErrInvalid, err)
	}
	if len(o.Name) > maxNameLen {
		return nil, fmt.Errorf("store: open %.64s... in badger://%s: store name longer than %d bytes: %w", o.Name, dir, maxNameLen, store.ErrInvalid)
	}
	for name := range o.Indexers {
		if len(name) > maxNameLen {
			return nil, fmt.Errorf("store: open %s in badger://%s: index name %.64q... longer than %d bytes: %w", o.Name, dir, name, maxNameLen, store.ErrInvalid)
		}
	}
	set, err := indexer.NewIndexSet(o.Indexers)
	if err != nil {
		return nil, fmt.Errorf("store: open %s in badger://%s: %w", o.Name, dir, err)
	}
	cfg.durability = o.Durability
	sh, err := acquire(ctx, dir, o.Name, cfg, o.LockTimeout)
	if err != nil {
		return nil, err
	}
	s, err := openStore(ctx, sh, o, set)
	if err != nil {
		_ = sh.release(o.Name)
		return nil, err
	}
	return s, nil
}

func openStore(ctx context.Context, sh *sharedDB, o store.Options, set *indexer.IndexSet) (st store.Store, err error) {
	// badger panics on some damaged data it only finds while reading.
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, fmt.Errorf("store: open %s in badger://%s: badger panicked reading the database (delete the directory to start over; informers relist): %w: %v",
				o.Name, sh.dir, store.ErrCorrupt, r)
		}
	}()
	sp, reopen, err := openSpace(sh, o.Name, store.MetaFor(o, FormatVersion))
	if err != nil {
		return nil, err
	}
	info := store.Info{
		Backend:       Scheme,
		Name:          o.Name,
		FormatVersion: FormatVersion,
		Codec:         o.Codec.Name(),
		Type:          o.Codec.Type(),
		KeyFunc:       o.KeyFuncName,
		Scope:         o.Scope,
		Reset:         reopen.Reset,
	}
	if o.CacheSize > 0 {
		return openBounded(ctx, sp, o, set, info, reopen.RebuildIndexes)
	}
	c, err := load(ctx, sp, o.Codec, set, reopen.RebuildIndexes)
	if err != nil {
		return nil, err
	}
	info.ResourceVersion = sp.resourceVersion()
	base, err := indexer.NewBase(indexer.BaseConfig{Info: info, Persister: sp, Options: o, Cache: c})
	if err != nil {
		return nil, err
	}
	return &defaultStore{Base: base, sp: sp}, nil
}

// defaultStore is the store of the default mode: indexer.Base serving reads
// from decoded objects, writing through the space. It is safe for
// concurrent use.
type defaultStore struct {
	*indexer.Base
	sp *space
}

// load decodes every object of sp into a cache over set, with its stored
// index values, or, when rebuild, with values computed by set and persisted.
func load(ctx context.Context, sp *space, codec store.Codec, set *indexer.IndexSet, rebuild bool) (*indexer.Cache, error) {
	var vals map[string][][]string
	var err error
	if !rebuild {
		if vals, err = sp.loadValues(); err != nil {
			return nil, sp.corrupt("read index values", err)
		}
	}
	c := indexer.NewCache(set)
	const chunk = 1024
	ps := make([]indexer.Prepared, 0, chunk)
	var computed map[string][][]string
	if rebuild {
		computed = map[string][][]string{}
	}
	err = sp.scanObjects(func(key, suffix string, data []byte) error {
		obj, err := codec.Decode(data)
		if err != nil {
			return sp.corrupt(fmt.Sprintf("decode object %q with %s codec", key, codec.Name()), err)
		}
		var v [][]string
		if rebuild {
			if v, err = set.Values(key, obj); err != nil {
				return fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
			}
			computed[key] = v
		} else if set.Len() > 0 {
			var ok bool
			if v, ok = vals[suffix]; !ok {
				return sp.corrupt(fmt.Sprintf("object %q has no index values", key), errBadRecord)
			}
		}
		ps = append(ps, indexer.Prepared{Type: store.OpPut, Key: key, Object: obj, Values: v})
		if len(ps) == chunk {
			c.Apply(ps)
			ps = ps[:0]
		}
		return nil
	})
	if err != nil {
		return nil, wrapScanErr(sp, err)
	}
	c.Apply(ps)
	if rebuild {
		if err := sp.reindex(ctx, set.Names(), computed); err != nil {
			return nil, fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
		}
	}
	return c, nil
}

// wrapScanErr returns errors of ours as they are and marks badger's read
// errors as corruption.
func wrapScanErr(sp *space, err error) error {
	if isStoreErr(err) {
		return err
	}
	return sp.corrupt("read objects", err)
}

func isStoreErr(err error) bool {
	for _, s := range []error{store.ErrCorrupt, store.ErrInvalid, store.ErrClosed, store.ErrNotFound, store.ErrIncompatible} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
