package bolt

import (
	"context"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	shared "github.com/informerdb/informerdb/store/internal/engine"
)

// bounded is the store of the bounded mode (Options.CacheSize > 0): the
// shared bounded store over the store's buckets in the file (engine), with
// what is bolt's own (Export, DiskSize). It is safe for concurrent use.
type bounded struct {
	*shared.Store
	file *file
}

func openBounded(ctx context.Context, f *file, o store.Options, set *indexer.IndexSet) (store.Store, error) {
	eng := newEngine(f, o)
	var keyReset string
	rv, reset, err := prepareStore(f, o, set, func() (err error) {
		// prepareStore rebuilt the values if the index set changed.
		keyReset, _, err = shared.Settle(ctx, eng, openConfig(f, o, set))
		return err
	})
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		rv, reset = "", keyReset
	}
	return &bounded{
		Store: shared.New(eng, shared.Config{
			Info:            storeInfo(o, "", reset),
			Options:         o,
			Indexes:         set,
			ResourceVersion: rv,
		}),
		file: f,
	}, nil
}
