package memory

import (
	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Scheme is the URL scheme of this backend.
const Scheme = "memory"

// FormatVersion is the version of the records in snapshot files: the
// codec's encoding of each object under its key.
const FormatVersion = 1

// backend holds the snapshot files this process has open, and opens URLs.
var backend = &snapfile.Backend{Scheme: Scheme, FormatVersion: FormatVersion, New: New, Load: load}

func init() {
	store.Register(Scheme, backend)
}

// New returns an empty memory store that lives as long as the process.
// opts may be nil.
func New(opts *store.Options) (store.Store, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	info := driver.MetaFor(o, FormatVersion).Info(Scheme, o.Name, "")
	// A memory store keeps objects as given; encoding them would only cost.
	o.Codec = nil
	return indexer.NewBase(indexer.BaseConfig{Info: info, Options: o})
}
