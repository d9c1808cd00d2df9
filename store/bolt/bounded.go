package bolt

import (
	"errors"
	"fmt"

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

func openBounded(f *file, o store.Options, set *indexer.IndexSet) (store.Store, error) {
	var keyReset string
	rv, reset, err := prepareStore(f, o, set, func() (err error) {
		keyReset, err = checkSample(f, o, set)
		return err
	})
	if err != nil {
		return nil, err
	}
	if keyReset != "" {
		rv, reset = "", keyReset
	}
	return &bounded{
		Store: shared.New(newEngine(f, o), shared.Config{
			Info:            storeInfo(o, "", reset),
			Options:         o,
			Indexes:         set,
			ResourceVersion: rv,
		}),
		file: f,
	}, nil
}

// sampleSize is how many objects a bounded-mode open decodes to check its
// functions against what is stored (checkSample).
const sampleSize = 256

// checkSample checks, on the first sampleSize objects of the store in key
// order, that the index functions and the key function still compute the
// index values and keys stored with them. The bounded mode does not decode
// every object when it opens, as the default mode does (see load), so a
// sample is how it notices a function that changed under the same name:
// values that differ make it recompute every object's values and index
// entries (decoding them all, in one transaction), and a key that differs
// makes it empty the store and return why (keyReset). A change that alters
// no object of the sample goes unnoticed (see the package documentation).
func checkSample(f *file, o store.Options, set *indexer.IndexSet) (keyReset string, err error) {
	check := indexer.NewValueCheck(set)
	keys := indexer.NewKeyCheck(o.KeyFunc)
	err = viewStore(f, o.Name, func(b *buckets) error {
		c := b.keys.Cursor()
		n := 0
		for k, rec := c.First(); k != nil && n < sampleSize; k, rec = c.Next() {
			n++
			// An object that cannot be read is skipped: as
			// before the check, reading it fails, not the open.
			rec, err := b.open("key record", k, rec)
			if err != nil {
				continue
			}
			seq, long, vals, err := decodeKeyRecord(rec, set.Len())
			if err != nil {
				continue
			}
			key, err := keyOf(k, long)
			if err != nil {
				continue
			}
			data, err := objectOf(b, key, seq)
			if err != nil {
				continue
			}
			obj, err := indexer.Decode(o.Codec, data)
			if errors.Is(err, indexer.ErrUnknownKey) {
				// Not damage to one object: the key ring lacks the
				// key (a wrong key, a rotation's old key not
				// loaded), and the default mode would fail its open
				// on it too, rather than serve lists that are empty.
				return fmt.Errorf("object %q: %w", shorten(key), err)
			}
			if err != nil {
				continue
			}
			keys.Check(key, obj)
			if set.Len() > 0 {
				// An index function that fails on the object
				// fails its next write instead.
				_, _ = check.Values(key, obj, vals)
			}
		}
		return nil
	})
	if err != nil {
		return "", fileError(f.path, o, fmt.Errorf("check store %q: %w", o.Name, err))
	}
	if r := keys.Reset(o.KeyFuncName); r != "" {
		return r, emptyStore(f, o.Name, set.Names(), r)
	}
	if stale := check.Stale(); stale != nil {
		return "", rebuildStale(f, o, set, stale)
	}
	return "", nil
}

// rebuildStale recomputes and stores every object's index values (and index
// entries), decoding them in one transaction, when the sample found stale
// ones; the store's metadata stays as it is.
func rebuildStale(f *file, o store.Options, set *indexer.IndexSet, stale []string) error {
	indexer.LogStale(o.Name, f.path, stale)
	err := updateStore(f, o.Name, func(b *buckets) error {
		m, err := getMeta(b)
		if err != nil {
			return err
		}
		return rebuildIndexes(b, set, o.Codec, nil, m)
	})
	if err != nil {
		return fmt.Errorf("store: open %s in %s: store the index values of changed index functions: %w", o.Name, f.path, err)
	}
	return nil
}
