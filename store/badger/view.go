package badger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// FrozenView implements store.RawFrozenViewer. Badger changes the files of
// a directory it opens, even read-only: it truncates logs and deletes the
// tables its MANIFEST does not list (every table, if it is damaged). So the
// view is a private copy in os.TempDir, taken under badger's directory lock;
// release deletes it. A database open in this process is its own view.
func (rawDriver) FrozenView(ctx context.Context, u *url.URL) (view *url.URL, release func() error, err error) {
	dir, o, _, err := rawDir("view", u)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) error {
		return fmt.Errorf("store: view badger://%s: %w", dir, err)
	}
	if err := checkExists(dir); err != nil {
		return nil, nil, fail(err)
	}
	if err := driver.CheckPath(dir, true); err != nil {
		return nil, nil, fail(err)
	}
	if _, err := checkNotForeign(dir); err != nil {
		return nil, nil, fail(err)
	}
	if _, _, open := registry.Lookup(dir); open {
		return u, func() error { return nil }, nil
	}
	var unlock func()
	err = retryLocked(ctx, o.LockTimeout, func() (err error) {
		unlock, err = lockDir(dir)
		return err
	})
	if err != nil {
		return nil, nil, fail(err)
	}
	defer unlock()
	tmp, err := os.MkdirTemp("", "informerdb-view-*")
	if err != nil {
		return nil, nil, fail(err)
	}
	release = func() error { return os.RemoveAll(tmp) }
	copyDir := filepath.Join(tmp, "db")
	if err := copyDatabase(ctx, dir, copyDir); err != nil {
		return nil, nil, fail(errors.Join(fmt.Errorf("copy to %s: %w", copyDir, err), release()))
	}
	v := *u
	v.Path = copyDir
	return &v, release, nil
}

// copyDatabase copies the files of the database in dir but its LOCK into a
// new directory dst.
func copyDatabase(ctx context.Context, dir, dst string) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.Type().IsRegular() || e.Name() == "LOCK" || !isBadgerFile(e.Name()) {
			continue
		}
		if err := copyFile(filepath.Join(dir, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

var _ store.RawFrozenViewer = rawDriver{}
