package memdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"path/filepath"
	"slices"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// Raw returns the memdb driver with record-level access (store.RawDriver)
// to snapshot files, for the snapshot tool. Its Open is the registered
// driver's. A memdb store without a file has nothing another process
// could read, so its URL (memdb://) is refused.
//
// Snapshot files keep no index entries or values (a store rebuilds them
// when it loads the file), so exported records have no Values and the
// stores' Info lists no indexes.
func Raw() store.RawDriver { return rawDriver{} }

// rawDriver implements store.RawDriver on snapshot files. It is safe for
// concurrent use.
type rawDriver struct{}

var _ store.RawDriver = rawDriver{}

func (rawDriver) Open(ctx context.Context, u *url.URL, opts store.Options) (store.Store, error) {
	return open(ctx, u, opts)
}

// rawPath checks u and returns its file path.
func rawPath(op string, u *url.URL) (string, error) {
	if u.Host != "" || u.Opaque != "" || len(u.Query()) > 0 {
		return "", fmt.Errorf("store: %s %s: want %s:///absolute/path/file.snap (three slashes, no parameters): %w", op, u.Redacted(), Scheme, store.ErrInvalid)
	}
	if u.Path == "" || u.Path == "/" {
		return "", fmt.Errorf("store: %s %s: a store without a file lives only in its process: %w", op, u.Redacted(), store.ErrInvalid)
	}
	return filepath.Clean(u.Path), nil
}

// rawSection is one store of a file as read by the raw driver.
type rawSection struct {
	h    snapfile.Header
	data map[string][]byte // nil unless loaded
}

func rawInfoOf(h snapfile.Header) store.Info {
	return store.Info{
		Backend:         Scheme,
		Name:            h.Name,
		FormatVersion:   h.Meta.FormatVersion,
		Codec:           h.Meta.Codec,
		Type:            h.Meta.Type,
		KeyFunc:         h.Meta.KeyFunc,
		Scope:           h.Meta.Scope,
		ResourceVersion: h.ResourceVersion,
	}
}

// Stores implements store.RawDriver: the stores of the file as last
// written.
func (rawDriver) Stores(ctx context.Context, u *url.URL) ([]store.Info, error) {
	path, err := rawPath("stores", u)
	if err != nil {
		return nil, err
	}
	headers, err := snapfile.Read(path, func(*snapfile.Header, string, []byte) error { return ctx.Err() })
	if err != nil {
		return nil, rawReadError("stores", path, err)
	}
	infos := make([]store.Info, 0, len(headers))
	for _, h := range headers {
		infos = append(infos, rawInfoOf(h))
	}
	return infos, nil
}

func rawReadError(op, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %s %s://%s: %w: %w", op, Scheme, path, store.ErrNotFound, err)
	}
	return fmt.Errorf("store: %s %s://%s: %w", op, Scheme, path, err)
}

// Export implements store.RawDriver: the records of the store name in the
// file as last written. The file's checksum is verified only once it has
// been read to the end: fn may see records of a damaged file before Export
// returns its error.
func (rawDriver) Export(ctx context.Context, u *url.URL, name string, fn func(store.Record) error) (store.Info, error) {
	path, err := rawPath("export "+name, u)
	if err != nil {
		return store.Info{}, err
	}
	var fnErr error
	headers, err := snapfile.Read(path, func(h *snapfile.Header, key string, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if h.Name != name {
			return nil
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
		return store.Info{}, rawReadError("export "+name, path, err)
	}
	for _, h := range headers {
		if h.Name == name {
			return rawInfoOf(h), nil
		}
	}
	return store.Info{}, fmt.Errorf("store: export %s from %s://%s: %w", name, Scheme, path, store.ErrNotFound)
}

// Import implements store.RawDriver: the file is rewritten with the store
// replaced, atomically (snapfile.Write). Index values are dropped: the
// store rebuilds them when it loads. A file open in this process is
// refused with store.ErrInUse, since its stores would overwrite the import
// with their next snapshot.
func (rawDriver) Import(ctx context.Context, u *url.URL, info store.Info, next func() (store.Record, error)) error {
	path, err := rawPath("import "+info.Name, u)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("store: import %s into %s://%s: %w", info.Name, Scheme, path, err)
	}
	if info.Name == "" {
		return fail(fmt.Errorf("empty store name: %w", store.ErrInvalid))
	}
	// Held throughout, so that no store of this process opens the file
	// while it is rewritten.
	filesMu.Lock()
	defer filesMu.Unlock()
	if files[path] != nil {
		return fail(fmt.Errorf("the file is open in this process: %w (close its stores first)", store.ErrInUse))
	}
	secs := map[string]*rawSection{}
	headers, err := snapfile.Read(path, func(h *snapfile.Header, key string, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if h.Name == info.Name {
			return nil
		}
		s := secs[h.Name]
		if s == nil {
			s = &rawSection{data: map[string][]byte{}}
			secs[h.Name] = s
		}
		s.data[key] = bytes.Clone(data)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	for _, h := range headers {
		if h.Name == info.Name {
			continue
		}
		s := secs[h.Name]
		if s == nil {
			s = &rawSection{data: map[string][]byte{}}
			secs[h.Name] = s
		}
		s.h = h
	}
	data := map[string][]byte{}
	for {
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
		if _, dup := data[rec.Key]; dup {
			return fail(fmt.Errorf("record %q given twice: %w", rec.Key, store.ErrInvalid))
		}
		data[rec.Key] = bytes.Clone(rec.Data)
	}
	secs[info.Name] = &rawSection{
		h: snapfile.Header{
			Name:            info.Name,
			Meta:            store.Meta{FormatVersion: FormatVersion, Codec: info.Codec, Type: info.Type, KeyFunc: info.KeyFunc, Scope: info.Scope, Indexes: slices.Clone(info.Indexes)},
			ResourceVersion: info.ResourceVersion,
		},
		data: data,
	}
	out := make([]snapfile.Section, 0, len(secs))
	for _, name := range slices.Sorted(maps.Keys(secs)) {
		s := secs[name]
		out = append(out, snapfile.Section{Header: s.h, Len: len(s.data), Records: maps.All(s.data)})
	}
	if err := snapfile.Write(path, out); err != nil {
		return fail(err)
	}
	return nil
}
