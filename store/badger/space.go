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
	"github.com/informerdb/informerdb/store/internal/loadcheck"
	"github.com/informerdb/informerdb/store/internal/rawdb"
)

// space is one named store's part of a shared database: it knows the key
// layout and writes changes in badger transactions: the storage of the
// shared store's engine (engine.go), in either mode.
//
// Writes (Persist, reindex) must not overlap; the shared store makes them
// with its write lock held. Reads of the current
// generation (snapshot) may come from any goroutine.
type space struct {
	sh   *sharedDB
	name string

	mu sync.RWMutex // guards k, rec, nextGen and closed
	// closeMu is held for reading by view for as long as its transaction
	// is open, and for writing by Close: badger unmaps its files on close,
	// which must not happen under a reader.
	closeMu sync.RWMutex
	k       keys
	rec     metaRecord
	nextGen uint64 // first generation number not used by any key of the store
	closed  bool
	// unsealed says that copyPrefix reads values without frames: set
	// only while openSpace upgrades a store of format version 2 or 1,
	// before the space is shared.
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
		// A wrong encryption key is not damage: deleting the directory
		// would be the wrong advice.
		return fmt.Errorf("store: open %s in %s: %s: %w", s.name, s.where(), what, err)
	}
	return fmt.Errorf("store: open %s in %s: %s: %w (delete the directory to start over; informers relist): %w",
		s.name, s.where(), what, store.ErrCorrupt, err)
}

// snapshot returns the keys of the current generation, the index names its
// value records are aligned with, and whether its index entries are
// maintained (metaRecord.Entries).
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
// with want: an incompatible store fails, a format 1 store is upgraded, a
// changed scope resets it (reset says why), a changed index set is reported
// in reopen for the caller to rebuild once it has the objects. entries is
// what the opening mode wants of metaRecord.Entries: a new or reset store
// gets it (an empty generation's entries are current either way); an
// existing store's flag is left for the caller to change (dropEntries,
// buildEntries) or to set with its rebuild. A store whose Drop did not
// finish opens as a new one (see create).
func openSpace(sh *sharedDB, name string, want driver.Meta, entries bool) (s *space, reopen driver.Reopen, err error) {
	k := newKeys(name, 0)
	s = &space{sh: sh, name: name, k: k}
	var raw []byte
	err = sh.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k.meta())
		if err != nil {
			return err
		}
		raw, err = item.ValueCopy(nil)
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		if err := s.create(want, entries); err != nil {
			return nil, reopen, err
		}
		return s, reopen, nil
	case err != nil:
		return nil, reopen, s.corrupt("read meta record", err)
	}
	rec, unsealed, err := decodeMeta(k.meta(), raw)
	if err != nil {
		return nil, reopen, s.corrupt("read meta record", err)
	}
	if rec.Dropped {
		// A Drop that did not finish: the store is gone.
		if err := s.create(want, entries); err != nil {
			return nil, reopen, err
		}
		return s, reopen, nil
	}
	rec, upgraded := rec.upgrade()
	reopen, err = driver.CompareMeta(name, s.where(), rec.Meta, want)
	if err != nil {
		return nil, reopen, err
	}
	s.rec, s.k = rec, k.withGen(rec.Generation)
	if upgraded && !unsealed {
		// Before anything else is written: the rest of this build
		// writes format 2 records only.
		if err := s.writeMeta(rec); err != nil {
			return nil, reopen, fmt.Errorf("store: open %s in %s: upgrade the format: %w", name, s.where(), err)
		}
	}
	gens, err := s.generations()
	if err != nil {
		return nil, reopen, s.corrupt("list generations", err)
	}
	s.nextGen = pastGens(gens, rec.Generation+1)
	for _, g := range gens {
		if g != rec.Generation {
			// Left by a large write that crashed before its switch, or
			// by one that switched but crashed before deleting the old
			// generation.
			s.deleteGen(g)
		}
	}
	if unsealed {
		// Format 2 or 1: copy every record of the current generation
		// into a new one, framed, and switch to it with the format
		// version (and a format 1 store's Entries), in one final
		// transaction. A crash before the switch leaves the store as
		// it was, and the next open starts over.
		s.unsealed = true
		err := s.rebuild(context.Background(), true, false, nil, func(writer, keys) error { return nil }, func(m *metaRecord) {
			m.FormatVersion = FormatVersion
		})
		s.unsealed = false
		if err != nil {
			return nil, reopen, fmt.Errorf("store: open %s in %s: frame the records of format version %d: %w", name, s.where(), rec.FormatVersion, err)
		}
	}
	if reopen.Reset != "" {
		// A scope change.
		if err := s.empty(entries, func(m *metaRecord) { m.Meta = want }); err != nil {
			return nil, reopen, fmt.Errorf("store: open %s in %s: reset: %w", name, s.where(), err)
		}
	}
	return s, reopen, nil
}

// emptyForKeys empties the store, as a scope change does (see empty), because
// its key function no longer computes the keys its objects are stored under
// (why, from loadcheck.KeyCheck): the informer relists. entries is what the
// opening mode wants of metaRecord.Entries.
func (s *space) emptyForKeys(entries bool, why string) error {
	loadcheck.LogKeyReset(s.name, s.where(), why)
	if err := s.empty(entries); err != nil {
		return fmt.Errorf("store: open %s in %s: empty the store (%s): %w", s.name, s.where(), why, err)
	}
	return nil
}

// empty drops the store's objects, index entries and resume point
// together, by switching to an empty generation, whose entries are current
// either way (entries sets metaRecord.Entries), with the meta record edited
// by edits.
func (s *space) empty(entries bool, edits ...func(*metaRecord)) error {
	return s.switchGen(s.allocGen(), func(m *metaRecord) {
		for _, edit := range edits {
			edit(m)
		}
		m.ResourceVersion = ""
		m.Entries = entries
	})
}

// create makes s a new, empty store: its meta record, with want and
// entries, names a generation past every generation that has keys, which
// are then deleted. Without a live meta record such keys are garbage (an
// Import of a new store that crashed before its switch, a Drop that crashed
// before it finished), and a number they use must not become live: their
// objects would come back. s.k must hold the store's prefix.
func (s *space) create(want driver.Meta, entries bool) error {
	gens, err := s.generations()
	if err != nil {
		return s.corrupt("list generations", err)
	}
	gen := pastGens(gens, 1)
	s.rec = metaRecord{Meta: want, Generation: gen, Entries: entries}
	s.k = s.k.withGen(gen)
	s.nextGen = gen + 1
	if err := s.writeMeta(s.rec); err != nil {
		return fmt.Errorf("store: open %s in %s: %w", s.name, s.where(), err)
	}
	for _, g := range gens {
		s.deleteGen(g)
	}
	if err := s.sh.durable(nil); err != nil {
		return fmt.Errorf("store: open %s in %s: %w", s.name, s.where(), err)
	}
	if err := s.sh.named(s.name); err != nil {
		return fmt.Errorf("store: open %s in %s: %w", s.name, s.where(), err)
	}
	return nil
}

// named names the store name, whose meta record was just written, in the
// stores file (see storesFile), once the record is durable: the file must
// never name a store a crash can take back.
func (sh *sharedDB) named(name string) error {
	if sh.cfg.durability != store.DurabilitySync {
		if err := sh.db.Sync(); err != nil {
			return err
		}
	}
	return sh.stores.add(name)
}

// generations lists the generation numbers that have keys: one seek per
// generation.
func (s *space) generations() ([]uint64, error) {
	var gens []uint64
	prefix := append(append([]byte(nil), s.k.store...), tagGen)
	err := s.sh.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.Valid(); {
			key := it.Item().Key()
			if len(key) < len(prefix)+8 {
				return fmt.Errorf("key %q: %w", key, errBadRecord)
			}
			gen := binary.BigEndian.Uint64(key[len(prefix):])
			gens = append(gens, gen)
			end := prefixEnd(s.k.genPrefix(gen))
			if end == nil {
				break
			}
			it.Seek(end)
		}
		return nil
	})
	return gens, err
}

// pastGens returns the first generation number from floor on that is past
// every one of gens: a new generation never takes a number that has keys,
// whose objects would come back.
func pastGens(gens []uint64, floor uint64) uint64 {
	for _, g := range gens {
		floor = max(floor, g+1)
	}
	return floor
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

// writeMeta writes m as the store's meta record, unless badger has failed
// to sync since the database opened (see syncFault). A nil error means the
// record is written, not that it is durable: the caller makes the record
// current, then checks (sharedDB.durable) before it reports success.
func (s *space) writeMeta(m metaRecord) error {
	return s.sh.update(func(txn *badger.Txn) error {
		return txn.Set(s.k.meta(), encodeMeta(s.k.meta(), m))
	})
}

// switchGen makes gen the current generation in one transaction, with the
// meta record changed by edit, then deletes the previous generation in the
// background: a relist that replaced every object is over once the new
// objects count, not after as many deletes again. Nothing reads an old
// generation, a new one never reuses its number, and whatever a crash
// leaves of it is deleted at the next open. The database closes only once
// the deletion is over (sharedDB.oldGens).
func (s *space) switchGen(gen uint64, edit func(*metaRecord)) error {
	if s.sh.cfg.durability == store.DurabilitySync {
		// The new generation was written through write batches; make it
		// durable before the switch that makes it live. (Badger writes
		// in order, so with sync writes the switch's own fsync covers
		// the same files; this covers rotated ones too.)
		if err := s.sh.db.Sync(); err != nil {
			return err
		}
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
	// Switched, whether or not the switch is durable: the caller must not
	// delete gen even when this fails (see rebuild).
	return s.sh.durable(nil)
}

// isCurrent reports whether gen is the store's current generation.
func (s *space) isCurrent(gen uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rec.Generation == gen
}

// deleteGen deletes every key of a generation that is not current. A
// failure only leaves garbage, deleted on the next open.
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

// testHookGenDeleted, when set (by tests), runs when deleteGen is over.
var testHookGenDeleted func(gen uint64)

// deletePrefix deletes every key under prefix through a write batch (as
// many transactions as it takes) and returns how many it deleted.
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

// testHookEntries, when set (by tests), runs after each step of
// dropEntries and buildEntries that a crash could follow; an error stops
// the open there, as a crash would.
var testHookEntries func(step string) error

func entriesStep(step string) error {
	if testHookEntries != nil {
		return testHookEntries(step)
	}
	return nil
}

// dropEntries makes the store keep no index entries, for the default mode,
// which never reads them: metaRecord.Entries is set false first, in one
// transaction, and then the entries are deleted in as many as it takes. A
// crash in between leaves entries that are never read (the flag is false)
// and that the next open deletes. Leftovers of a crashed drop or build are
// deleted even when the flag is already false; with none, this is one
// seek.
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
// mode, which reads them: it deletes whatever entries a crashed drop or
// build left, writes one entry per value of every value record (no object
// is decoded), makes them durable, and only then sets metaRecord.Entries
// true in one transaction. A crash at any point before that leaves the flag
// false, and the next open starts over. It does nothing when the flag is
// already true.
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
	wb := s.sh.newBatch()
	defer wb.Cancel()
	w := newSpaceChecked(wb, s.sh)
	n := 0
	err := s.view(func(txn *badger.Txn, k keys, names []string) error {
		return eachImpliedEntry(ctx, txn, k, names, func(index, value, key string) error {
			n++
			ek, ev := k.entry(index, value, key)
			return setSealed(w, ek, ev)
		})
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return err
	}
	if err := entriesStep("build: written"); err != nil {
		return err
	}
	if s.sh.cfg.durability == store.DurabilitySync {
		// As in switchGen: the entries went through write batches;
		// make them durable before the flag that makes them read.
		if err := s.sh.db.Sync(); err != nil {
			return err
		}
	}
	m.Entries = true
	if err := s.setRecord(m); err != nil {
		return err
	}
	klog.Background().V(2).Info("Built the index entries from the value records for the bounded mode", "store", s.name, "dir", s.sh.dir, "entries", n)
	return nil
}

// eachImpliedEntry calls fn with every index entry (index name, value,
// object key) the value records of k's generation imply, for the indexes
// names, read in txn: the entries a store keeps when it keeps them.
func eachImpliedEntry(ctx context.Context, txn *badger.Txn, k keys, names []string, fn func(index, value, key string) error) error {
	return eachValues(ctx, txn, k, len(names), func(key string, vals [][]string) error {
		return rawdb.ImpliedEntries(names, key, vals, fn)
	})
}

// eachValues calls fn with the object key and the index values (aligned
// with the n index names) of every value record of k's generation, read in
// txn. A record whose object key is hashed takes the key from the object's
// record.
func eachValues(ctx context.Context, txn *badger.Txn, k keys, n int, fn func(key string, vals [][]string) error) error {
	if n == 0 {
		return nil
	}
	return eachUnder(ctx, txn, k.valsPrefix(), func(item *badger.Item, suffix []byte) error {
		key, hashed, rest, err := readComp(suffix)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("value record %q: %w: %w", suffix, store.ErrCorrupt, errBadRecord)
		}
		if hashed {
			oi, err := txn.Get(append(k.objPrefix(), suffix...))
			if err != nil {
				return fmt.Errorf("object of value record %q: %w: %w", suffix, store.ErrCorrupt, err)
			}
			err = value(oi, func(v []byte) error {
				key, _, err = parseObj(suffix, v)
				return err
			})
			if err != nil {
				return fmt.Errorf("object of value record %q: %w: %w", suffix, store.ErrCorrupt, err)
			}
		}
		var vals [][]string
		err = value(item, func(b []byte) error {
			vals, err = decodeValues(b, n)
			return err
		})
		if err != nil {
			return fmt.Errorf("object %q: %w: %w", key, store.ErrCorrupt, err)
		}
		return fn(key, vals)
	})
}

// Persist writes changes, and the resume point rv unless it is empty (see
// shared.Engine.Commit): one transaction when it fits, else a new
// generation switched to in one final transaction.
func (s *space) Persist(ctx context.Context, changes []indexer.Change, rv string, replace bool) error {
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
		// A copy of the objects the changes write or delete would only be
		// overwritten or deleted (a relist after 410 Gone changes most of
		// them). Their value records and index entries are copied:
		// writeChange leaves those that did not change as they are.
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

// reindex writes a generation with the current objects and the index values
// given for every object key, aligned with names, and index entries if
// entries, and switches to it with metaRecord.Entries set to entries.
func (s *space) reindex(ctx context.Context, names []string, values map[string][][]string, entries bool) error {
	names = slices.Clone(names)
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
// (objects only when objsOnly, else every record), but for the keys in
// skip, then what fill writes, and switches to it with the meta record
// edited by edit. Until the switch the current generation is untouched, so
// a failure or a crash at any point leaves the store as it was.
func (s *space) rebuild(ctx context.Context, copyObjs, objsOnly bool, skip map[string]bool, fill func(writer, keys) error, edit func(*metaRecord)) error {
	gen := s.allocGen()
	k, _, _ := s.snapshot()
	nk := k.withGen(gen)
	wb := s.sh.newBatch()
	w := newSpaceChecked(wb, s.sh)
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
		return wb.Flush()
	}()
	if err != nil {
		wb.Cancel()
		if s.sh.syncFault.failed() == nil {
			// After a fault the deletion would be refused: the next
			// open deletes gen, which is not current.
			s.deleteGen(gen)
		}
		return err
	}
	if err := s.switchGen(gen, edit); err != nil {
		// Not when the switch made gen current, nor when it may have
		// reached the disk without (a write that failed to reach the
		// disk): the next open deletes gen if it is not current.
		if !s.isCurrent(gen) && s.sh.syncFault.failed() == nil {
			s.deleteGen(gen)
		}
		return err
	}
	return nil
}

// copyPrefix copies every key under prefix but those in skip into w,
// replacing its first oldLen bytes (the generation prefix) by newGen.
func (s *space) copyPrefix(ctx context.Context, w writer, prefix []byte, oldLen int, newGen []byte, skip map[string]bool) error {
	return s.sh.db.View(func(txn *badger.Txn) error {
		// Prefetching would read the values of the objects skipped too (a
		// relist after 410 Gone skips most).
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

// checkObjectSize refuses, as invalid input, an object badger cannot store:
// one whose value (objValue) is larger than a value-log file. Badger's own
// error for it would quote the object's first KiB (a Secret's data, say) in
// a message read as a failed write, which an informer retries for ever
// (and, through a write batch, as one that stops every write of the
// database); ErrInvalid makes it skip the object and commit the rest.
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
	switch c.Type {
	case store.OpPut:
		if err := setSealed(w, k.obj(c.Key), objValue(c.Key, c.Data)); err != nil {
			return err
		}
		return writeIndexes(w, k, names, entries, c.Key, old, c.Values)
	case store.OpDelete:
		if !c.Existed {
			return nil
		}
		if err := w.Delete(k.obj(c.Key)); err != nil {
			return err
		}
		if len(names) > 0 {
			if err := w.Delete(k.vals(c.Key)); err != nil {
				return err
			}
		}
		if !entries {
			return nil
		}
		for i, name := range names {
			for _, v := range old[i] {
				ek, _ := k.entry(name, v, c.Key)
				if err := w.Delete(ek); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeIndexes stores key's value record and, if entries, moves its index
// entries from old (nil for a new object) to vals.
func writeIndexes(w writer, k keys, names []string, entries bool, key string, old, vals [][]string) error {
	if len(names) == 0 {
		return nil
	}
	if old != nil && slices.EqualFunc(old, vals, slices.Equal[[]string]) {
		// Most updates (status changes) keep their index values: their
		// record and entries stand, and each write saved is one less
		// entry in badger's value log and memtable.
		return nil
	}
	if err := setSealed(w, k.vals(key), encodeValues(vals)); err != nil {
		return err
	}
	if !entries {
		return nil
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
	// Before release, which would wait too, but holding the registry's
	// lock: the deletions of every store of the database.
	s.sh.oldGens.Wait()
	return s.sh.release(s.name)
}

// view runs fn in a read transaction over the current generation. The keys
// and the transaction are taken together under mu, so a concurrent switch
// (which deletes the old generation only after changing k) cannot pull the
// data from under fn: badger transactions are snapshots.
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

// eachUnder calls fn for every item of txn whose key starts with prefix, in
// key order, with the rest of its key, until fn fails or ctx is done.
func eachUnder(ctx context.Context, txn *badger.Txn, prefix []byte, fn func(item *badger.Item, suffix []byte) error) error {
	return eachUnderPrefetch(ctx, txn, prefix, true, fn)
}

// eachUnderPrefetch is eachUnder, reading the values of the items ahead of
// fn only if prefetch: fn reads few of them, or reads them itself.
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
