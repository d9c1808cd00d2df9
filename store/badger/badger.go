package badger

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/url"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	shared "github.com/informerdb/informerdb/store/internal/engine"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

// Scheme is the URL scheme of this backend.
const Scheme = "badger"

func init() {
	store.Register(Scheme, rawDriver{readView})
}

func (rawDriver) Open(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	cfg := defaultDBConfig()
	dir, err := rawdb.URLPath("open", u, wantURL, &opts, func(p *driver.Params) {
		cfg.gcInterval = p.Duration("gc_interval", cfg.gcInterval)
		cfg.minFree = p.Bytes("min_free", cfg.minFree)
	})
	if err != nil {
		return nil, err
	}
	return open(ctx, dir, &opts, cfg)
}

// Open opens the store named opts.Name in the badger database in directory
// dir, creating both if needed. opts may be nil; opts.Codec is required.
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
	if err := checkIndexNames(maps.Keys(o.Indexers)); err != nil {
		return nil, fmt.Errorf("store: open %s in badger://%s: %w", o.Name, dir, err)
	}
	set, err := indexer.NewIndexSet(o.Indexers)
	if err != nil {
		return nil, fmt.Errorf("store: open %s in badger://%s: %w", o.Name, dir, err)
	}
	cfg.durability = o.Durability
	sh, err := acquire(ctx, dir, o.Name, cfg, o.LockTimeout, false)
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
	// Only the bounded mode reads index entries.
	inBounded := o.CacheSize > 0
	want := driver.MetaFor(o, FormatVersion)
	sp, reopen, err := openSpace(sh, o.Name, want, inBounded)
	if err != nil {
		return nil, err
	}
	info := want.Info(Scheme, o.Name, "")
	info.Reset = reopen.Reset
	cfg := shared.OpenConfig{
		Options:   o,
		Indexes:   set,
		Where:     sp.where(),
		Rebuild:   reopen.RebuildIndexes,
		CheckData: sp.CheckData,
		OpenError: func(err error) error {
			if !errors.Is(err, store.ErrCorrupt) && (errors.Is(err, store.ErrInvalid) ||
				errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				// An index function that fails on a stored object, or
				// the open's context.
				return fmt.Errorf("store: open %s in %s: %w", o.Name, sp.where(), err)
			}
			return sp.corrupt("read objects", err)
		},
	}
	if inBounded {
		reset, rebuilt, err := shared.Settle(ctx, sp, cfg)
		if err != nil {
			return nil, err
		}
		if reset != "" {
			info.Reset = reset // Settle emptied the store
		} else if !rebuilt {
			// A store last written by the default mode has no index entries.
			if err := sp.buildEntries(ctx); err != nil {
				return nil, fmt.Errorf("store: open %s in %s: build the index entries: %w", sp.name, sp.where(), err)
			}
		}
		return &bounded{Store: shared.New(sp, shared.Config{
			Info:            info,
			Options:         o,
			Indexes:         set,
			ResourceVersion: sp.resourceVersion(),
			CheckData:       sp.CheckData,
		}), extras: extras{sp}}, nil
	}
	c, keyReset, err := shared.Load(ctx, sp, cfg)
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		info.Reset = keyReset // Load emptied the store
	}
	// After the load, so that a store that cannot be read keeps its
	// entries for the bounded mode, or a snapshot, to read. (A rebuild
	// wrote a generation without entries.)
	if !reopen.RebuildIndexes {
		if err := sp.dropEntries(); err != nil {
			return nil, fmt.Errorf("store: open %s in %s: drop the index entries: %w", o.Name, sp.where(), err)
		}
	}
	info.ResourceVersion = sp.resourceVersion()
	cfg.Info = info
	base, err := shared.NewDecoded(sp, c, cfg)
	if err != nil {
		return nil, err
	}
	return &defaultStore{Base: base, extras: extras{sp}}, nil
}

// defaultStore is the store of the default mode: the shared decoded store,
// serving reads from decoded objects. It is safe for concurrent use.
type defaultStore struct {
	*indexer.Base
	extras
}

// bounded is the store of the bounded mode (Options.CacheSize > 0): the
// shared bounded store. It is safe for concurrent use.
type bounded struct {
	*shared.Store
	extras
}

// extras is what the stores of both modes add to the shared ones.
type extras struct{ sp *space }

// DiskSize implements store.DiskSizer: the size of the database directory,
// shared by every store of the database.
func (x extras) DiskSize() (int64, error) { return x.sp.sh.diskSize() }

// Export implements store.Exporter: one read transaction, so records and
// resume point agree while the informer writes.
func (x extras) Export(ctx context.Context, fn func(store.Record) error) (info store.Info, err error) {
	err = x.sp.view(func(txn *badger.Txn, _ keys, _ []string) error {
		info, err = newView(txn, x.sp.where()).Export(ctx, x.sp.name, fn)
		return err
	})
	return info, err
}

var (
	_ store.DiskSizer    = (*defaultStore)(nil)
	_ store.DiskSizer    = (*bounded)(nil)
	_ store.Exporter     = (*defaultStore)(nil)
	_ store.Exporter     = (*bounded)(nil)
	_ store.BatchLimiter = (*defaultStore)(nil)
	_ store.BatchLimiter = (*bounded)(nil)
)

// checkIndexNames refuses index names longer than maxNameLen, which the
// layout keeps inline in every key of their index entries.
func checkIndexNames(names iter.Seq[string]) error {
	for name := range names {
		if len(name) > maxNameLen {
			return fmt.Errorf("index name %.64q... longer than %d bytes: %w", name, maxNameLen, store.ErrInvalid)
		}
	}
	return nil
}

// isStoreErr reports whether err wraps one of the errors of package store.
func isStoreErr(err error) bool {
	for _, s := range []error{store.ErrCorrupt, store.ErrInvalid, store.ErrClosed, store.ErrNotFound, store.ErrIncompatible} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
