package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/loadcheck"
)

// OpenConfig is what opening a store needs besides the engine (Load and
// NewDecoded in the decoded mode, Settle in the bounded mode).
type OpenConfig struct {
	// Info describes the store (NewDecoded); its ResourceVersion is the
	// stored resume point, once opening settled it.
	Info    store.Info
	Options store.Options     // with defaults applied
	Indexes *indexer.IndexSet // the store's index set
	Where   string            // names the database in errors and logs
	// Rebuild says the stored index values are not those of Indexes (the
	// index set changed): every object's are computed and stored.
	Rebuild bool
	// SelfDiffing says the engine's Commit reads what each change
	// replaces from its storage (see indexer.BaseConfig).
	SelfDiffing bool
	// CheckData, when set, refuses encodings the engine cannot store
	// (see indexer.BaseConfig).
	CheckData func(key string, data []byte) error
	// OpenError turns a failure to read or decode the stored objects
	// into the error of the open, the backend's way.
	OpenError func(err error) error
}

// NewDecoded returns the decoded-mode store over eng, serving every read
// from c, the objects Load read: an indexer.Base whose writes the engine
// commits.
func NewDecoded(eng Engine, c *indexer.Cache, cfg OpenConfig) (*indexer.Base, error) {
	return indexer.NewBase(indexer.BaseConfig{
		Info:        cfg.Info,
		Options:     cfg.Options,
		Cache:       c,
		Persister:   eng,
		CheckData:   cfg.CheckData,
		SelfDiffing: cfg.SelfDiffing,
		CopiesData:  true, // see Engine

	})
}

// Load reads and decodes every object of the store into a new Cache, with
// the index values cfg.Indexes' functions compute, in one read transaction.
// A key the key function no longer computes empties the store
// (Engine.Empty) and returns an empty cache and why (reset); index values
// that differ from the stored ones (see loadcheck.ValueCheck), or
// cfg.Rebuild, are stored (Engine.SetIndexes). An object that cannot be
// read or decoded is store.ErrCorrupt, never an object or a store that
// looks empty; an index function that fails on a stored object fails the
// open. Decoding, most of a resume's cost, runs on every CPU while the
// engine reads the next records.
func Load(ctx context.Context, eng Engine, cfg OpenConfig) (c *indexer.Cache, reset string, err error) {
	o, set := cfg.Options, cfg.Indexes
	l := &loader{
		codec:   o.Codec,
		set:     set,
		rebuild: cfg.Rebuild,
		check:   loadcheck.NewValueCheck(set),
		keys:    loadcheck.NewKeyCheck(o.KeyFunc),
	}
	var loadErr error
	err = eng.View("open", func(tx Tx) error {
		loadErr = l.run(ctx, tx)
		return loadErr
	})
	if loadErr != nil {
		return nil, "", cfg.OpenError(loadErr)
	}
	if err != nil {
		return nil, "", err
	}
	if why := l.keys.Reset(o.KeyFuncName); why != "" {
		if err := eng.Empty(why); err != nil {
			return nil, "", err
		}
		return indexer.NewCache(set, nil), why, nil // empty
	}
	// Filled at once, sized for it: a cache that grew while the workers
	// decoded, its maps scanned by the garbage collector over and over,
	// made an open cost about a third more CPU.
	ps := slices.Concat(l.chunks...)
	l.chunks = nil
	c = indexer.NewCache(set, ps)
	what := cfg.indexWork(l.check)
	if what == "" {
		return c, "", nil
	}
	vals := make(map[string][][]string, len(ps))
	for i := range ps {
		vals[ps[i].Key] = ps[i].Values
	}
	if err := eng.SetIndexes(ctx, set, vals); err != nil {
		return nil, "", fmt.Errorf("store: open %s in %s: %s: %w", o.Name, cfg.Where, what, err)
	}
	return c, "", nil
}

// indexWork says what an open must store of the index values, "" if
// nothing: every object's for a rebuild, or the values of the functions
// check found changed, which it logs.
func (cfg OpenConfig) indexWork(check *loadcheck.ValueCheck) string {
	if cfg.Rebuild {
		return "rebuild indexes"
	}
	if stale := check.Stale(); stale != nil {
		loadcheck.LogStale(cfg.Options.Name, cfg.Where, stale)
		return "store the index values of changed index functions"
	}
	return ""
}

// loader decodes the records of a Load.
type loader struct {
	codec   store.Codec
	set     *indexer.IndexSet
	rebuild bool
	check   *loadcheck.ValueCheck
	keys    *loadcheck.KeyCheck

	mu     sync.Mutex
	chunks [][]indexer.Prepared // decoded, guarded by mu
}

// errStopped ends a read whose processing failed.
var errStopped = errors.New("stopped")

// decodeErr is the error of a stored object that codec failed to decode
// (err): store.ErrCorrupt, unless the codec's key ring lacks the key, which
// is no damage.
func decodeErr(key string, codec store.Codec, err error) error {
	if !errors.Is(err, indexer.ErrUnknownKey) {
		err = fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	return fmt.Errorf("decode object %q with %s codec: %w", key, codec.Name(), err)
}

// run reads every record of tx and decodes them on one goroutine per CPU,
// which are done before it returns (the records are valid only in tx). It
// returns the first error, a decoding's before the read's.
func (l *loader) run(ctx context.Context, tx Tx) (err error) {
	n := runtime.GOMAXPROCS(0)
	work := make(chan []Record, 2*n)
	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error // guarded by mu
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			close(stop)
		}
	}
	for range n {
		wg.Go(func() {
			for rs := range work {
				select {
				case <-stop:
					continue // drained
				default:
				}
				if err := l.decode(rs); err != nil {
					fail(err)
				}
			}
		})
	}
	// Deferred: a panic of the engine's read (damage, which the engine
	// turns into an error) must not leave the workers running.
	defer func() {
		close(work)
		wg.Wait()
		if firstErr != nil {
			err = firstErr
		}
	}()
	return tx.All(ctx, !l.rebuild, func(rs []Record) error {
		select {
		case work <- rs:
			return nil
		case <-stop:
			return errStopped
		}
	})
}

// decode decodes rs for the cache. A panic (a codec's or an index
// function's on damaged data) or a memory fault (a page of a memory-mapped
// file that is not there) is store.ErrCorrupt.
func (l *loader) decode(rs []Record) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: decoding panicked: %v", store.ErrCorrupt, r)
		}
	}()
	ps := make([]indexer.Prepared, len(rs))
	for i := range rs {
		r := &rs[i]
		obj, err := indexer.Decode(l.codec, r.Data)
		if err != nil {
			return decodeErr(r.Key, l.codec, err)
		}
		l.keys.Check(r.Key, obj)
		var vals [][]string
		switch {
		case l.rebuild:
			if vals, err = l.set.Values(r.Key, obj); err != nil {
				return fmt.Errorf("rebuild indexes: %w", err)
			}
		case l.set.Len() > 0:
			if vals, err = l.check.Values(r.Key, obj, r.Values); err != nil {
				return err
			}
		}
		ps[i] = indexer.Prepared{Type: store.OpPut, Key: r.Key, Object: obj, Values: vals}
	}
	l.mu.Lock()
	l.chunks = append(l.chunks, ps)
	l.mu.Unlock()
	return nil
}

// sampleSize is how many objects Settle decodes to check the functions
// against what is stored.
const sampleSize = 256

// Settle makes the index values of a store about to open in the bounded
// mode (New) those of cfg.Indexes' functions. It checks what Load checks on
// a sample of the objects (Tx.Sample), since the bounded mode does not
// decode every object: a key that differs empties the store (Engine.Empty)
// and returns why (reset), with or without cfg.Rebuild; values that differ,
// or cfg.Rebuild, make it compute every object's and store them
// (Engine.SetIndexes). A change that alters no object of the sample goes
// unnoticed. rebuilt reports whether it stored every object's values.
func Settle(ctx context.Context, eng Engine, cfg OpenConfig) (reset string, rebuilt bool, err error) {
	o, set := cfg.Options, cfg.Indexes
	check := loadcheck.NewValueCheck(set)
	keys := loadcheck.NewKeyCheck(o.KeyFunc)
	var sampleErr error
	err = eng.View("open", func(tx Tx) error {
		sampleErr = tx.Sample(sampleSize, func(r Record) error {
			obj, err := indexer.Decode(o.Codec, r.Data)
			if errors.Is(err, indexer.ErrUnknownKey) {
				// Not damage to one object: the key ring lacks the
				// key, and the decoded mode fails its open too.
				return fmt.Errorf("object %q: %w", r.Key, err)
			}
			// An object that cannot be decoded is skipped: reading
			// it fails, not the open.
			if err == nil {
				keys.Check(r.Key, obj)
				if !cfg.Rebuild && set.Len() > 0 && r.Values != nil {
					// An index function that fails on the
					// object fails its next write instead.
					_, _ = check.Values(r.Key, obj, r.Values)
				}
			}
			return nil
		})
		return sampleErr
	})
	if sampleErr != nil {
		return "", false, cfg.OpenError(sampleErr)
	}
	if err != nil {
		return "", false, err
	}
	// Another index set does not excuse another key function: the objects
	// would stay under keys the function no longer computes.
	if why := keys.Reset(o.KeyFuncName); why != "" {
		return why, false, eng.Empty(why)
	}
	what := cfg.indexWork(check)
	if what == "" {
		return "", false, nil
	}
	vals, err := indexValues(eng, "open", o.Codec, set, nil)
	if err == nil {
		err = eng.SetIndexes(ctx, set, vals)
	}
	if err != nil {
		return "", false, fmt.Errorf("store: open %s in %s: %s: %w", o.Name, cfg.Where, what, err)
	}
	return "", true, nil
}

// indexValues computes the index values under set of every stored object,
// read in one transaction of eng, decoded with codec unless cached has it.
// The error of the store operation op is an index function's, or the
// engine's.
func indexValues(eng Engine, op string, codec store.Codec, set *indexer.IndexSet, cached func(key string) (interface{}, bool)) (map[string][][]string, error) {
	vals := map[string][][]string{}
	var fnErr error
	err := eng.View(op, func(tx Tx) error {
		return tx.Objects(func(key string, load Loader) error {
			obj, ok := interface{}(nil), false
			if cached != nil {
				obj, ok = cached(key)
			}
			if !ok {
				err := load(func(data []byte) (err error) {
					if obj, err = indexer.Decode(codec, data); err != nil {
						return decodeErr(key, codec, err)
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			v, err := set.Values(key, obj)
			if err != nil {
				fnErr = err
				return errStopped
			}
			vals[key] = v
			return nil
		})
	})
	if fnErr != nil {
		return nil, fnErr
	}
	return vals, err
}
