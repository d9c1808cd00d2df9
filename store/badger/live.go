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

// LiveView implements store.RawLiveViewer: one read transaction of the
// database this process's stores share. It blocks no commit; a long one
// costs space (compactions keep the versions it may read).
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) (err error) {
	dir, err := driver.AbsPath(u, wantURL)
	if err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
	// A name of its own keeps the database open until the view ends.
	name := fmt.Sprintf("\x00live-view-%d", rawSeq.Add(1))
	registryMu.Lock()
	sh := registry[dir]
	if sh == nil || sh.opening != nil || !hasStore(sh) {
		registryMu.Unlock()
		return fmt.Errorf("store: view %s: no store of this process has the database open: %w", u.Redacted(), store.ErrClosed)
	}
	sh.names[name] = true
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

// hasStore reports whether a store, not only raw reads, has sh open. The
// caller holds registryMu.
func hasStore(sh *sharedDB) bool {
	for n := range sh.names {
		if !strings.HasPrefix(n, "\x00") {
			return true
		}
	}
	return false
}
