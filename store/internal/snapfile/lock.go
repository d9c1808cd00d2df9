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
// (each would drop the other's stores from the file): an exclusive flock
// of path + LockSuffix, created if needed and left in place (removing it
// would race with another process taking it). Lock waits up to timeout for
// another process to release it, then fails with store.ErrLocked, or with
// ctx's error once ctx ends. On platforms without flock it does not lock.
// The stores of one file in a process share one lock, released by unlock.
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
			// Callers add how to wait longer (openLockHint): they differ.
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

// removeParts deletes, best effort, the temporary files (path+".part-*")
// of processes killed while writing a snapshot: only the lock's holder
// writes the file, so none is being written, and a controller crash-looping
// on a large cache would otherwise fill the disk with them.
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
