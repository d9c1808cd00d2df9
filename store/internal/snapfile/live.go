package snapfile

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/informerdb/informerdb/store"
)

var _ store.RawLiveViewer = (*Backend)(nil)

// LiveView implements store.RawLiveViewer: the committed state of every
// store of the file, as the backend copies it for the next snapshot,
// read without a lock: it blocks no commit beyond that copy.
func (b *Backend) LiveView(ctx context.Context, u *url.URL, fn func(store.RawView) error) error {
	if u.Host != "" || u.Opaque != "" {
		return fmt.Errorf("store: view %s: want %s:///absolute/path/file.snap (three slashes): %w", u.Redacted(), b.Scheme, store.ErrInvalid)
	}
	if u.Path == "" || u.Path == "/" {
		return fmt.Errorf("store: view %s: a store without a file keeps no encoded objects to read; give its stores a file (%s:///absolute/path/file.snap): %w", u.Redacted(), b.Scheme, store.ErrInvalid)
	}
	path, err := filePath(b.Scheme, u.Path)
	if err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
	b.mu.Lock()
	f := b.files[path]
	b.mu.Unlock()
	if f == nil {
		return fmt.Errorf("store: view %s: no store of this process has the file open: %w", u.Redacted(), store.ErrClosed)
	}
	return fn(&liveView{b: b, where: b.Scheme + "://" + path, secs: f.committed()})
}

// liveView is a store.RawView on copied sections.
type liveView struct {
	b     *Backend
	where string
	secs  []Section // by name
}

func (v *liveView) ListStores(ctx context.Context) ([]store.StoreEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: view %s: %w", v.where, err)
	}
	entries := make([]store.StoreEntry, 0, len(v.secs))
	for _, s := range v.secs {
		entries = append(entries, store.StoreEntry{Info: v.b.infoOf(s.Header)})
	}
	return entries, nil
}

func (v *liveView) Export(ctx context.Context, name string, fn func(store.Record) error) (store.Info, error) {
	i := slices.IndexFunc(v.secs, func(s Section) bool { return s.Name == name })
	if i < 0 {
		return store.Info{}, fmt.Errorf("store: export %s from %s: %w", name, v.where, store.ErrNotFound)
	}
	s := v.secs[i]
	for key, data := range s.Records {
		if err := ctx.Err(); err != nil {
			return store.Info{}, fmt.Errorf("store: export %s from %s: %w", name, v.where, err)
		}
		if err := fn(store.Record{Key: key, Data: data}); err != nil {
			return store.Info{}, err
		}
	}
	return v.b.infoOf(s.Header), nil
}
