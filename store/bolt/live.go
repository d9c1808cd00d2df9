package bolt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
)

var _ store.RawLiveViewer = rawDriver{}

// LiveView implements store.RawLiveViewer: every store of the file in one
// bbolt read transaction of the handle the stores of this process share, so
// the view is one commit of the file, whichever stores it wrote. A read
// transaction does not block commits, but while it is open the pages that
// commits free cannot be reused (the file grows instead), and a commit that
// makes the file outgrow its memory map (1 GiB, then doubling) waits for it
// to end: a long view delays such a commit by as long.
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) (err error) {
	if u.Host != "" || u.Opaque != "" || !filepath.IsAbs(u.Path) {
		return fmt.Errorf("store: view %s: want an absolute file path, bolt:///abs/path/file.db (three slashes): %w", u.Redacted(), store.ErrInvalid)
	}
	path := canonical(filepath.Clean(u.Path))
	filesMu.Lock()
	f := files[path]
	// A file only the raw driver's reads have open (read-only) is not one
	// the process's stores use, and holding it would keep a store's Open
	// waiting (see openFileLocked).
	if f == nil || !isClosed(f.opened) || f.readOnly || len(f.names) == 0 {
		filesMu.Unlock()
		return fmt.Errorf("store: view %s: no store of this process has the file open: %w", u.Redacted(), store.ErrClosed)
	}
	f.refs++
	filesMu.Unlock()
	defer func() { err = errors.Join(err, f.unref()) }()
	var tx *bbolt.Tx
	if err := guard(func() (err error) {
		tx, err = f.db.Begin(false)
		return err
	}); err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
	defer func() {
		if rerr := tx.Rollback(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("store: view %s: end the read transaction: %w", u.Redacted(), rerr))
		}
	}()
	return fn(&boltView{u: u, tx: tx})
}

// boltView is a store.RawView on one read transaction.
type boltView struct {
	u  *url.URL
	tx *bbolt.Tx
}

func (v *boltView) ListStores(ctx context.Context) ([]store.StoreEntry, error) {
	var entries []store.StoreEntry
	err := guard(func() (err error) {
		entries, err = listStoresTx(ctx, "view", v.u, v.tx)
		return err
	})
	if err != nil {
		return nil, withHint(fmt.Errorf("store: view %s: %w", v.u.Redacted(), err))
	}
	return entries, nil
}

func (v *boltView) Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	var info store.Info
	var fnErr error
	err := guard(func() (err error) {
		info, err = exportTx(ctx, v.tx, name, fn, &fnErr)
		return err
	})
	if fnErr != nil {
		return store.Info{}, fnErr
	}
	if err != nil {
		return store.Info{}, withHint(fmt.Errorf("store: export %s from %s: %w", name, v.u.Redacted(), err))
	}
	return info, nil
}
