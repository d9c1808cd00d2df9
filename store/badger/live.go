package badger

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

var _ store.RawLiveViewer = rawDriver{}

// LiveView implements store.RawLiveViewer: one read transaction of the
// database this process's stores share. It blocks no commit; a long one
// costs space (compactions keep the versions it may read).
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) error {
	var sh *sharedDB
	hold := func(dir string) (func() error, bool) {
		// A name of its own keeps the database open until the view ends.
		name := fmt.Sprintf("\x00live-view-%d", rawSeq.Add(1))
		registryMu.Lock()
		defer registryMu.Unlock()
		if sh = registry[dir]; sh == nil || sh.opening != nil || !hasStore(sh) {
			return nil, false
		}
		sh.names[name] = true
		return func() error { return sh.release(name) }, true
	}
	return rawdb.LiveView(u, wantURL, "database", hold, func(fn func(v *rawdb.View) error) error {
		txn := sh.db.NewTransaction(false)
		defer txn.Discard()
		return fn(newView(txn, u.Redacted()))
	}, fn)
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
