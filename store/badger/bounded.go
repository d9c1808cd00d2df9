package badger

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

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
	if !rebuild {
		keyReset, stale, err := checkSample(sp, o, set)
		if err != nil {
			return nil, err
		}
		switch {
		case keyReset != "":
			if err := sp.emptyForKeys(true, keyReset); err != nil {
				return nil, err
			}
			info.Reset = keyReset
			return newBounded(sp, o, set, info), nil
		case stale != nil:
			indexer.LogStale(o.Name, sp.where(), stale)
			rebuild = true
		}
	}
	if rebuild {
		vals, err := computeValues(sp, o.Codec, set)
		if err != nil {
			return nil, fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
		}
		if err := sp.reindex(ctx, set.Names(), vals, true); err != nil {
			return nil, fmt.Errorf("store: open %s in %s: rebuild indexes: %w", sp.name, sp.where(), err)
		}
		return newBounded(sp, o, set, info), nil
	}
	// A store last written by the default mode has no index entries.
	if err := sp.buildEntries(ctx); err != nil {
		return nil, fmt.Errorf("store: open %s in %s: build the index entries: %w", sp.name, sp.where(), err)
	}
	return newBounded(sp, o, set, info), nil
}

// newBounded returns the bounded store over sp, once opening has settled
// it: the store has seen what its resume point says (a reset empties it).
func newBounded(sp *space, o store.Options, set *indexer.IndexSet, info store.Info) *bounded {
	return &bounded{
		Store: shared.New(&engine{sp: sp, codec: o.Codec, entries: true}, shared.Config{
			Info:            info,
			Options:         o,
			Indexes:         set,
			ResourceVersion: sp.resourceVersion(),
			CheckData:       sp.CheckData,
		}),
		sp: sp,
	}
}

// sampleSize is how many objects a bounded-mode open decodes to check its
// functions against what is stored (checkSample).
const sampleSize = 256

// checkSample checks, on the first sampleSize objects of the store in key
// order, that the index functions and the key function still compute the
// index values and keys stored with them. The bounded mode does not decode
// every object when it opens, as the default mode does (see load), so a
// sample is how it notices a function that changed under the same name. It
// returns why the store must start empty if a key differs (keyReset), and
// describes the indexes whose values differ (stale), which the caller
// rebuilds. A change that alters no object of the sample goes unnoticed
// (see the package documentation).
func checkSample(sp *space, o store.Options, set *indexer.IndexSet) (keyReset string, stale []string, err error) {
	check := indexer.NewValueCheck(set)
	keyCheck := indexer.NewKeyCheck(o.KeyFunc)
	errSampled := errors.New("sampled")
	err = sp.view(func(txn *badger.Txn, k keys, names []string) error {
		n := 0
		prefix := k.objPrefix()
		return eachUnder(context.Background(), txn, prefix, func(item *badger.Item, suffix []byte) error {
			if n == sampleSize {
				return errSampled
			}
			n++
			// An object that cannot be read is skipped: as before the
			// check, reading it fails, not the open. An index function
			// that fails on it fails its next write instead.
			var key string
			var obj interface{}
			err := value(item, func(v []byte) error {
				var data []byte
				var err error
				if key, data, err = parseObj(suffix, v); err != nil {
					return err
				}
				obj, err = indexer.Decode(o.Codec, data)
				return err
			})
			if errors.Is(err, indexer.ErrUnknownKey) {
				// Not damage to one object: the key ring lacks the
				// key (a wrong key, a rotation's old key not
				// loaded), and the default mode would fail its open
				// on it too, rather than serve lists that are empty.
				return fmt.Errorf("object %q: %w", key, err)
			}
			if err == nil {
				keyCheck.Check(key, obj)
				if len(names) > 0 {
					sampleValues(txn, k.vals(key), len(names), func(stored [][]string) {
						_, _ = check.Values(key, obj, stored)
					})
				}
			}
			return nil
		})
	})
	if errors.Is(err, errSampled) {
		err = nil
	}
	if err != nil {
		// corrupt leaves an unknown key's error as it is.
		return "", nil, sp.corrupt("check a sample of the objects", err)
	}
	return keyCheck.Reset(o.KeyFuncName), check.Stale(), nil
}

// sampleValues calls fn with the index values stored under valsKey in txn,
// if they can be read: checkSample skips what cannot.
func sampleValues(txn *badger.Txn, valsKey []byte, n int, fn func(stored [][]string)) {
	item, err := txn.Get(valsKey)
	if err != nil {
		return
	}
	_ = value(item, func(v []byte) error {
		if stored, err := decodeValues(v, n); err == nil {
			fn(stored)
		}
		return nil
	})
}
