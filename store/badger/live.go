package badger

import (
	"context"
	"net/url"

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
		// A reference keeps the database open until the view ends.
		var ok bool
		if sh, ok = registry.Join(dir, func(*sharedDB) bool { return true }); !ok {
			return nil, false
		}
		return func() error { return sh.release("") }, true
	}
	return rawdb.LiveView(u, wantURL, "database", hold, func(fn func(v *rawdb.View) error) error {
		txn := sh.db.NewTransaction(false)
		defer txn.Discard()
		return fn(newView(txn, u.Redacted()))
	}, fn)
}
