//go:build unix

package snapfile

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock of f without waiting; held reports that
// another open file (another process) holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
