package bolt

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

var _ store.RawLiveViewer = rawDriver{}

// LiveView implements store.RawLiveViewer: every store of the file in one
// read transaction of this process's handle, so one commit of the file.
// While it is open, freed pages are not reused (the file grows), and a
// commit that outgrows the memory map (1 GiB, then doubling) waits for it.
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) (err error) {
	path, err := driver.AbsPath(u, wantURL)
	if err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
	path = canonical(path)
	filesMu.Lock()
	f := files[path]
	// A file only raw reads have open (read-only) is not one the stores
	// use, and holding it would keep a store's Open waiting.
	if f == nil || !isClosed(f.opened) || f.readOnly || len(f.names) == 0 {
		filesMu.Unlock()
		return fmt.Errorf("store: view %s: no store of this process has the file open: %w", u.Redacted(), store.ErrClosed)
	}
	f.refs++
	filesMu.Unlock()
	defer func() { err = errors.Join(err, f.release("")) }()
	return viewFile(f, u.Redacted(), func(v *rawdb.View) error { return fn(v) })
}
