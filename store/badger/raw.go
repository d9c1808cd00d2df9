package badger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

// Raw returns the badger driver with record-level access (store.RawDriver),
// for the snapshot tool.
func Raw() store.RawDriver { return rawDriver{readView} }

// rawDriver implements store.RawDriver; its Reader (readView) serves
// Stores, ListStores and Export. It is safe for concurrent use.
type rawDriver struct{ rawdb.Reader }

var _ store.RawDriver = rawDriver{}

const wantURL = "badger:///absolute/directory"

// rawDir checks u and returns its directory, options and database settings
// for one raw access (no value-log GC).
func rawDir(op string, u *url.URL) (string, store.Options, dbConfig, error) {
	cfg := defaultDBConfig()
	cfg.gcInterval = 0
	dir, o, err := rawdb.RawOptions(op, u, wantURL, func(p *driver.Params) {
		cfg.minFree = p.Bytes("min_free", cfg.minFree)
	})
	cfg.durability = o.Durability
	return dir, o, cfg, err
}

// withDB runs fn on the database at u (shared with this process's stores),
// with name reserved (a read passes ""). Unless create, a missing directory
// is store.ErrNotFound.
func withDB(ctx context.Context, op string, u *url.URL, name string, create bool, fn func(sh *sharedDB) error) (err error) {
	dir, o, cfg, err := rawDir(op, u)
	if err != nil {
		return err
	}
	if !create {
		if err := checkExists(dir); err != nil {
			return fmt.Errorf("store: %s badger://%s: %w", op, dir, err)
		}
	}
	sh, err := acquire(ctx, dir, name, cfg, o.LockTimeout, true)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := sh.release(name); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: %s badger://%s: badger panicked reading the database: %w: %v", op, dir, store.ErrCorrupt, r)
		}
	}()
	return fn(sh)
}

// checkExists fails with store.ErrNotFound unless dir exists with files:
// opening an empty directory would make a database of it.
func checkExists(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	if err != nil {
		return err
	}
	if fi.IsDir() && !dirHasFiles(dir) {
		return fmt.Errorf("no database in the directory (it is empty): %w", store.ErrNotFound)
	}
	return nil
}

// IndexEntries calls fn with every index entry (index name, value, object
// key) of the store name in the database at u, as a bounded-mode open would
// serve them (snapshot.IndexEntries): a store that keeps none yields those
// its value records imply.
func IndexEntries(ctx context.Context, u *url.URL, name string, fn func(index, value, key string) error) error {
	return rawdb.Reader(readView).IndexEntries(ctx, u, name, fn)
}

func readView(ctx context.Context, op string, u *url.URL, fn func(v *rawdb.View) error) error {
	return withDB(ctx, op, u, "", false, func(sh *sharedDB) error {
		return sh.db.View(func(txn *badger.Txn) error {
			return fn(newView(txn, u.Redacted()))
		})
	})
}

func newView(txn *badger.Txn, where string) *rawdb.View {
	return &rawdb.View{Tx: rawTxn{txn}, Backend: Scheme, Where: where, Guard: guard}
}

// guard turns a panic of badger on damaged files into store.ErrCorrupt.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked reading the database: %w: %v", store.ErrCorrupt, r)
		}
	}()
	return fn()
}

type rawTxn struct{ txn *badger.Txn }

// EachStore implements rawdb.Tx, skipping stores without a meta record.
func (t rawTxn) EachStore(ctx context.Context, fn func(name string, info store.Info, err error) error) error {
	err := eachStoreName(t.txn, func(name string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		info, _, err := rawInfo(t.txn, name)
		if errors.Is(err, store.ErrNotFound) && !errors.Is(err, errDropped) {
			return nil
		}
		return fn(name, info, err)
	})
	if errors.Is(err, errBadRecord) {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	return err
}

// errDropped is wrapped by rawInfo's errors for a store whose Drop did not
// finish: it is gone, but some of its keys are left.
var errDropped = errors.New("its drop did not finish")

// rawInfo reads the meta record of the store name in txn.
func rawInfo(txn *badger.Txn, name string) (store.Info, metaRecord, error) {
	m, unsealed, found, err := readMeta(txn, newKeys(name, 0).meta())
	switch {
	case found && err != nil:
		return store.Info{}, m, fmt.Errorf("store %q: %w: %w", name, store.ErrCorrupt, err)
	case err != nil:
		return store.Info{}, metaRecord{}, err
	case !found:
		return store.Info{}, metaRecord{}, fmt.Errorf("store %q: %w", name, store.ErrNotFound)
	}
	if unsealed && !m.Dropped {
		return store.Info{}, m, fmt.Errorf("store %q: format version %d, %w: %w", name, m.FormatVersion, errUnsealed, store.ErrIncompatible)
	}
	if m.Dropped {
		return store.Info{}, metaRecord{}, fmt.Errorf("store %q: %w: %w", name, errDropped, store.ErrNotFound)
	}
	m, _ = m.upgrade()
	if m.FormatVersion != FormatVersion {
		return store.Info{}, m, fmt.Errorf("store %q: format version %d, this build reads %d (and %d): %w", name, m.FormatVersion, FormatVersion, formatV1, store.ErrIncompatible)
	}
	return m.Info(Scheme, name, m.ResourceVersion), m, nil
}

// Export implements rawdb.Tx.
func (t rawTxn) Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	info, m, err := rawInfo(t.txn, name)
	if err != nil {
		return info, err
	}
	k := newKeys(name, m.Generation)
	err = eachUnder(ctx, t.txn, k.objPrefix(), func(item *badger.Item, suffix []byte) error {
		key, data, err := objectRecord(item, suffix)
		if err != nil {
			return err
		}
		var vals [][]string
		if n := len(m.Indexes); n > 0 {
			if vals, err = readValues(t.txn, k, key, n); err != nil {
				return err
			}
		}
		return fn(store.Record{Key: key, Data: data, Values: vals})
	})
	if err != nil {
		return store.Info{}, err
	}
	return info, nil
}

// IndexEntries implements rawdb.Tx.
func (t rawTxn) IndexEntries(ctx context.Context, name string, fn func(index, value, key string) error) error {
	_, m, err := rawInfo(t.txn, name)
	if err != nil {
		return err
	}
	k := newKeys(name, m.Generation)
	if !m.Entries {
		return eachImpliedEntry(ctx, t.txn, k, m.Indexes, fn)
	}
	return eachStoredEntry(ctx, t.txn, k, fn)
}

// Import implements store.RawDriver: the records are written into a new
// generation, switched to with info's metadata and resume point in one
// final transaction; a failure or crash before leaves the store as it was.
func (rawDriver) Import(ctx context.Context, u *url.URL, info store.Info, next func() (store.Record, error)) error {
	name := info.Name
	fail := func(err error) error {
		return fmt.Errorf("store: import %s into %s: %w", name, u.Redacted(), err)
	}
	if err := rawdb.CheckImport(info, maxNameLen); err != nil {
		return fail(err)
	}
	if err := checkIndexNames(slices.Values(info.Indexes)); err != nil {
		return fail(err)
	}
	err := withDB(ctx, "import "+name, u, name, true, func(sh *sharedDB) error {
		return importDB(ctx, sh, info, next)
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

func importDB(ctx context.Context, sh *sharedDB, info store.Info, next func() (store.Record, error)) error {
	s := &space{sh: sh, name: info.Name}
	k := newKeys(info.Name, 0)
	err := sh.db.View(func(txn *badger.Txn) error {
		_, m, err := rawInfo(txn, info.Name)
		// A damaged or incompatible meta record is replaced too.
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrIncompatible) && !errors.Is(err, store.ErrCorrupt) {
			return err
		}
		s.rec = m
		return nil
	})
	if err != nil {
		return err
	}
	s.k = k.withGen(s.rec.Generation)
	if _, s.nextGen, err = s.generations(s.rec.Generation + 1); err != nil {
		return fmt.Errorf("list generations: %w: %w", store.ErrCorrupt, err)
	}
	recs, err := rawdb.NewRecords(info, FormatVersion, next)
	if err != nil {
		return err
	}
	names := recs.Meta.Indexes
	seen := map[string]struct{}{}
	err = s.rebuild(ctx, false, false, nil, func(w writer, nk keys) error {
		for {
			rec, err := recs.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := checkObjectSize(rec.Key, rec.Data, s.sh.cfg.valueLogFileSize); err != nil {
				return err
			}
			if _, dup := seen[rec.Key]; dup {
				return rawdb.Twice(rec.Key)
			}
			seen[rec.Key] = struct{}{}
			c := indexer.Change{Prepared: indexer.Prepared{Type: store.OpPut, Key: rec.Key, Data: rec.Data, Values: rec.Values}}
			if err := writeChange(w, nk, names, true, &c); err != nil {
				return err
			}
		}
	}, func(m *metaRecord) {
		m.Meta = recs.Meta
		m.ResourceVersion = recs.ResourceVersion
		// Every entry was written.
		m.Entries = true
	})
	if err != nil {
		return err
	}
	return sh.named(info.Name)
}

// testHookDrop, set by tests, runs after each step of Drop a crash could
// follow; its error stops the drop there, as a crash.
var testHookDrop func(step string) error

func dropStep(step string) error {
	if testHookDrop != nil {
		return testHookDrop(step)
	}
	return nil
}

// Drop implements store.RawDriver. A store's keys may take several
// transactions to delete, and the store must be gone from the first: Drop
// writes a drop marker (metaRecord.Dropped) first, then deletes every
// generation, then the meta record; badger writes in order, so a crash
// keeps a prefix of these steps. After the marker the store is gone
// (Stores skips it, an Open starts empty, a Drop finishes the job); an
// older build opens it empty rather than at generation 1 with leftovers.
//
// Other stores may stay open meanwhile; the store itself must be closed
// (store.ErrInUse). Badger gives the space back in compactions and GC.
func (rawDriver) Drop(ctx context.Context, u *url.URL, name string) error {
	fail := func(err error) error {
		return fmt.Errorf("store: drop %s from %s: %w", name, u.Redacted(), err)
	}
	if err := rawdb.CheckName(name, maxNameLen); err != nil {
		return fail(err)
	}
	if _, _, _, err := rawDir("drop "+name, u); err != nil {
		return err
	}
	// A drop has nothing to create.
	err := withDB(ctx, "drop "+name, u, name, false, func(sh *sharedDB) error {
		return dropStore(ctx, sh, name)
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

func dropStore(ctx context.Context, sh *sharedDB, name string) error {
	s := &space{sh: sh, name: name, k: newKeys(name, 0)}
	var m metaRecord
	err := sh.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(s.k.meta())
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("no store %q in the database: %w", name, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		raw, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		// Readable or not: dropping is also the way out of a store
		// this build cannot open.
		m, _, _ = decodeMeta(s.k.meta(), raw)
		return nil
	})
	if err != nil {
		return err
	}
	// Before the marker: the stores file never names a store that is gone.
	if err := sh.stores.set(name, false); err != nil {
		return err
	}
	if !m.Dropped {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, next, err := s.generations(m.Generation + 1)
		if err != nil {
			return fmt.Errorf("list generations: %w: %w", store.ErrCorrupt, err)
		}
		m.Dropped = true
		m.Generation = next
		m.ResourceVersion = ""
		if err := s.writeMeta(m); err != nil {
			return fmt.Errorf("mark the store dropped: %w", err)
		}
		if err := dropStep("marked"); err != nil {
			return err
		}
	}
	// The store is gone; ctx no longer stops the cleanup of its garbage.
	if _, err := s.deletePrefix(append(append([]byte(nil), s.k.store...), tagGen)); err != nil {
		return fmt.Errorf("delete the store's keys (the store is dropped; a later Drop of the name deletes the rest): %w", err)
	}
	if err := dropStep("generations deleted"); err != nil {
		return err
	}
	if err := sh.syncBatches(store.DurabilitySync); err != nil {
		return err
	}
	err = sh.durable(sh.update(func(txn *badger.Txn) error {
		return txn.Delete(s.k.meta())
	}))
	if err != nil {
		return fmt.Errorf("delete the meta record (the store is dropped; a later Drop of the name deletes it): %w", err)
	}
	return nil
}
