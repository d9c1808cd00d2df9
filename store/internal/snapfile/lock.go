package snapfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// LockSuffix names the lock file beside a snapshot file: path + LockSuffix.
const LockSuffix = ".lock"

// lockPoll is how often Lock retries a lock held by another process.
const lockPoll = 20 * time.Millisecond

// openLockHint is what a backend's Open adds to a Lock error: how to wait
// longer for the file.
const openLockHint = driver.LockTimeoutHint

// Lock takes the lock of the snapshot file at path for this process, so
// that two processes never write snapshots of one file over each other's
// (each would drop the other's stores from the file). The lock is an
// exclusive flock of a lock file beside the snapshot (path + LockSuffix,
// created if needed and left in place: removing it would race with another
// process taking it). Lock waits up to timeout for another process to
// release it, then fails with store.ErrLocked; it stops waiting when ctx
// ends, with an error wrapping ctx's. On platforms without flock it does
// not lock (see lock_other.go).
//
// Within a process, the stores of one file share it (and take the lock
// once); the lock is released by the unlock function returned.
func Lock(ctx context.Context, path string, timeout time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("snapfile: lock %s: create directory: %w", path, err)
	}
	f, err := os.OpenFile(path+LockSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapfile: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("snapfile: lock %s: %w", path+LockSuffix, err)
		}
		if !held {
			removeParts(path)
			// Closing the descriptor releases the lock.
			return func() { f.Close() }, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			// No advice on how to wait longer: callers differ (Open
			// takes lock_timeout=, the raw driver takes no parameter),
			// so each adds its own (openLockHint).
			return nil, fmt.Errorf("snapfile: %s: another process holds %s (waited %v): %w", path, path+LockSuffix, timeout, store.ErrLocked)
		}
		wait := time.NewTimer(min(lockPoll, left))
		select {
		case <-ctx.Done():
			wait.Stop()
			f.Close()
			return nil, fmt.Errorf("snapfile: %s: stopped waiting for another process to release %s: %w", path, path+LockSuffix, ctx.Err())
		case <-wait.C:
		}
	}
}

// removeParts deletes the temporary files (Write's path+".part-*") that a
// process killed while writing a snapshot left: only the lock's holder
// writes the file, so none of them is being written, and a controller
// crash-looping on a large cache would otherwise fill the disk with them.
// Best effort: a file that cannot be removed is left for the next time.
func removeParts(path string) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+".part-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
