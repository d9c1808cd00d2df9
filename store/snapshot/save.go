package snapshot

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Progress reports how far a long operation got. It is a plain value.
type Progress struct {
	// Op is "save", "restore", "status" or "verify" (also the first pass
	// of a restore, which verifies the file before writing).
	Op string
	// Store is the store being read or written.
	Store string
	// Done is the number of records handled so far in this operation, over
	// every store.
	Done int64
	// Total is the number of records the operation will handle, or 0 when
	// it is not known (save).
	Total int64
}

// progressEvery is how many records pass between Progress calls.
const progressEvery = 4096

// Source is one store to save: its name (used in errors until Export
// reports the store's Info) and a function that exports one consistent
// view of it. Save calls Export from its own goroutine, once.
type Source struct {
	Name   string
	Export func(ctx context.Context, fn func(store.Record) error) (store.Info, error)
}

// SaveOptions tune Save. The zero value is fine. Save only reads them.
type SaveOptions struct {
	// Progress, when set, is called every few thousand records, from
	// Save's goroutine.
	Progress func(Progress)
	// Now returns the creation time written in the header. Default
	// time.Now.
	Now func() time.Time
	// Stores, when not empty, selects the stores to save by name (SaveURL).
	Stores []string
	// TempFile, when set, is called with the path of the temporary file
	// Save writes, once it exists. Save removes it on any error, or
	// renames it; a program that must end before Save returns (a command
	// stopped by a signal) removes it.
	TempFile func(path string)
}

// Save writes a snapshot of sources to path, each store in its own
// consistent view, and returns its manifest. The file is written as a new
// temporary file beside path (path+".part-*", mode 0600), fsynced, renamed
// over path and its directory fsynced: a crash leaves the previous file at
// path or the new one, never a part of one. Overlapping saves to one path
// each write their own file; the last to finish wins. o may be nil.
func Save(ctx context.Context, path string, sources []Source, o *SaveOptions) (m *Manifest, err error) {
	if o == nil {
		o = &SaveOptions{}
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	err = snapfile.WriteFile(path, "snapshot: save "+path, o.TempFile, func(f *os.File) error {
		var done int64
		if m, done, err = write(ctx, f, path, now().UTC(), sources, o.Progress); err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress(Progress{Op: "save", Done: done, Total: done})
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("snapshot: save %s: %w", path, err)
		}
		m.Size = fi.Size()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// write writes a snapshot of sources to dst and returns its manifest
// (without Size) and the number of records written. name goes into errors
// and the manifest's Source.
func write(ctx context.Context, dst io.Writer, name string, created time.Time, sources []Source, progress func(Progress)) (*Manifest, int64, error) {
	w := newWriter(dst)
	w.start(fileHeader{Created: created})
	m := &Manifest{Source: name, FormatVersion: FormatVersion, Created: created}
	var done int64
	seen := map[string]bool{}
	for _, src := range sources {
		var h hasher
		w.begin(src.Name)
		info, err := src.Export(ctx, func(rec store.Record) error {
			if err := w.Err(); err != nil {
				return err
			}
			w.record(rec)
			h.add(rec)
			done++
			if progress != nil && done%progressEvery == 0 {
				progress(Progress{Op: "save", Store: src.Name, Done: done})
			}
			return w.Err()
		})
		if err != nil {
			return nil, done, fmt.Errorf("snapshot: save %s: store %s: %w", name, src.Name, err)
		}
		if info.Name != src.Name {
			if src.Name != "" {
				return nil, done, fmt.Errorf("snapshot: save %s: store %s exported as %q: %w", name, src.Name, info.Name, store.ErrInvalid)
			}
			// An Exporter's name is known only now; the begin block
			// already went out, so the file would disagree with itself.
			return nil, done, fmt.Errorf("snapshot: save %s: a source needs its Name: %w", name, store.ErrInvalid)
		}
		if seen[info.Name] {
			return nil, done, fmt.Errorf("snapshot: save %s: store %s given twice: %w", name, info.Name, store.ErrInvalid)
		}
		seen[info.Name] = true
		sh := h.header(info)
		if sh.ContentHash == "" {
			return nil, done, fmt.Errorf("snapshot: save %s: store %s exported one key twice: %w", name, info.Name, store.ErrCorrupt)
		}
		if k := h.misaligned(len(info.Indexes)); k != "" {
			return nil, done, fmt.Errorf("snapshot: save %s: store %s: record %q has index values not aligned with the indexes %q: %w", name, info.Name, k, info.Indexes, store.ErrCorrupt)
		}
		w.end(sh)
		m.Stores = append(m.Stores, sh)
	}
	if err := w.finish(); err != nil {
		return nil, done, fmt.Errorf("snapshot: save %s: write: %w", name, err)
	}
	return m, done, nil
}

// SaveStores writes a snapshot of open stores to path: the online mode, for
// a process that holds its database. Each store is read in one consistent
// view while its informer keeps writing. o may be nil.
func SaveStores(ctx context.Context, path string, stores []store.Store, o *SaveOptions) (*Manifest, error) {
	sources := make([]Source, 0, len(stores))
	for _, s := range stores {
		e, ok := s.(store.Exporter)
		name := s.Info().Name
		if !ok {
			return nil, fmt.Errorf("snapshot: save %s: store %s (%s) cannot export its records: %w", path, name, s.Info().Backend, store.ErrInvalid)
		}
		sources = append(sources, Source{Name: name, Export: e.Export})
	}
	return Save(ctx, path, sources, o)
}

// SaveURL writes a snapshot of the stores of the database at rawURL (all of
// them, or o.Stores) to path. The database must not be held by another
// process. A path that would replace the database's file, or a file inside
// its directory, is refused with store.ErrInvalid. o may be nil.
func SaveURL(ctx context.Context, path, rawURL string, o *SaveOptions) (*Manifest, error) {
	if overwritesDatabase(path, rawURL) {
		return nil, fmt.Errorf("snapshot: save %s: the snapshot would replace the database %s that it saves, or a file of it: choose another file: %w", path, redact(rawURL), store.ErrInvalid)
	}
	entries, err := store.ListStores(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("snapshot: save %s: %w", path, err)
	}
	var want []string
	if o != nil {
		want = o.Stores
	}
	names, err := pick(entries, want, "snapshot: save "+path, redact(rawURL), "save the other stores with --store / SaveOptions.Stores, or drop this one")
	if err != nil {
		return nil, err
	}
	return Save(ctx, path, sourcesOf(names, exportFrom(rawURL)), o)
}

// sourcesOf returns the Sources of the stores names, exported by export.
func sourcesOf(names []string, export exportFunc) []Source {
	sources := make([]Source, 0, len(names))
	for _, name := range names {
		sources = append(sources, Source{Name: name, Export: func(ctx context.Context, fn func(store.Record) error) (store.Info, error) {
			return export(ctx, name, fn)
		}})
	}
	return sources
}

// overwritesDatabase reports whether writing path would replace the file of
// the database at rawURL or a file inside its directory. (The temporary
// file is created with O_EXCL: it cannot replace anything.)
func overwritesDatabase(path, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Path == "" {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	db := filepath.Clean(u.Path)
	if real, err := filepath.EvalSymlinks(db); err == nil {
		db = real
	}
	if abs == db || db != string(filepath.Separator) && strings.HasPrefix(abs, db+string(filepath.Separator)) {
		return true
	}
	a, errA := os.Stat(path)
	b, errB := os.Stat(u.Path)
	return errA == nil && errB == nil && os.SameFile(a, b)
}
