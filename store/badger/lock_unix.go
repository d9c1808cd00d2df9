//go:build unix

package badger

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes the lock badger takes on a directory (flock of the
// directory itself, exclusive, not waiting), so that checkFiles never looks
// at files another process is writing. It fails with errDirLocked when the
// lock is held, which isLockError recognizes.
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
