package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// ErrNotEmpty is returned by Restore when a store it would replace holds
// objects or a resume point, and RestoreOptions.Force is not set.
var ErrNotEmpty = errors.New("target store is not empty")

// RestoreOptions tune Restore. The zero value is fine. Restore only reads
// them.
type RestoreOptions struct {
	// Force replaces stores that hold objects or a resume point.
	Force bool
	// DropResumePoint restores the objects without their resume point, so
	// that the informer relists on its next start (a snapshot too old for
	// the API server's watch cache, or another cluster's).
	DropResumePoint bool
	// Stores, when not empty, selects the stores to restore by name.
	Stores []string
	// Progress, when set, is called every few thousand records.
	Progress func(Progress)
}

// Restore writes the stores of the snapshot at path into the database at
// rawURL, of any backend that implements store.RawDriver. The whole file is
// verified (as by Verify) before anything is written. Each store is
// replaced atomically by the backend's Import: a failed or interrupted
// restore leaves each store as it was, or empty without a resume point.
// Stores of the database not in the snapshot are left alone. o may be nil.
func Restore(ctx context.Context, path, rawURL string, o *RestoreOptions) (*Manifest, error) {
	if o == nil {
		o = &RestoreOptions{}
	}
	want := map[string]bool{}
	for _, name := range o.Stores {
		want[name] = true
	}
	selected := func(name string) bool { return len(want) == 0 || want[name] }
	// One open file for both passes: the second pass must read the file
	// the first one verified, not whatever the path names by then.
	sf, err := openSnapFile(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: restore %s: %w", path, err)
	}
	defer sf.Close()
	var checked int64 // records read in all
	var keys keyCheck
	m, err := sf.read(ctx, func(name string, rec store.Record) error {
		checked++
		// Every backend's Import refuses such a key: found before anything
		// is written, the restore fails whole.
		if err := keys.check(name, rec.Key); err != nil && selected(name) {
			return err
		}
		if o.Progress != nil && checked%progressEvery == 0 {
			o.Progress(Progress{Op: "verify", Store: name, Done: checked})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: restore %s: %w", path, err)
	}
	for _, name := range o.Stores {
		if m.Store(name) == nil {
			return nil, fmt.Errorf("snapshot: restore %s: no store %q in the snapshot: %w", path, name, store.ErrNotFound)
		}
	}
	var total int64
	for _, sh := range m.Stores {
		if selected(sh.Info.Name) {
			total += sh.Objects
		}
	}
	if !o.Force {
		if err := checkEmpty(ctx, rawURL, m, selected); err != nil {
			return nil, fmt.Errorf("snapshot: restore %s to %s: %w", path, redact(rawURL), err)
		}
	}
	fr, err := sf.reader()
	if err != nil {
		return nil, fmt.Errorf("snapshot: restore %s: %w", path, err)
	}
	out := &Manifest{Source: rawURL}
	// partial adds to an error which stores are already replaced.
	partial := func(err error) error {
		if len(out.Stores) == 0 {
			return err
		}
		var names []string
		for _, sh := range out.Stores {
			names = append(names, sh.Info.Name)
		}
		return fmt.Errorf("%w (stores %q were already restored; rerun with --force / RestoreOptions.Force to finish)", err, names)
	}
	var done int64
	for {
		name, ok, err := fr.nextStore()
		if err != nil {
			return nil, partial(fmt.Errorf("snapshot: restore %s: %w", path, err))
		}
		if !ok {
			break
		}
		sh := m.Store(name)
		if sh == nil {
			return nil, partial(fmt.Errorf("snapshot: restore %s: store %q was not there on the first read: the file changed: %w", path, name, store.ErrCorrupt))
		}
		if !selected(name) {
			for {
				if _, err := fr.nextRecord(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					return nil, partial(fmt.Errorf("snapshot: restore %s: %w", path, err))
				}
			}
			continue
		}
		info := sh.Info
		if o.DropResumePoint {
			info.ResourceVersion = ""
		}
		// The file can still change in place under the open descriptor:
		// Import is told the store's end (io.EOF, which commits) only if
		// the records are exactly those the first pass verified; otherwise
		// next fails and Import rolls back.
		var (
			h        hasher
			n        int64
			verified bool
		)
		err = store.Import(ctx, rawURL, info, func() (store.Record, error) {
			rec, err := fr.nextRecord()
			if errors.Is(err, io.EOF) {
				if err := h.check(*sh); err != nil {
					return store.Record{}, fmt.Errorf("the records differ from those verified (%w): the file changed during the restore: %w", err, store.ErrCorrupt)
				}
				verified = true
				return rec, io.EOF
			}
			if err != nil {
				return rec, err
			}
			n++
			done++
			if n > sh.Objects {
				return rec, fmt.Errorf("more records than verified (%d): the file changed during the restore: %w", sh.Objects, store.ErrCorrupt)
			}
			h.add(rec)
			if o.Progress != nil && done%progressEvery == 0 {
				o.Progress(Progress{Op: "restore", Store: name, Done: done, Total: total})
			}
			return rec, nil
		})
		if err == nil && !verified {
			// A backend bug, and the store is already replaced: say so.
			err = fmt.Errorf("the backend's Import stopped after %d of %d records without an error: %w", n, sh.Objects, store.ErrCorrupt)
		}
		if err != nil {
			return nil, partial(fmt.Errorf("snapshot: restore %s: store %s to %s: %w", path, name, redact(rawURL), err))
		}
		out.Stores = append(out.Stores, StoreHeader{Info: info, Objects: sh.Objects, Bytes: sh.Bytes, ContentHash: sh.ContentHash})
	}
	if o.Progress != nil {
		o.Progress(Progress{Op: "restore", Done: done, Total: total})
	}
	return out, nil
}

// errStop ends an Export early.
var errStop = errors.New("stop")

// checkEmpty returns ErrNotEmpty if a store of m that would be restored
// exists in the database at rawURL with objects or a resume point.
func checkEmpty(ctx context.Context, rawURL string, m *Manifest, selected func(string) bool) error {
	entries, err := store.ListStores(ctx, rawURL)
	if errors.Is(err, store.ErrNotFound) {
		// No database yet: Import creates it.
		return nil
	}
	if err != nil {
		return err
	}
	var full []string
	for _, e := range entries {
		info := e.Info
		// A store that will not be restored is left alone, readable or
		// not; what an interrupted Drop left, Import replaces.
		if m.Store(info.Name) == nil || !selected(info.Name) || e.Gone() {
			continue
		}
		if e.Err != nil {
			return fmt.Errorf("%w (cannot tell whether it is empty; --force / RestoreOptions.Force replaces it)", e.Err)
		}
		if info.ResourceVersion != "" {
			full = append(full, info.Name)
			continue
		}
		_, err := store.Export(ctx, rawURL, info.Name, func(store.Record) error { return errStop })
		if errors.Is(err, errStop) {
			full = append(full, info.Name)
		} else if err != nil {
			return err
		}
	}
	if len(full) > 0 {
		slices.Sort(full)
		return fmt.Errorf("stores %q hold objects or a resume point (use --force / RestoreOptions.Force to replace them): %w", full, ErrNotEmpty)
	}
	return nil
}

// redact hides a password in a URL for messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Redacted()
}

// keyCheck checks the keys of a snapshot's records as Read hands them over
// (driver.CheckKey), numbering them per store to name a bad one.
type keyCheck struct {
	store string
	n     int64 // records of store so far
}

func (c *keyCheck) check(name, key string) error {
	if name != c.store {
		c.store, c.n = name, 0
	}
	c.n++
	if err := driver.CheckKey(key); err != nil {
		return fmt.Errorf("store %q: record %d: %w (no backend can hold it)", name, c.n, err)
	}
	return nil
}
