//go:build unix

package badger

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes badger's lock of a directory (flock, exclusive), so that
// checkFiles never reads files another process writes; a held lock is
// errDirLocked.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock directory %q: %w: %w", dir, errDirLocked, err)
	}
	// Closing the descriptor releases the lock.
	return func() { f.Close() }, nil
}
