package badger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

var _ store.RawLiveViewer = rawDriver{}

// LiveView implements store.RawLiveViewer: every store of the database in
// one badger read transaction of the database the stores of this process
// share, so the view is the database at one commit timestamp. A read
// transaction blocks no commit; while it is open, compactions keep the
// versions it may read, so a long view costs space, not time.
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) (err error) {
	dir, err := driver.AbsPath(u, wantURL)
	if err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
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
	return fn(newView(txn, u.Redacted()))
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
