//go:build unix

package driver

import (
	"fmt"
	"io/fs"
	"syscall"

	"github.com/informerdb/informerdb/store"
)

// checkOwner checks that p belongs to u.
func checkOwner(p string, fi fs.FileInfo, u checkUser) error {
	if uid, ok := owner(fi); ok && uid != u.uid {
		return fmt.Errorf("store: check path %s: owned by uid %d, not by %s (uid %d): %w", p, uid, u.who, u.uid, store.ErrUnsafe)
	}
	return nil
}

// checkPrivate checks that p belongs to u and that neither its group nor
// others may write it.
func checkPrivate(p string, fi fs.FileInfo, u checkUser) error {
	if err := checkOwner(p, fi, u); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("store: check path %s: mode %v lets other users write it (chmod go-w %s): %w", p, perm, p, store.ErrUnsafe)
	}
	return nil
}

// checkDirectory checks the directory parent that holds path.
func checkDirectory(path, parent string, fi fs.FileInfo, u checkUser) error {
	if uid, ok := owner(fi); ok && uid != u.uid && uid != 0 {
		return fmt.Errorf("store: check path %s: its directory %s is owned by uid %d, neither %s (uid %d) nor root: %w", path, parent, uid, u.who, u.uid, store.ErrUnsafe)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("store: check path %s: its directory %s has mode %v: other users could replace the database (use a directory of its own, mode 0700): %w", path, parent, fi.Mode().Perm(), store.ErrUnsafe)
	}
	return nil
}

func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
