//go:build unix

package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/store"
)

// mkfile creates a file with exactly mode perm (whatever the umask).
func mkfile(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPath(t *testing.T) {
	tests := []struct {
		name string
		// setup builds the case under a fresh private directory and returns
		// the path to check.
		setup func(t *testing.T, root string) string
		dir   bool
		// want is the sentinel the error must wrap (nil: no error), and
		// wantText a piece of its message.
		want     error
		wantText string
	}{
		{name: "missing file in private directory", setup: func(t *testing.T, root string) string {
			return filepath.Join(root, "db")
		}},
		{name: "missing file in missing directory", setup: func(t *testing.T, root string) string {
			return filepath.Join(root, "a", "b", "db")
		}},
		{name: "file 0600", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkfile(t, p, 0o600)
			return p
		}},
		{name: "file 0644 readable by others is not writable", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkfile(t, p, 0o644)
			return p
		}},
		{name: "file writable by group", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkfile(t, p, 0o620)
			return p
		}, want: store.ErrUnsafe, wantText: "lets other users write it"},
		{name: "file writable by others", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkfile(t, p, 0o602)
			return p
		}, want: store.ErrUnsafe, wantText: "-rw-----w-"},
		{name: "symbolic link to a private file", setup: func(t *testing.T, root string) string {
			real := filepath.Join(root, "real")
			mkfile(t, real, 0o600)
			p := filepath.Join(root, "db")
			if err := os.Symlink(real, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, want: store.ErrUnsafe, wantText: "symbolic link"},
		{name: "dangling symbolic link", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			if err := os.Symlink(filepath.Join(root, "nowhere"), p); err != nil {
				t.Fatal(err)
			}
			return p
		}, want: store.ErrUnsafe, wantText: "symbolic link"},
		{name: "directory where a file is expected", setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkdir(t, p, 0o700)
			return p
		}, want: store.ErrInvalid, wantText: "not a regular file"},
		{name: "file where a directory is expected", dir: true, setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkfile(t, p, 0o600)
			return p
		}, want: store.ErrInvalid, wantText: "not a directory"},
		{name: "private directory with private files", dir: true, setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkdir(t, p, 0o700)
			mkfile(t, filepath.Join(p, "MANIFEST"), 0o600)
			mkfile(t, filepath.Join(p, "000001.vlog"), 0o640)
			return p
		}},
		{name: "directory writable by group", dir: true, setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkdir(t, p, 0o770)
			return p
		}, want: store.ErrUnsafe, wantText: "lets other users write it"},
		{name: "enterable directory holding a file writable by others", dir: true, setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkdir(t, p, 0o711)
			mkfile(t, filepath.Join(p, "000001.sst"), 0o666)
			return p
		}, want: store.ErrUnsafe, wantText: "000001.sst: mode -rw-rw-rw-"},
		{name: "private directory holding a file writable by others", dir: true, setup: func(t *testing.T, root string) string {
			// Nobody else can enter the directory to reach the file.
			p := filepath.Join(root, "db")
			mkdir(t, p, 0o700)
			mkfile(t, filepath.Join(p, "000001.sst"), 0o666)
			return p
		}},
		{name: "directory holding a symbolic link", dir: true, setup: func(t *testing.T, root string) string {
			p := filepath.Join(root, "db")
			mkdir(t, p, 0o700)
			if err := os.Symlink("/etc/passwd", filepath.Join(p, "MANIFEST")); err != nil {
				t.Fatal(err)
			}
			return p
		}, want: store.ErrUnsafe, wantText: "inside the database directory"},
		{name: "parent writable by everyone", setup: func(t *testing.T, root string) string {
			d := filepath.Join(root, "shared")
			mkdir(t, d, 0o777)
			p := filepath.Join(d, "db")
			mkfile(t, p, 0o600)
			return p
		}, want: store.ErrUnsafe, wantText: "could replace the database"},
		{name: "missing file in a parent writable by everyone", setup: func(t *testing.T, root string) string {
			d := filepath.Join(root, "shared")
			mkdir(t, d, 0o777)
			return filepath.Join(d, "db")
		}, want: store.ErrUnsafe, wantText: "could replace the database"},
		{name: "parent writable by everyone with the sticky bit", setup: func(t *testing.T, root string) string {
			d := filepath.Join(root, "tmp")
			mkdir(t, d, 0o777|os.ModeSticky)
			p := filepath.Join(d, "db")
			mkfile(t, p, 0o600)
			return p
		}},
		{name: "empty path", setup: func(t *testing.T, root string) string { return "" }, want: store.ErrInvalid, wantText: "empty path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.setup(t, t.TempDir())
			before := snapshotTree(t, filepath.Dir(p))
			err := CheckPath(p, tt.dir)
			checkErr(t, err, tt.want, tt.wantText)
			if after := snapshotTree(t, filepath.Dir(p)); after != before {
				t.Errorf("CheckPath changed the tree:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestCheckPathOwner poses as another user, so it runs without root.
func TestCheckPathOwner(t *testing.T) {
	real := geteuid()
	t.Cleanup(func() { geteuid = os.Geteuid })

	t.Run("file of another user", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "db")
		mkfile(t, p, 0o600)
		geteuid = func() int { return real + 1 }
		defer func() { geteuid = os.Geteuid }()
		checkErr(t, CheckPath(p, false), store.ErrUnsafe, "not by the current user")
	})
	t.Run("directory entry of another user", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "db")
		mkdir(t, d, 0o700)
		mkfile(t, filepath.Join(d, "MANIFEST"), 0o600)
		if real == 0 {
			// Only the entry changes hands; the directory stays root's.
			if err := os.Chown(filepath.Join(d, "MANIFEST"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			checkErr(t, CheckPath(d, true), store.ErrUnsafe, "MANIFEST: owned by uid 65534")
			return
		}
		// Without root, pose as another user: the directory itself is
		// then foreign first.
		geteuid = func() int { return real + 1 }
		defer func() { geteuid = os.Geteuid }()
		checkErr(t, CheckPath(d, true), store.ErrUnsafe, "not by the current user")
	})
	t.Run("directory of another user", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "theirs")
		mkdir(t, d, 0o755)
		p := filepath.Join(d, "db")
		if real == 0 {
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		} else {
			geteuid = func() int { return real + 1 }
			defer func() { geteuid = os.Geteuid }()
		}
		checkErr(t, CheckPath(p, false), store.ErrUnsafe, "neither the current user")
	})
	t.Run("CheckPathFor the file's owner", func(t *testing.T) {
		// What compact run by root checks: the path as its owner's.
		p := filepath.Join(t.TempDir(), "db")
		mkfile(t, p, 0o600)
		geteuid = func() int { return real + 1 }
		defer func() { geteuid = os.Geteuid }()
		checkErr(t, CheckPathFor(p, false, real), nil, "")
		checkErr(t, CheckPathFor(p, false, real+2), store.ErrUnsafe, "not by the user it is checked for")
	})
}

func checkErr(t *testing.T, err, want error, wantText string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("CheckPath: %v, want no error", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("CheckPath: %v, want an error wrapping %v", err, want)
	}
	if !strings.Contains(err.Error(), wantText) || !strings.HasPrefix(err.Error(), "store: check path") {
		t.Errorf("CheckPath: %q, want it to start with %q and contain %q", err, "store: check path", wantText)
	}
}

// snapshotTree describes every entry under dir (name, mode, size).
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	// A missing tree is a state like any other (CheckPath must not create it).
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return dir + " missing"
	}
	// An entry the walk cannot read would be left out of the description,
	// hiding a change to it: fail instead.
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + ";")
		return nil
	})
	if err != nil {
		t.Fatalf("describe the tree under %s: %v", dir, err)
	}
	return b.String()
}
