package badger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// space is one named store's part of a shared database, and its
// shared.Engine in either mode (engine.go). Writes must not overlap: the
// shared store serializes them. Reads may come from any goroutine.
type space struct {
	sh   *sharedDB
	name string
	// want is the meta record of the open, which empty records, and
	// bounded says the mode keeps index entries.
	want    driver.Meta
	bounded bool

	mu sync.RWMutex // guards k, rec, nextGen and closed
	// closeMu is held for reading by view for as long as its transaction
	// is open, and for writing by Close: badger unmaps its files on close,
	// which must not happen under a reader.
	closeMu sync.RWMutex
	k       keys
	rec     metaRecord
	nextGen uint64 // first generation number not used by any key of the store
	closed  bool
	// unsealed says copyPrefix reads values without frames: only while
	// openSpace upgrades a store of format 2 or 1, before it is shared.
	unsealed bool
}

// writer is what a badger.Txn and a badger.WriteBatch have in common.
type writer interface {
	Set(k, v []byte) error
	Delete(k []byte) error
}

func (s *space) where() string { return "badger://" + s.sh.dir }

func (s *space) corrupt(what string, err error) error {
	if errors.Is(err, indexer.ErrUnknownKey) {
		// Not damage: deleting the directory would be the wrong advice.
		return fmt.Errorf("store: open %s in %s: %s: %w", s.name, s.where(), what, err)
	}
	return fmt.Errorf("store: open %s in %s: %s: %w (delete the directory to start over; informers relist): %w",
		s.name, s.where(), what, store.ErrCorrupt, err)
}

// snapshot returns the keys of the current generation, the index names of
// its value records, and metaRecord.Entries.
func (s *space) snapshot() (keys, []string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.k, s.rec.Indexes, s.rec.Entries
}

func (s *space) resourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rec.ResourceVersion
}

// openSpace reads or creates the named store's meta record and reconciles it
// with want: an incompatible store fails, an older format is upgraded, a
// changed scope resets it, a changed index set is reported in reopen for
// the caller to rebuild. A new or reset store gets metaRecord.Entries =
// bounded (an empty generation's entries are current); an existing store's
// flag is the caller's to change. A store whose Drop did not finish opens
// as a new one (see create).
func openSpace(sh *sharedDB, name string, want driver.Meta, bounded bool) (s *space, reopen driver.Reopen, err error) {
	k := newKeys(name, 0)
	s = &space{sh: sh, name: name, k: k, want: want, bounded: bounded}
	var rec metaRecord
	var unsealed, found bool
	err = sh.db.View(func(txn *badger.Txn) (err error) {
		rec, unsealed, found, err = readMeta(txn, k.meta())
		return err
	})
	if err != nil {
		return nil, reopen, s.corrupt("read meta record", err)
	}
	if !found || rec.Dropped {
		// Dropped: a Drop that did not finish, the store is gone.
		if err := s.create(want, bounded); err != nil {
			return nil, reopen, err
		}
		return s, reopen, nil
	}
	from := rec.FormatVersion // for errors: upgrade changes it
	rec, upgraded := rec.upgrade()
	stored := rec.Meta
	if unsealed {
		// Format 2 (or 1): made this version below, not refused.
		stored.FormatVersion = FormatVersion
	}
	reopen, err = driver.CompareMeta(name, s.where(), stored, want)
	if err != nil {
		return nil, reopen, err
	}
	s.rec, s.k = rec, k.withGen(rec.Generation)
	if upgraded && !unsealed {
		// Before anything else is written.
		if err := s.writeMeta(rec); err != nil {
			return nil, reopen, fmt.Errorf("store: open %s in %s: upgrade the format: %w", name, s.where(), err)
		}
	}
	var gens []uint64
	if gens, s.nextGen, err = s.generations(rec.Generation + 1); err != nil {
		return nil, reopen, s.corrupt("list generations", err)
	}
	for _, g := range gens {
		if g != rec.Generation {
			// Left by a large write that crashed.
			s.deleteGen(g)
		}
	}
	if unsealed {
		// Format 2 or 1: copy every record into a framed generation
		// and switch to it with the format version; a crash before the
		// switch leaves the store as it was.
		s.unsealed = true
		err := s.rebuild(context.Background(), true, false, nil, func(writer, keys) error { return nil }, func(m *metaRecord) {
			m.FormatVersion = FormatVersion
		})
		s.unsealed = false
		if err != nil {
			return nil, reopen, fmt.Errorf("store: open %s in %s: frame the records of format version %d: %w", name, s.where(), from, err)
		}
	}
	if reopen.Reset != "" {
		// A scope change.
		if err := s.empty(); err != nil {
			return nil, reopen, fmt.Errorf("store: open %s in %s: reset: %w", name, s.where(), err)
		}
	}
	return s, reopen, nil
}

// empty drops the store's objects, index entries and resume point at once
// by switching to an empty generation recording s.want.
func (s *space) empty() error {
	return s.switchGen(s.allocGen(), func(m *metaRecord) {
		m.Meta = s.want
		m.ResourceVersion = ""
		m.Entries = s.bounded
	})
}

// create makes s a new, empty store: its meta record names a generation
// past every generation that has keys (garbage of a crashed Import or Drop,
// whose objects must not come back), which are then deleted. s.k must hold
// the store's prefix.
func (s *space) create(want driver.Meta, entries bool) error {
	gens, gen, err := s.generations(1)
	if err != nil {
		return s.corrupt("list generations", err)
	}
	s.rec = metaRecord{Meta: want, Generation: gen, Entries: entries}
	s.k = s.k.withGen(gen)
	s.nextGen = gen + 1
	err = s.writeMeta(s.rec)
	if err == nil {
		for _, g := range gens {
			s.deleteGen(g)
		}
		if err = s.sh.durable(nil); err == nil {
			err = s.sh.named(s.name)
		}
	}
	if err != nil {
		return fmt.Errorf("store: open %s in %s: %w", s.name, s.where(), err)
	}
	return nil
}

// named adds the store name, whose meta record was just written, to the
// stores file once the record is durable: the file never names a store a
// crash can take back.
func (sh *sharedDB) named(name string) error {
	if err := sh.syncBatches(store.DurabilityNoSync); err != nil {
		return err
	}
	return sh.stores.set(name, true)
}

// generations lists the generation numbers that have keys, and returns the
// first number from floor on past every one of them: a number that has keys
// is never reused.
func (s *space) generations(floor uint64) (gens []uint64, next uint64, err error) {
	prefix := append(append([]byte(nil), s.k.store...), tagGen)
	err = s.sh.db.View(func(txn *badger.Txn) error {
		return eachGroup(txn, prefix, func(item *badger.Item) ([]byte, error) {
			key := item.Key()
			if len(key) < len(prefix)+8 {
				return nil, fmt.Errorf("key %q: %w", key, errBadRecord)
			}
			gen := binary.BigEndian.Uint64(key[len(prefix):])
			gens = append(gens, gen)
			floor = max(floor, gen+1)
			return s.k.genPrefix(gen), nil
		})
	})
	return gens, floor, err
}

func (s *space) allocGen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.nextGen
	s.nextGen++
	return g
}

// setRecord writes m as the store's meta record and makes it current.
func (s *space) setRecord(m metaRecord) error {
	if err := s.writeMeta(m); err != nil {
		return err
	}
	s.mu.Lock()
	s.rec = m
	s.mu.Unlock()
	return s.sh.durable(nil)
}

// writeMeta writes m as the store's meta record (see sharedDB.update).
func (s *space) writeMeta(m metaRecord) error {
	return s.sh.update(func(txn *badger.Txn) error {
		return txn.Set(s.k.meta(), encodeMeta(s.k.meta(), m))
	})
}

// switchGen makes gen the current generation in one transaction, with the
// meta record changed by edit, then deletes the previous one in the
// background (sharedDB.oldGens): a relist is over once the new objects
// count. What a crash leaves of it is deleted at the next open.
func (s *space) switchGen(gen uint64, edit func(*metaRecord)) error {
	// The write batches' generation is durable before it is live.
	if err := s.sh.syncBatches(store.DurabilitySync); err != nil {
		return err
	}
	s.mu.RLock()
	m, old := s.rec, s.rec.Generation
	s.mu.RUnlock()
	m.Generation = gen
	edit(&m)
	if err := s.writeMeta(m); err != nil {
		return err
	}
	s.mu.Lock()
	s.rec, s.k = m, s.k.withGen(gen)
	s.mu.Unlock()
	s.sh.oldGens.Go(func() { s.deleteGen(old) })
	// Switched even if not durable: the caller must not delete gen.
	return s.sh.durable(nil)
}

// deleteGen deletes every key of a generation that is not current; a
// failure leaves garbage for the next open.
func (s *space) deleteGen(gen uint64) {
	s.mu.RLock()
	prefix := s.k.genPrefix(gen) // s.k changes under a background deletion
	s.mu.RUnlock()
	if _, err := s.deletePrefix(prefix); err != nil {
		klog.Background().Error(err, "Deleting an old generation failed; it is retried on the next open", "store", s.name, "dir", s.sh.dir, "generation", gen)
	}
	if testHookGenDeleted != nil {
		testHookGenDeleted(gen)
	}
}

// testHookGenDeleted, set by tests, runs when deleteGen is over.
var testHookGenDeleted func(gen uint64)

// deletePrefix deletes every key under prefix through a write batch and
// returns how many it deleted.
func (s *space) deletePrefix(prefix []byte) (int, error) {
	wb := s.sh.newBatch()
	defer wb.Cancel()
	n := 0
	err := s.sh.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	return n, err
}

// testHookEntries, set by tests, runs after each step of dropEntries and
// buildEntries a crash could follow; its error stops there, as a crash.
var testHookEntries func(step string) error

func entriesStep(step string) error {
	if testHookEntries != nil {
		return testHookEntries(step)
	}
	return nil
}

// dropEntries makes the store keep no index entries, for the default mode:
// metaRecord.Entries is cleared first, then the entries (and leftovers of a
// crashed drop or build) are deleted; a crash in between leaves entries
// that are never read, deleted by the next open.
func (s *space) dropEntries() error {
	s.mu.RLock()
	m, k := s.rec, s.k
	s.mu.RUnlock()
	if m.Entries {
		m.Entries = false
		if err := s.setRecord(m); err != nil {
			return err
		}
		if err := entriesStep("drop: flag cleared"); err != nil {
			return err
		}
	}
	n, err := s.deletePrefix(k.entriesPrefix())
	if err == nil && n > 0 {
		klog.Background().V(2).Info("Dropped the index entries: the default mode serves indexes from memory", "store", s.name, "dir", s.sh.dir, "entries", n)
	}
	return err
}

// buildEntries makes the store's index entries current, for the bounded
// mode, unless metaRecord.Entries says they are: it deletes leftovers,
// writes the entries the value records imply, makes them durable, and only
// then sets the flag; a crash before leaves it false.
func (s *space) buildEntries(ctx context.Context) error {
	s.mu.RLock()
	m, k := s.rec, s.k
	s.mu.RUnlock()
	if m.Entries {
		return nil
	}
	if _, err := s.deletePrefix(k.entriesPrefix()); err != nil {
		return err
	}
	if err := entriesStep("build: cleared"); err != nil {
		return err
	}
	w := s.sh.newBatch()
	defer w.Cancel()
	n := 0
	err := s.view(func(txn *badger.Txn, k keys, names []string) error {
		return eachImpliedEntry(ctx, txn, k, names, func(index, value, key string) error {
			n++
			ek, ev := k.entry(index, value, key)
			return setSealed(w, ek, ev)
		})
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	if err := entriesStep("build: written"); err != nil {
		return err
	}
	// As in switchGen: durable before the flag makes them read.
	if err := s.sh.syncBatches(store.DurabilitySync); err != nil {
		return err
	}
	m.Entries = true
	if err := s.setRecord(m); err != nil {
		return err
	}
	klog.Background().V(2).Info("Built the index entries from the value records for the bounded mode", "store", s.name, "dir", s.sh.dir, "entries", n)
	return nil
}

// Commit implements shared.Engine: unless diffed, it reads the index values
// the changes replace first. It writes in one transaction when it fits,
// else in a new generation.
func (s *space) Commit(ctx context.Context, changes []indexer.Change, diffed bool, _ *indexer.IndexSet, rv string, replace bool) error {
	if !diffed {
		if err := s.diff(changes, replace); err != nil {
			return fmt.Errorf("read the index values the write replaces: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k, names, entries := s.snapshot()
	if !replace {
		var need int64
		for i := range changes {
			need += int64(len(changes[i].Key) + len(changes[i].Data))
		}
		if err := s.sh.checkSpace(2 * need); err != nil {
			return err
		}
		err := s.sh.update(func(txn *badger.Txn) error {
			for i := range changes {
				if err := writeChange(txn, k, names, entries, &changes[i]); err != nil {
					return err
				}
			}
			if rv == "" {
				return nil
			}
			s.mu.RLock()
			m := s.rec
			s.mu.RUnlock()
			m.ResourceVersion = rv
			return txn.Set(k.meta(), encodeMeta(k.meta(), m))
		})
		err = s.sh.durable(err)
		if err == nil {
			if rv != "" {
				s.mu.Lock()
				s.rec.ResourceVersion = rv
				s.mu.Unlock()
			}
			return nil
		}
		if !errors.Is(err, badger.ErrTxnTooBig) {
			return err
		}
	}
	// Too large for one transaction, or a Replace: build the new contents
	// in a fresh generation.
	var changed map[string]bool
	if !replace {
		// Not copied: the objects the changes overwrite or delete. Their
		// value records and entries are, as writeChange may keep them.
		changed = make(map[string]bool, len(changes))
		for i := range changes {
			changed[string(k.obj(changes[i].Key))] = true
		}
	}
	return s.rebuild(ctx, !replace, false, changed, func(w writer, nk keys) error {
		for i := range changes {
			if err := writeChange(w, nk, names, entries, &changes[i]); err != nil {
				return err
			}
		}
		return nil
	}, func(m *metaRecord) {
		if rv != "" {
			m.ResourceVersion = rv
		}
	})
}

// SetIndexes implements shared.Engine: it switches to a generation of the
// current objects with values (by object key, aligned with set's names),
// and index entries in the bounded mode.
func (s *space) SetIndexes(ctx context.Context, set *indexer.IndexSet, values map[string][][]string) error {
	names := slices.Clone(set.Names())
	// As Open does, or the store could not be opened again.
	if err := checkIndexNames(slices.Values(names)); err != nil {
		return err
	}
	entries := s.bounded
	return s.rebuild(ctx, true, true, nil, func(w writer, nk keys) error {
		for key, vals := range values {
			if err := writeIndexes(w, nk, names, entries, key, nil, vals); err != nil {
				return err
			}
		}
		return nil
	}, func(m *metaRecord) {
		m.Indexes = names
		m.Entries = entries
	})
}

// rebuild writes a new generation: a copy of the current one when copyObjs
// (objects only when objsOnly) but for the keys in skip, then what fill
// writes, and switches to it with the meta record edited by edit. A failure
// or crash before the switch leaves the store as it was.
func (s *space) rebuild(ctx context.Context, copyObjs, objsOnly bool, skip map[string]bool, fill func(writer, keys) error, edit func(*metaRecord)) error {
	gen := s.allocGen()
	k, _, _ := s.snapshot()
	nk := k.withGen(gen)
	w := s.sh.newBatch()
	err := func() error {
		if copyObjs {
			prefix := k.gen
			if objsOnly {
				prefix = k.objPrefix()
			}
			if err := s.copyPrefix(ctx, w, prefix, len(k.gen), nk.gen, skip); err != nil {
				return err
			}
		}
		if err := fill(w, nk); err != nil {
			return err
		}
		return w.Flush()
	}()
	if err != nil {
		w.Cancel()
		if s.sh.syncFault.failed() == nil {
			// Else the next open deletes gen.
			s.deleteGen(gen)
		}
		return err
	}
	if err := s.switchGen(gen, edit); err != nil {
		// Not if the switch made gen current or may be on disk.
		s.mu.RLock()
		current := s.rec.Generation == gen
		s.mu.RUnlock()
		if !current && s.sh.syncFault.failed() == nil {
			s.deleteGen(gen)
		}
		return err
	}
	return nil
}

// copyPrefix copies every key under prefix but those in skip into w, its
// first oldLen bytes replaced by newGen.
func (s *space) copyPrefix(ctx context.Context, w writer, prefix []byte, oldLen int, newGen []byte, skip map[string]bool) error {
	return s.sh.db.View(func(txn *badger.Txn) error {
		// Prefetching would read the skipped values too.
		return eachUnderPrefetch(ctx, txn, prefix, len(skip) == 0, func(item *badger.Item, _ []byte) error {
			if skip[string(item.Key())] {
				return nil
			}
			var v []byte
			var err error
			if s.unsealed {
				// The upgrade of a store without frames (openSpace).
				v, err = item.ValueCopy(nil)
			} else {
				v, err = valueCopy(item)
			}
			if err != nil {
				return err
			}
			return setSealed(w, append(append([]byte(nil), newGen...), item.Key()[oldLen:]...), v)
		})
	})
}

// CheckData refuses what badger cannot store (see checkObjectSize).
func (s *space) CheckData(key string, data []byte) error {
	return checkObjectSize(key, data, s.sh.cfg.valueLogFileSize)
}

// checkObjectSize refuses, as invalid input (the informer skips it), an
// object whose value is larger than a value-log file. Badger's own error
// would quote the object's data in what reads as a failed write, retried
// for ever.
func checkObjectSize(key string, data []byte, limit int64) error {
	n := int64(len(data))
	if len(key) > maxInline {
		n += int64(binary.MaxVarintLen64 + len(key))
	}
	if n > limit {
		return fmt.Errorf("object %.200q: its encoding of %d bytes is larger than badger's largest value, a value-log file (%d bytes): %w",
			key, len(data), limit, store.ErrInvalid)
	}
	return nil
}

// writeChange writes one change: the object, its value record and, if
// entries, the index entries that differ from the old values.
func writeChange(w writer, k keys, names []string, entries bool, c *indexer.Change) error {
	var old [][]string
	if c.Existed {
		old = c.OldValues
	}
	if c.Type == store.OpPut {
		if err := setSealed(w, k.obj(c.Key), objValue(c.Key, c.Data)); err != nil {
			return err
		}
		return writeIndexes(w, k, names, entries, c.Key, old, c.Values)
	}
	if !c.Existed {
		return nil
	}
	if err := w.Delete(k.obj(c.Key)); err != nil {
		return err
	}
	return writeIndexes(w, k, names, entries, c.Key, old, nil)
}

// writeIndexes stores key's value record, or deletes it if vals is nil (the
// object is deleted), and, if entries, moves its index entries from old
// (nil for a new object) to vals.
func writeIndexes(w writer, k keys, names []string, entries bool, key string, old, vals [][]string) error {
	if len(names) == 0 {
		return nil
	}
	if old != nil && slices.EqualFunc(old, vals, slices.Equal[[]string]) {
		// Most updates (status changes) keep their index values: each
		// write saved is one less entry in badger's logs.
		return nil
	}
	var err error
	if vals == nil {
		err = w.Delete(k.vals(key))
	} else {
		err = setSealed(w, k.vals(key), encodeValues(vals))
	}
	if err != nil || !entries {
		return err
	}
	for i, name := range names {
		var o, n []string
		if old != nil {
			o = old[i]
		}
		if vals != nil {
			n = vals[i]
		}
		for _, v := range o {
			if !slices.Contains(n, v) {
				ek, _ := k.entry(name, v, key)
				if err := w.Delete(ek); err != nil {
					return err
				}
			}
		}
		for _, v := range n {
			if !slices.Contains(o, v) {
				ek, ev := k.entry(name, v, key)
				if err := setSealed(w, ek, ev); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Close releases the store's name and, with the last store, the database.
func (s *space) Close() error {
	s.closeMu.Lock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.closeMu.Unlock()
	s.sh.oldGens.Wait() // here, not under release's registry lock
	return s.sh.release(s.name)
}

// view runs fn in a read transaction over the current generation, keys and
// transaction taken together under mu: a switch deletes the old
// generation only after changing k.
func (s *space) view(fn func(txn *badger.Txn, k keys, names []string) error) (err error) {
	// badger may panic on damaged files it reads lazily (bounded mode).
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked reading %s (delete the directory to start over; informers relist): %w: %v", s.where(), store.ErrCorrupt, r)
		}
	}()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	txn := s.sh.db.NewTransaction(false)
	k, names := s.k, s.rec.Indexes
	s.mu.RUnlock()
	defer txn.Discard()
	return fn(txn, k, names)
}

// eachUnder calls fn for every item of txn under prefix, in key order, with
// the rest of its key, until fn fails or ctx is done.
func eachUnder(ctx context.Context, txn *badger.Txn, prefix []byte, fn func(item *badger.Item, suffix []byte) error) error {
	return eachUnderPrefetch(ctx, txn, prefix, true, fn)
}

// eachUnderPrefetch is eachUnder, reading values ahead only if prefetch.
func eachUnderPrefetch(ctx context.Context, txn *badger.Txn, prefix []byte, prefetch bool, fn func(item *badger.Item, suffix []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	opts.PrefetchValues = prefetch
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		item := it.Item()
		if err := fn(item, item.Key()[len(prefix):]); err != nil {
			return err
		}
	}
	return nil
}
