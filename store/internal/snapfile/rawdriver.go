package snapfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"slices"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

var _ store.RawDriver = (*Backend)(nil)

// rawLockTimeout bounds Import's and Drop's wait for a file another process
// holds (see Lock): the raw driver takes no lock_timeout= parameter.
var rawLockTimeout = store.DefaultLockTimeout

// rawPath checks u and returns its file path.
func (b *Backend) rawPath(op string, u *url.URL) (string, error) {
	if u.Host != "" || u.Opaque != "" || len(u.Query()) > 0 {
		return "", fmt.Errorf("store: %s %s: want %s:///absolute/path/file.snap (three slashes, no parameters): %w", op, u.Redacted(), b.Scheme, store.ErrInvalid)
	}
	if u.Path == "" || u.Path == "/" {
		return "", fmt.Errorf("store: %s %s: a store without a file lives only in its process: %w", op, u.Redacted(), store.ErrInvalid)
	}
	path, err := filePath(b.Scheme, u.Path)
	if err != nil {
		return "", fmt.Errorf("store: %s %s: %w", op, u.Redacted(), err)
	}
	return path, nil
}

// rawSection is one store of a file as read by the raw driver.
type rawSection struct {
	h    Header
	data map[string][]byte // nil unless loaded
}

// infoOf is the Info of a store of a file, which lists no indexes (see
// Backend).
func (b *Backend) infoOf(h Header) store.Info {
	info := h.Meta.Info(b.Scheme, h.Name, h.ResourceVersion)
	info.Indexes = nil
	return info
}

// Stores implements store.RawDriver: the stores of the file as last
// written.
func (b *Backend) Stores(ctx context.Context, u *url.URL) ([]store.Info, error) {
	path, err := b.rawPath("stores", u)
	if err != nil {
		return nil, err
	}
	headers, err := Read(path, func(*Header, string, []byte) error { return ctx.Err() })
	if err != nil {
		return nil, b.readError("stores", path, err)
	}
	infos := make([]store.Info, 0, len(headers))
	for _, h := range headers {
		infos = append(infos, b.infoOf(h))
	}
	return infos, nil
}

// ListStores implements store.RawDriver: a file has one checksum, so a
// store cannot be unreadable while the others are not; the stores are
// those of Stores, in name order.
func (b *Backend) ListStores(ctx context.Context, u *url.URL) ([]store.StoreEntry, error) {
	infos, err := b.Stores(ctx, u)
	if err != nil {
		return nil, err
	}
	return driver.EntriesOf(infos), nil
}

func (b *Backend) readError(op, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %s %s://%s: %w: %w", op, b.Scheme, path, store.ErrNotFound, err)
	}
	return fmt.Errorf("store: %s %s://%s: %w", op, b.Scheme, path, err)
}

// Export implements store.RawDriver: the records of the store name in the
// file as last written. Read verifies the whole file's checksum before it
// hands out any record: fn never sees a record of a damaged file.
func (b *Backend) Export(ctx context.Context, u *url.URL, name string, fn func(store.Record) error) (store.Info, error) {
	path, err := b.rawPath("export "+name, u)
	if err != nil {
		return store.Info{}, err
	}
	var fnErr error
	headers, err := Read(path, func(h *Header, key string, data []byte) error {
		if err := ctx.Err(); err != nil || h.Name != name {
			return err
		}
		if err := fn(store.Record{Key: key, Data: data}); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if fnErr != nil {
		return store.Info{}, fnErr
	}
	if err != nil {
		return store.Info{}, b.readError("export "+name, path, err)
	}
	for _, h := range headers {
		if h.Name == name {
			return b.infoOf(h), nil
		}
	}
	return store.Info{}, fmt.Errorf("store: export %s from %s://%s: %w", name, b.Scheme, path, store.ErrNotFound)
}

// Import implements store.RawDriver: the file is rewritten with the store
// replaced, atomically (Write). Index values are dropped: the store
// rebuilds them when it loads. A file open in this or another process is
// refused (see exclusive).
func (b *Backend) Import(ctx context.Context, u *url.URL, info store.Info, next func() (store.Record, error)) error {
	path, err := b.rawPath("import "+info.Name, u)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("store: import %s into %s://%s: %w", info.Name, b.Scheme, path, err)
	}
	if info.Name == "" {
		return fail(fmt.Errorf("empty store name: %w", store.ErrInvalid))
	}
	return b.exclusive(ctx, path, true, fail, func() error {
		secs, _, err := readSections(ctx, path, func(n string) bool { return n == info.Name })
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(err)
		}
		data := map[string][]byte{}
		for n := 1; ; n++ {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			rec, err := next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fail(err)
			}
			// The rule of every backend's Import: a snapshot file could
			// hold the empty key, but a bolt database could not.
			if err := driver.CheckKey(rec.Key); err != nil {
				return fail(fmt.Errorf("record %d: %w", n, err))
			}
			if _, dup := data[rec.Key]; dup {
				return fail(fmt.Errorf("record %q given twice: %w", rec.Key, store.ErrInvalid))
			}
			data[rec.Key] = bytes.Clone(rec.Data)
		}
		secs[info.Name] = &rawSection{
			h: Header{
				Name:            info.Name,
				Meta:            driver.Meta{FormatVersion: b.FormatVersion, Codec: info.Codec, Type: info.Type, KeyFunc: info.KeyFunc, Scope: info.Scope, Indexes: slices.Clone(info.Indexes)},
				ResourceVersion: info.ResourceVersion,
			},
			data: data,
		}
		if err := writeSections(path, secs); err != nil {
			return fail(err)
		}
		return nil
	})
}

// exclusive runs fn with the file at path held against this process's
// stores (the backend's registry of open files locked, so that none opens
// it meanwhile) and against other processes' (its lock, see Lock): their
// next snapshot would write over what fn writes. A file open in this
// process, by any of its stores, is refused with store.ErrInUse; one held
// by another process with store.ErrLocked after rawLockTimeout, or ctx's
// error. Unless create, a missing file is refused with store.ErrNotFound
// before the lock, which would create the directory and the lock file.
// fail wraps the refusals.
func (b *Backend) exclusive(ctx context.Context, path string, create bool, fail func(error) error, fn func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	// First: a store open here may not have written its file yet.
	if b.files[path] != nil || b.opening.Busy(path) {
		return fail(fmt.Errorf("the file is open in this process: %w (close its stores first)", store.ErrInUse))
	}
	if _, err := os.Stat(path); !create && errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("%w: %w", store.ErrNotFound, err))
	}
	unlock, err := Lock(ctx, path, rawLockTimeout)
	if errors.Is(err, store.ErrLocked) {
		// The raw driver takes no lock_timeout= (rawPath refuses
		// every parameter): the way out is the other process.
		return fail(fmt.Errorf("%w (close that process's stores of the file first)", err))
	}
	if err != nil {
		return fail(err)
	}
	defer unlock()
	return fn()
}

// readSections reads the stores of the file at path into memory, but those
// skip (if not nil) is true for, and returns them with the headers of every
// store of the file. A missing file is an error wrapping fs.ErrNotExist.
func readSections(ctx context.Context, path string, skip func(name string) bool) (map[string]*rawSection, []Header, error) {
	secs := map[string]*rawSection{}
	section := func(name string) *rawSection {
		s := secs[name]
		if s == nil {
			s = &rawSection{data: map[string][]byte{}}
			secs[name] = s
		}
		return s
	}
	headers, err := Read(path, func(h *Header, key string, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if skip == nil || !skip(h.Name) {
			section(h.Name).data[key] = bytes.Clone(data)
		}
		return nil
	})
	if err != nil {
		// Empty rather than nil: Import writes into it when the file
		// does not exist yet.
		return map[string]*rawSection{}, nil, err
	}
	for _, h := range headers {
		if skip == nil || !skip(h.Name) {
			section(h.Name).h = h
		}
	}
	return secs, headers, nil
}

// writeSections writes secs to path atomically, sorted by name.
func writeSections(path string, secs map[string]*rawSection) error {
	out := make([]Section, 0, len(secs))
	for _, name := range slices.Sorted(maps.Keys(secs)) {
		out = append(out, secs[name].Committed(secs[name].h))
	}
	return Write(path, out)
}

// Drop implements store.RawDriver: the file is rewritten without the
// store, atomically (Write), with the other stores' records, metadata and
// resume points as they were. It is refused, as Import is, while the file
// is open in this or another process (see exclusive).
func (b *Backend) Drop(ctx context.Context, u *url.URL, name string) error {
	path, err := b.rawPath("drop "+name, u)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("store: drop %s from %s://%s: %w", name, b.Scheme, path, err)
	}
	if name == "" {
		return fail(fmt.Errorf("empty store name: %w", store.ErrInvalid))
	}
	return b.exclusive(ctx, path, false, fail, func() error {
		secs, headers, err := readSections(ctx, path, func(n string) bool { return n == name })
		if errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("%w: %w", store.ErrNotFound, err))
		}
		if err != nil {
			return fail(err)
		}
		if !slices.ContainsFunc(headers, func(h Header) bool { return h.Name == name }) {
			return fail(fmt.Errorf("no store %q in the file: %w", name, store.ErrNotFound))
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if err := writeSections(path, secs); err != nil {
			return fail(err)
		}
		return nil
	})
}
