package badger

import (
	"context"
	"fmt"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	shared "github.com/informerdb/informerdb/store/internal/engine"
)

// bounded is the store of the bounded mode (Options.CacheSize > 0): the
// shared bounded store over the store's space (engine), with what is
// badger's own (Export, DiskSize, MaxBatchOps). It is safe for concurrent
// use.
type bounded struct {
	*shared.Store
	sp *space
}

func openBounded(ctx context.Context, sp *space, o store.Options, set *indexer.IndexSet, info store.Info, rebuild bool) (store.Store, error) {
	eng := &engine{sp: sp, codec: o.Codec, entries: true}
	reset, rebuilt, err := shared.Settle(ctx, eng, openConfig(sp, o, set, rebuild))
	if err != nil {
		return nil, err
	}
	if reset != "" {
		info.Reset = reset // Settle emptied the store
	} else if !rebuilt {
		// A store last written by the default mode has no index entries.
		if err := sp.buildEntries(ctx); err != nil {
			return nil, fmt.Errorf("store: open %s in %s: build the index entries: %w", sp.name, sp.where(), err)
		}
	}
	return &bounded{
		Store: shared.New(eng, shared.Config{
			Info:            info,
			Options:         o,
			Indexes:         set,
			ResourceVersion: sp.resourceVersion(),
			CheckData:       sp.CheckData,
		}),
		sp: sp,
	}, nil
}
