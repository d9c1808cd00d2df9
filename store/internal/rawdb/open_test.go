package rawdb

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

var errBusy = errors.New("busy")

func isBusy(err error) bool { return errors.Is(err, errBusy) }

func TestWaitLockRetriesUntilFree(t *testing.T) {
	tries := 0
	err := WaitLock(t.Context(), time.Minute, time.Millisecond, 2*time.Millisecond, "the lock", isBusy, func() error {
		if tries++; tries < 4 {
			return errBusy
		}
		return nil
	})
	if err != nil || tries != 4 {
		t.Fatalf("WaitLock = %v after %d tries, want nil after 4", err, tries)
	}
}

func TestWaitLockReturnsOtherErrors(t *testing.T) {
	other := errors.New("other")
	tries := 0
	err := WaitLock(t.Context(), time.Minute, time.Millisecond, time.Millisecond, "the lock", isBusy, func() error {
		tries++
		return other
	})
	if !errors.Is(err, other) || tries != 1 {
		t.Fatalf("WaitLock = %v after %d tries, want other after 1", err, tries)
	}
}

func TestWaitLockTimeoutReturnsLastError(t *testing.T) {
	tries := 0
	err := WaitLock(t.Context(), 20*time.Millisecond, time.Millisecond, 5*time.Millisecond, "the lock", isBusy, func() error {
		tries++
		return errBusy
	})
	if !errors.Is(err, errBusy) || tries < 2 {
		t.Fatalf("WaitLock = %v after %d tries, want busy after 2 or more", err, tries)
	}
}

func TestWaitLockStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	err := WaitLock(ctx, time.Hour, time.Hour, time.Hour, "the lock", isBusy, func() error {
		cancel()
		return errBusy
	})
	if !errors.Is(err, context.Canceled) || err.Error() != "waiting for the lock: context canceled" {
		t.Fatalf("WaitLock = %v, want the wait for the lock canceled", err)
	}
}

func TestURLPath(t *testing.T) {
	var got int64
	more := func(p *driver.Params) { got = p.Bytes("extra", 1) }
	u, _ := url.Parse("x:///abs/db?extra=2Ki&lock_timeout=3s")
	path, o, err := RawOptions("read", u, "x:///abs/path", more)
	if err != nil || path != "/abs/db" || o.LockTimeout != 3*time.Second || got != 2048 {
		t.Fatalf("RawOptions = %q, %v, %v (extra %d)", path, o.LockTimeout, err, got)
	}
	for _, bad := range []string{"x://host/abs/db", "x:///abs/db?unknown=1", "x:///abs/db?extra=lots"} {
		u, _ := url.Parse(bad)
		if _, _, err := RawOptions("read", u, "x:///abs/path", more); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("RawOptions(%s) = %v, want ErrInvalid", bad, err)
		}
	}
}
