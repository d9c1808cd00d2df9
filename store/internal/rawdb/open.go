package rawdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// URLPath reads the common parameters of u into o, then those more reads
// (nil: none), and returns u's absolute path. want is the form of the
// backend's URLs, op the operation, for errors.
func URLPath(op string, u *url.URL, want string, o *store.Options, more func(p *driver.Params)) (string, error) {
	p := driver.NewParams(u)
	p.Common(o)
	if more != nil {
		more(p)
	}
	if err := p.Err(); err != nil {
		return "", err
	}
	path, err := driver.AbsPath(u, want)
	if err != nil {
		return "", fmt.Errorf("store: %s %s: %w", op, u.Redacted(), err)
	}
	return path, nil
}

// RawOptions is URLPath for a raw access: o starts from the defaults.
func RawOptions(op string, u *url.URL, want string, more func(p *driver.Params)) (string, store.Options, error) {
	o, err := (&store.Options{}).WithDefaults()
	if err != nil {
		return "", o, err
	}
	path, err := URLPath(op, u, want, &o, more)
	return path, o, err
}

// WaitLock calls try until it fails with an error busy does not take for
// another process's lock, or timeout has passed (it then returns try's last
// error), or ctx ends (an error naming held, what it waits for). It waits
// delay after the first busy try, then twice as long each time up to
// maxDelay, never past the timeout: the lock is polled, as a blocking lock
// could not stop with ctx.
func WaitLock(ctx context.Context, timeout, delay, maxDelay time.Duration, held string, busy func(error) bool, try func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := try()
		wait := time.Until(deadline)
		if !busy(err) || wait <= 0 {
			return err
		}
		t := time.NewTimer(min(delay, wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for %s: %w", held, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, maxDelay)
	}
}

// LiveView implements store.RawLiveViewer for a backend: hold takes a
// reference on the database at u's path, if a store of this process has it
// open (else ok is false; what names the database in that error), and view
// runs fn in one read transaction of it.
func LiveView(u *url.URL, want, what string, hold func(path string) (release func() error, ok bool),
	view func(fn func(v *View) error) error, fn func(store.RawView) error) (err error) {
	path, err := driver.AbsPath(u, want)
	if err != nil {
		return fmt.Errorf("store: view %s: %w", u.Redacted(), err)
	}
	release, ok := hold(path)
	if !ok {
		return fmt.Errorf("store: view %s: no store of this process has the %s open: %w", u.Redacted(), what, store.ErrClosed)
	}
	defer func() { err = errors.Join(err, release()) }()
	return view(func(v *View) error { return fn(v) })
}
