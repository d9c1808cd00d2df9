package memdb

import (
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Raw returns the memdb driver with record-level access (store.RawDriver)
// to snapshot files, for the snapshot tool; see snapfile.RawDriver. Its Open
// is the registered driver's.
func Raw() store.RawDriver { return rawDriver }

// rawDriver is the driver registered for Scheme.
var rawDriver = &snapfile.RawDriver{
	Scheme:        Scheme,
	FormatVersion: FormatVersion,
	OpenStore:     open,
	WithFileLocked: func(path string, f func(open bool) error) error {
		filesMu.Lock()
		defer filesMu.Unlock()
		return f(files[path] != nil || opening.Busy(path))
	},
	Live: live,
}

// live returns the committed state of the file at path (see
// snapfile.RawDriver.Live).
func live(path string) ([]snapfile.Section, bool) {
	filesMu.Lock()
	db := files[path]
	filesMu.Unlock()
	if db == nil {
		return nil, false
	}
	return db.committed(), true
}
