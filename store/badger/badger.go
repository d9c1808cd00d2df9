package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// Scheme is the URL scheme of this backend.
const Scheme = "badger"

func init() {
	store.Register(Scheme, rawDriver{})
}

func openURL(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	p := driver.NewParams(u)
	p.Common(&opts)
	cfg := defaultDBConfig()
	cfg.gcInterval = p.Duration("gc_interval", cfg.gcInterval)
	cfg.minFree = p.Bytes("min_free", cfg.minFree)
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
	if err := checkIndexNames(o.Indexers); err != nil {
		return nil, fmt.Errorf("store: open %s in badger://%s: %w", o.Name, dir, err)
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
	// The bounded mode reads index entries; the default mode serves
	// indexes from memory and keeps none.
	bounded := o.CacheSize > 0
	sp, reopen, err := openSpace(sh, o.Name, driver.MetaFor(o, FormatVersion), bounded)
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
	if bounded {
		return openBounded(ctx, sp, o, set, info, reopen.RebuildIndexes)
	}
	c, keyReset, err := load(ctx, sp, o, set, reopen.RebuildIndexes)
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		if err := sp.emptyForKeys(false, keyReset); err != nil {
			return nil, err
		}
		c, info.Reset = indexer.NewCache(set), keyReset
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
	base, err := indexer.NewBase(indexer.BaseConfig{
		Info: info, Persister: sp, Options: o, Cache: c,
		// A transaction or write batch is written (values copied into the
		// value log, the memtable and its log) before Persist returns, and
		// nothing of it is kept.
		CopiesData: true,
	})
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

// AddIndexers implements cache.Indexer, refusing the index names Open
// refuses before indexer.Base persists anything: the store could not be
// opened again with the index set it records.
func (d *defaultStore) AddIndexers(newIndexers cache.Indexers) error {
	if err := checkIndexNames(newIndexers); err != nil {
		return fmt.Errorf("store: add indexers: %w", err)
	}
	return d.Base.AddIndexers(newIndexers)
}

// checkIndexNames refuses index names longer than maxNameLen, which the
// layout keeps inline in every key of their index entries.
func checkIndexNames(indexers cache.Indexers) error {
	for name := range indexers {
		if len(name) > maxNameLen {
			return fmt.Errorf("index name %.64q... longer than %d bytes: %w", name, maxNameLen, store.ErrInvalid)
		}
	}
	return nil
}

// load decodes every object of sp into a cache over set, with the index
// values set's functions compute, and persists those values when rebuild,
// or when they differ from the stored ones (see indexer.ValueCheck). If
// o.KeyFunc no longer computes the keys the objects are stored under (see
// indexer.KeyCheck), it writes nothing and returns why in keyReset.
// Decoding is most of a resume's cost (about 11 us per Pod), so one
// goroutine per CPU decodes while this one reads badger.
func load(ctx context.Context, sp *space, o store.Options, set *indexer.IndexSet, rebuild bool) (c *indexer.Cache, keyReset string, err error) {
	codec := o.Codec
	var vals map[string][][]string
	if !rebuild {
		if vals, err = sp.loadValues(); err != nil {
			return nil, "", sp.corrupt("read index values", err)
		}
	}
	c = indexer.NewCache(set)
	check := indexer.NewValueCheck(set)
	keys := indexer.NewKeyCheck(o.KeyFunc)
	type record struct {
		key, suffix string
		data        []byte
	}
	const chunk = 256
	var (
		work     = make(chan []record, 2*runtime.GOMAXPROCS(0))
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		mu       sync.Mutex // guards firstErr and computed
		firstErr error
		computed map[string][][]string
	)
	if rebuild {
		computed = map[string][][]string{}
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			close(stop)
		}
	}
	decode := func(rs []record) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = sp.corrupt("decode objects", fmt.Errorf("codec panicked: %v", r))
			}
		}()
		ps := make([]indexer.Prepared, len(rs))
		for i, r := range rs {
			obj, err := indexer.Decode(codec, r.data)
			if err != nil {
				return sp.corrupt(fmt.Sprintf("decode object %q with %s codec", r.key, codec.Name()), err)
			}
			keys.Check(r.key, obj)
			var v [][]string
			if rebuild {
				if v, err = set.Values(r.key, obj); err != nil {
					return fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
				}
				mu.Lock()
				computed[r.key] = v
				mu.Unlock()
			} else if set.Len() > 0 {
				stored, ok := vals[r.suffix]
				if !ok {
					return sp.corrupt(fmt.Sprintf("object %q has no index values", r.key), errBadRecord)
				}
				if v, err = check.Values(r.key, obj, stored); err != nil {
					if errors.Is(err, store.ErrInvalid) {
						// An index function that fails on a stored object.
						return fmt.Errorf("store: open %s in %s: %w", sp.name, sp.where(), err)
					}
					return sp.corrupt("read index values", err)
				}
			}
			ps[i] = indexer.Prepared{Type: store.OpPut, Key: r.key, Object: obj, Values: v}
		}
		c.Apply(ps)
		return nil
	}
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rs := range work {
				if err := decode(rs); err != nil {
					fail(err)
				}
			}
		}()
	}
	batch := make([]record, 0, chunk)
	err = sp.scanObjects(func(key, suffix string, data []byte) error {
		batch = append(batch, record{key: key, suffix: suffix, data: bytes.Clone(data)})
		if len(batch) < chunk {
			return nil
		}
		select {
		case work <- batch:
		case <-stop:
			return errStopped
		case <-ctx.Done():
			return ctx.Err()
		}
		batch = make([]record, 0, chunk)
		return nil
	})
	if err == nil && len(batch) > 0 {
		select {
		case work <- batch:
		case <-stop:
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return nil, "", firstErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, "", fmt.Errorf("store: open %s in %s: %w", sp.name, sp.where(), err)
	}
	if err != nil {
		return nil, "", wrapScanErr(sp, err)
	}
	if r := keys.Reset(o.KeyFuncName); r != "" {
		return nil, r, nil
	}
	if rebuild {
		if err := sp.reindex(ctx, set.Names(), computed, false); err != nil {
			return nil, "", fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
		}
	}
	if stale := check.Stale(); stale != nil {
		// An index function changed under the same name: store what the
		// cache now serves.
		indexer.LogStale(sp.name, sp.where(), stale)
		computed = make(map[string][][]string, c.Len())
		for _, key := range c.ListKeys() {
			computed[key], _ = c.IndexValues(key)
		}
		if err := sp.reindex(ctx, set.Names(), computed, false); err != nil {
			return nil, "", fmt.Errorf("store: open %s in %s: store the index values of changed index functions: %w", sp.name, sp.where(), err)
		}
	}
	return c, "", nil
}

var errStopped = errors.New("stopped")

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
