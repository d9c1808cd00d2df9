package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// IsURL reports whether target names a database (scheme://...) rather than
// a snapshot file.
func IsURL(target string) bool { return strings.Contains(target, "://") }

// Status describes target, a snapshot file or a database URL: per store its
// identity, resume point, object count, bytes and content hash. A file is
// verified as by Read; a database is read one consistent view per store.
// progress may be nil. A store of a database that this build cannot read
// (see store.ListStores) does not hide the others: Status returns their
// manifest with an error naming each store it cannot read, which wraps
// their store.ErrIncompatible or store.ErrCorrupt.
func Status(ctx context.Context, target string, progress func(Progress)) (*Manifest, error) {
	if !IsURL(target) {
		return Read(ctx, target, nil)
	}
	entries, err := ListStores(ctx, target)
	if err != nil {
		return nil, err
	}
	infos, unreadable := readable(entries)
	m := &Manifest{Source: redact(target)}
	err = hashStores(ctx, exportFrom(target), infos, "status", progress, nil, func(info store.Info, h *hasher) error {
		m.Stores = append(m.Stores, h.header(info))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: status %s: %w", redact(target), err)
	}
	m.Size = diskSize(target)
	if unreadable != nil {
		return m, fmt.Errorf("snapshot: status %s: %d of %d stores cannot be read (the manifest describes the others): %w",
			redact(target), len(unreadable), len(entries), errors.Join(unreadable...))
	}
	return m, nil
}

// readable splits a database's entries into the stores this build can
// read and the errors of those it cannot, leaving out what an interrupted
// Drop left (store.StoreEntry.Gone), which is no store.
func readable(entries []store.StoreEntry) (infos []store.Info, unreadable []error) {
	for _, e := range entries {
		switch {
		case e.Gone():
		case e.Err != nil:
			unreadable = append(unreadable, e.Err)
		default:
			infos = append(infos, e.Info)
		}
	}
	return infos, unreadable
}

// exportFunc exports the store named name of one database, as
// store.Export and store.RawView.Export do.
type exportFunc func(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error)

// exportFrom is store.Export of the database at rawURL.
func exportFrom(rawURL string) exportFunc {
	return func(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
		return store.Export(ctx, rawURL, name, fn)
	}
}

// hashStores exports the stores infos in order, feeding each record to a
// hasher and to the function visit (if not nil) returns for its store, then
// calls done. Export errors are returned as they are.
func hashStores(ctx context.Context, export exportFunc, infos []store.Info, op string, progress func(Progress),
	visit func(store.Info) (func(store.Record), error), done func(store.Info, *hasher) error) error {
	var n int64
	for _, si := range infos {
		var h hasher
		each := func(store.Record) {}
		if visit != nil {
			var err error
			if each, err = visit(si); err != nil {
				return err
			}
		}
		info, err := export(ctx, si.Name, func(rec store.Record) error {
			h.add(rec)
			each(rec)
			n++
			if progress != nil && n%progressEvery == 0 {
				progress(Progress{Op: op, Store: si.Name, Done: n})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := done(info, &h); err != nil {
			return err
		}
	}
	return nil
}

// diskSize returns the bytes of the file or directory tree a URL's path
// names, or 0.
func diskSize(rawURL string) int64 {
	u, err := url.Parse(rawURL)
	if err != nil || u.Path == "" {
		return 0
	}
	var n int64
	// Informational: unreadable entries count as 0, and the walk never fails.
	_ = filepath.WalkDir(u.Path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// IndexEntries reads the persisted index entries of the store named name in
// the database at u: fn is called with each entry's index name, indexed
// value and object key. Backends that keep index entries provide one
// (bolt.IndexEntries, badger.IndexEntries; this package imports no
// backend). Implementations must be safe for concurrent use.
type IndexEntries func(ctx context.Context, u *url.URL, name string, fn func(index, value, key string) error) error

// VerifyOptions tune Verify. The zero value checks what it can without
// backend help. Verify only reads them.
type VerifyOptions struct {
	// Entries maps URL schemes to the reader of their index entries. For a
	// database of another scheme only the records are checked.
	Entries map[string]IndexEntries
	// Progress, when set, is called every few thousand records.
	Progress func(Progress)
	// Decoder, when set, returns the function that decodes a record's
	// Data for the store of the given Info: an object that does not
	// decode is a problem Verify reports (store.ErrCorrupt). A nil
	// function (unknown type, encrypted codec) checks checksums only.
	Decoder func(store.Info) (func(data []byte) error, error)
}

// maxProblems bounds the problems Verify lists in its error.
const maxProblems = 10

// Verify checks target, a snapshot file or a database URL, and never
// changes it. For a file: its structure, checksum, record counts and
// content hashes, index values aligned with its store's indexes, and keys
// a restore takes (driver.CheckKey; otherwise the error wraps
// store.ErrIncompatible). For a database: every record's checksum, unique
// keys, aligned index values, that every object decodes when o.Decoder is
// set, and, when o.Entries has a reader for its scheme, that the keys of
// every index value's entries are exactly those of the records with that
// value. A failed check is an error wrapping store.ErrCorrupt that lists
// the first problems. A store this build cannot read is named in the
// error, returned with the manifest of the others, as by Status. The
// database is read through store.FrozenView (badger replays its logs when
// it opens). o may be nil.
func Verify(ctx context.Context, target string, o *VerifyOptions) (_ *Manifest, err error) {
	if o == nil {
		o = &VerifyOptions{}
	}
	if !IsURL(target) {
		// A key no backend takes (the empty key, kept by older builds)
		// would make its store's restore fail.
		var keys keyCheck
		return Read(ctx, target, func(name string, rec store.Record) error {
			if err := keys.check(name, rec.Key); err != nil {
				return fmt.Errorf("%w; restore the other stores (RestoreOptions.Stores): %w", err, store.ErrIncompatible)
			}
			return nil
		})
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("snapshot: verify %s: %w: %w", target, store.ErrInvalid, err)
	}
	entries := o.Entries[u.Scheme]
	m := &Manifest{Source: redact(target)}
	view, release, err := store.FrozenView(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("snapshot: verify %s: %w", redact(target), err)
	}
	defer func() {
		if rerr := release(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("snapshot: verify %s: release the view: %w", redact(target), rerr))
		}
	}()
	viewURL, err := url.Parse(view)
	if err != nil {
		return nil, fmt.Errorf("snapshot: verify %s: %w", redact(target), err)
	}
	var problems []string
	listed, err := store.ListStores(ctx, view)
	if err != nil {
		return nil, fmt.Errorf("snapshot: verify %s: %w", redact(target), err)
	}
	infos, unreadable := readable(listed)
	// want holds, per store, every entry the records say should be indexed.
	var want map[triple]struct{}
	var undecodable int
	visit := func(si store.Info) (func(store.Record), error) {
		want, undecodable = map[triple]struct{}{}, 0
		var decode func([]byte) error
		if o.Decoder != nil {
			var err error
			if decode, err = o.Decoder(si); err != nil {
				return nil, fmt.Errorf("store %s: %w", si.Name, err)
			}
		}
		return func(rec store.Record) {
			if decode != nil {
				if err := decode(rec.Data); err != nil {
					if undecodable++; undecodable <= maxProblems {
						problems = append(problems, fmt.Sprintf("store %s: object %q does not decode: %v", si.Name, rec.Key, err))
					}
				}
			}
			for i, vs := range rec.Values {
				for _, v := range vs {
					want[triple{i, v, rec.Key}] = struct{}{}
				}
			}
		}, nil
	}
	err = hashStores(ctx, exportFrom(view), infos, "verify", o.Progress, visit, func(info store.Info, h *hasher) error {
		if undecodable > maxProblems {
			problems = append(problems, fmt.Sprintf("store %s: %d more objects do not decode", info.Name, undecodable-maxProblems))
		}
		sh := h.header(info)
		m.Stores = append(m.Stores, sh)
		if sh.ContentHash == "" {
			problems = append(problems, fmt.Sprintf("store %s: a key appears twice", info.Name))
		}
		if k := h.misaligned(len(info.Indexes)); k != "" {
			problems = append(problems, fmt.Sprintf("store %s: object %q has index values not aligned with the indexes %q", info.Name, k, info.Indexes))
			return nil
		}
		if entries == nil {
			return nil
		}
		pos := map[string]int{}
		for i, name := range info.Indexes {
			pos[name] = i
		}
		err := entries(ctx, viewURL, info.Name, func(index, value, key string) error {
			i, ok := pos[index]
			if !ok {
				problems = append(problems, fmt.Sprintf("store %s: entry of unknown index %q (value %q, key %q)", info.Name, index, value, key))
				return nil
			}
			t := triple{i, value, key}
			if _, ok := want[t]; !ok {
				problems = append(problems, fmt.Sprintf("store %s: index %q value %q lists %q, whose object does not have that value", info.Name, index, value, key))
				return nil
			}
			delete(want, t)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store %s: index entries: %w", info.Name, err)
		}
		var missing []string
		for t := range want {
			missing = append(missing, fmt.Sprintf("store %s: index %q value %q lacks %q, whose object has that value", info.Name, info.Indexes[t.index], t.value, t.key))
		}
		slices.Sort(missing)
		problems = append(problems, missing...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: verify %s: %w", redact(target), err)
	}
	m.Size = diskSize(target)
	var errs []error
	if len(problems) > 0 {
		more := ""
		if len(problems) > maxProblems {
			more = fmt.Sprintf("; and %d more", len(problems)-maxProblems)
			problems = problems[:maxProblems]
		}
		errs = append(errs, fmt.Errorf("snapshot: verify %s: %s%s: %w", redact(target), strings.Join(problems, "; "), more, store.ErrCorrupt))
	}
	if unreadable != nil {
		errs = append(errs, fmt.Errorf("snapshot: verify %s: %d of %d stores cannot be read (the others were verified): %w",
			redact(target), len(unreadable), len(listed), errors.Join(unreadable...)))
	}
	return m, errors.Join(errs...)
}

// triple is an index entry: (index position, value, key).
type triple struct {
	index      int
	value, key string
}

// Stores returns the Info of every store of target, a snapshot file (read
// and verified in full) or a database URL.
func Stores(ctx context.Context, target string) ([]store.Info, error) {
	if !IsURL(target) {
		m, err := Read(ctx, target, nil)
		if err != nil {
			return nil, err
		}
		infos := make([]store.Info, 0, len(m.Stores))
		for _, s := range m.Stores {
			infos = append(infos, s.Info)
		}
		return infos, nil
	}
	infos, err := store.Stores(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("snapshot: stores of %s: %w", redact(target), err)
	}
	slices.SortFunc(infos, func(a, b store.Info) int { return strings.Compare(a.Name, b.Name) })
	return infos, nil
}

// ListStores returns every store of target, a snapshot file (read and
// verified in full) or a database URL, in name order. Where a database's
// backend can tell them apart (bolt, badger), a store whose metadata this
// build cannot read is listed with the reason (store.StoreEntry.Err)
// beside the others, instead of failing the call as Stores does.
func ListStores(ctx context.Context, target string) ([]store.StoreEntry, error) {
	if !IsURL(target) {
		infos, err := Stores(ctx, target)
		if err != nil {
			return nil, err
		}
		return driver.EntriesOf(infos), nil
	}
	entries, err := store.ListStores(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("snapshot: stores of %s: %w", redact(target), err)
	}
	return entries, nil
}

// Records calls fn with every record of the store name of target, a
// snapshot file (verified in full before fn sees a record) or a database
// URL, and returns the store's Info. fn must not retain rec.Data.
func Records(ctx context.Context, target, name string, fn func(rec store.Record) error) (store.Info, error) {
	if IsURL(target) {
		info, err := store.Export(ctx, target, name, fn)
		if err != nil {
			return store.Info{}, fmt.Errorf("snapshot: read %s from %s: %w", name, redact(target), err)
		}
		return info, nil
	}
	// Both passes read one open file: the records handed out are those verified.
	sf, err := openSnapFile(target)
	if err != nil {
		return store.Info{}, err
	}
	defer sf.Close()
	m, err := sf.read(ctx, nil)
	if err != nil {
		return store.Info{}, err
	}
	sh := m.Store(name)
	if sh == nil {
		return store.Info{}, fmt.Errorf("snapshot: read %s: no store %q: %w", target, name, store.ErrNotFound)
	}
	_, err = sf.read(ctx, func(n string, rec store.Record) error {
		if n != name {
			return nil
		}
		return fn(rec)
	})
	if err != nil {
		return store.Info{}, err
	}
	return sh.Info, nil
}
