package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/informerdb/informerdb/store"
)

// CheckPath refuses a database path that other users could tamper with; dir
// says whether the database is a directory (badger) or a file (bolt, a
// snapshot).
//
// The cache holds whatever the API server sent, Secrets included, and a
// controller acts on what it reads back: a database another user can write
// lets that user feed the controller forged objects. So, where they exist:
//
//   - path must not be a symbolic link, which can point the database at a
//     file chosen by whoever wrote the link.
//   - path must be a directory if dir is true, a regular file otherwise.
//   - path (and, for a directory, every entry in it) must belong to the
//     current user and must not be writable by group or others. The modes
//     of the entries of a directory that others cannot enter are not
//     checked: badger creates its files with 0666 less the umask.
//   - the directory holding path must belong to the current user or root,
//     and must not be writable by group or others unless its sticky bit is
//     set (as /tmp): otherwise anyone could replace the database.
//
// A path that does not exist yet passes when its directory passes or does
// not exist either. Only the database and its own directory are checked,
// not the directories above.
//
// On systems without Unix permissions (Windows) only the symbolic link rule
// applies. The error wraps store.ErrUnsafe (or store.ErrInvalid for an empty path or a
// file where a directory is expected, and the reverse).
func CheckPath(path string, dir bool) error {
	return checkPath(path, dir, checkUser{uid: geteuid(), who: "the current user"})
}

// CheckPathFor is CheckPath with the user uid in place of the current user,
// for a tool run by root that rewrites a database on behalf of its owner
// (compact). It does not check that the current user may act for uid.
func CheckPathFor(path string, dir bool, uid int) error {
	return checkPath(path, dir, checkUser{uid: uid, who: "the user it is checked for"})
}

// geteuid is the current user; tests replace it to pose as another user.
var geteuid = os.Geteuid

// checkUser is the user a path must be private to, and how errors name it.
type checkUser struct {
	uid int
	who string
}

func checkPath(path string, dir bool, u checkUser) error {
	if path == "" {
		return fmt.Errorf("store: check path: empty path: %w", store.ErrInvalid)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkParent(path, u)
	case err != nil:
		return fmt.Errorf("store: check path %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return fmt.Errorf("store: check path %s: is a symbolic link to %q; give the real path of the database: %w", path, target, store.ErrUnsafe)
	}
	switch {
	case dir && !fi.IsDir():
		return fmt.Errorf("store: check path %s: not a directory: %s: %w", path, kind(fi.Mode()), store.ErrInvalid)
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("store: check path %s: not a regular file: %s: %w", path, kind(fi.Mode()), store.ErrInvalid)
	}
	if err := checkPrivate(path, fi, u); err != nil {
		return err
	}
	if dir {
		// Nobody else can open a file in a directory they cannot enter.
		enterable := fi.Mode().Perm()&0o011 != 0
		ents, err := os.ReadDir(path)
		if err != nil {
			return fmt.Errorf("store: check path %s: %w", path, err)
		}
		for _, e := range ents {
			p := filepath.Join(path, e.Name())
			efi, err := os.Lstat(p)
			if err != nil {
				return fmt.Errorf("store: check path %s: %w", p, err)
			}
			if efi.Mode()&fs.ModeSymlink != 0 {
				return fmt.Errorf("store: check path %s: is a symbolic link inside the database directory: %w", p, store.ErrUnsafe)
			}
			if err := checkOwner(p, efi, u); err != nil {
				return err
			}
			if enterable {
				if err := checkPrivate(p, efi, u); err != nil {
					return err
				}
			}
		}
	}
	return checkParent(path, u)
}

// kind says what a file of mode m is, for errors.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "is a regular file"
	case m.IsDir():
		return "is a directory"
	case m&fs.ModeDevice != 0:
		return "is a device"
	case m&fs.ModeNamedPipe != 0:
		return "is a named pipe"
	case m&fs.ModeSocket != 0:
		return "is a socket"
	}
	return fmt.Sprintf("is of type %v", m.Type())
}

// checkParent checks the directory that holds path, if it exists.
func checkParent(path string, u checkUser) error {
	parent := filepath.Dir(path)
	fi, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("store: check path %s: directory: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("store: check path %s: %s is not a directory: %w", path, parent, store.ErrInvalid)
	}
	return checkDirectory(path, parent, fi, u)
}
