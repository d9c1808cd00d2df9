package bolt

import (
	"context"
	"net/url"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

var _ store.RawLiveViewer = rawDriver{}

// LiveView implements store.RawLiveViewer: every store of the file in one
// read transaction of this process's handle, so one commit of the file.
// While it is open, freed pages are not reused (the file grows), and a
// commit that outgrows the memory map (1 GiB, then doubling) waits for it.
func (rawDriver) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) error {
	var f *file
	hold := func(path string) (func() error, bool) {
		// A file only raw reads have open (read-only) is not one the
		// stores use, and holding it would keep a store's Open waiting.
		var ok bool
		if f, ok = files.Join(canonical(path), func(f *file) bool { return !f.readOnly }); !ok {
			return nil, false
		}
		return func() error { return f.release("") }, true
	}
	return rawdb.LiveView(u, wantURL, "file", hold, func(fn func(v *rawdb.View) error) error {
		return viewFile(f, u.Redacted(), fn)
	}, fn)
}
