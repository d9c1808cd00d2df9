package badger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/informerdb/informerdb/store"
)

var _ store.RawLiveViewer = rawDriver{}

// LiveView implements store.RawLiveViewer: every store of the database in
// one badger read transaction of the database the stores of this process
// share, so the view is the database at one commit timestamp. A read
// transaction blocks no commit; while it is open, compactions keep the
// versions it may read, so a long view costs space, not time.
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) (err error) {
	if u.Host != "" || u.Opaque != "" || !filepath.IsAbs(u.Path) {
		return fmt.Errorf("store: view %s: want badger:///absolute/directory (three slashes): %w", u.Redacted(), store.ErrInvalid)
	}
	dir := filepath.Clean(u.Path)
	// Like a raw read, the view reserves a name of its own, so that the
	// database stays open until it ends even if the stores close.
	name := fmt.Sprintf("\x00live-view-%d", rawSeq.Add(1))
	registryMu.Lock()
	sh := registry[dir]
	if sh == nil || sh.opening != nil || !hasStore(sh) {
		registryMu.Unlock()
		return fmt.Errorf("store: view %s: no store of this process has the database open: %w", u.Redacted(), store.ErrClosed)
	}
	sh.names[name] = true
	sh.refs++
	registryMu.Unlock()
	defer func() {
		if rerr := sh.release(name); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	txn := sh.db.NewTransaction(false)
	defer txn.Discard()
	return fn(&badgerView{u: u, txn: txn})
}

// hasStore reports whether a store (not only raw reads, whose names start
// with NUL) has sh open. The caller holds registryMu.
func hasStore(sh *sharedDB) bool {
	for n := range sh.names {
		if !strings.HasPrefix(n, "\x00") {
			return true
		}
	}
	return false
}

// badgerView is a store.RawView on one read transaction.
type badgerView struct {
	u   *url.URL
	txn *badger.Txn
}

func (v *badgerView) ListStores(ctx context.Context) (entries []store.StoreEntry, err error) {
	defer v.recover("view", &err)
	entries, err = listStoresTxn(ctx, "view", v.u, v.txn)
	if err != nil {
		return nil, fmt.Errorf("store: view %s: %w", v.u.Redacted(), err)
	}
	return entries, nil
}

func (v *badgerView) Export(ctx context.Context, name string, fn func(store.Record) error) (info store.Info, err error) {
	defer v.recover("export "+name, &err)
	info, err = exportTxn(ctx, v.txn, name, fn)
	if err != nil {
		return store.Info{}, fmt.Errorf("store: export %s from %s: %w", name, v.u.Redacted(), err)
	}
	return info, nil
}

// recover turns a panic of badger reading damaged files into ErrCorrupt,
// as withDB does.
func (v *badgerView) recover(op string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("store: %s %s: badger panicked reading the database: %w: %v", op, v.u.Redacted(), store.ErrCorrupt, r)
	}
}
