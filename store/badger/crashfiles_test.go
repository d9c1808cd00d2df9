package badger

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store"
)

// populated returns a copy of a closed database directory holding 2000
// Pods (enough for table files and a value log with smallConfig), and its
// contents. The database is written once per test and copied for each
// case: writing it with fsync is most of a case's time.
func populated(t *testing.T, tmpl *template) (dir string, want map[string]string) {
	t.Helper()
	tmpl.once.Do(func() {
		tmpl.dir = tmpl.t.TempDir()
		s, err := open(tmpl.t.Context(), tmpl.dir, podOptions(tmpl.t, "pods", 0), smallConfig())
		if err != nil {
			tmpl.err = err
			return
		}
		list := make([]interface{}, 2000)
		for i := range list {
			list[i] = newPod(i, "1", "x")
		}
		tmpl.err = s.Replace(list, "1")
		tmpl.want = contents(tmpl.t, s)
		if err := s.Close(); tmpl.err == nil {
			tmpl.err = err
		}
	})
	mustOK(t, "populate the template database", tmpl.err)
	dir = t.TempDir()
	ents, err := os.ReadDir(tmpl.dir)
	mustOK(t, "ReadDir", err)
	for _, e := range ents {
		writeFile(t, filepath.Join(dir, e.Name()), readFile(t, filepath.Join(tmpl.dir, e.Name())))
	}
	return dir, tmpl.want
}

// template is a database populated once per test (by the test's t, so
// it is removed with the test).
type template struct {
	t    *testing.T
	once sync.Once
	dir  string
	want map[string]string
	err  error
}

// listedIDs returns the table ids the MANIFEST of dir lists, failing the
// test if there are none (the case would not test anything).
func listedIDs(t *testing.T, dir string) []uint64 {
	t.Helper()
	ids, err := listedTables(dir)
	mustOK(t, "listedTables", err)
	if len(ids) == 0 {
		t.Fatalf("the MANIFEST of %s lists no tables", dir)
	}
	return ids
}

// nextID returns one more than the highest numbered file of dir with the
// extension ext, as badger numbers the next one it creates.
func nextID(t *testing.T, dir, ext string) uint64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	mustOK(t, "ReadDir", err)
	var max uint64
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ext); ok {
			id, err := strconv.ParseUint(n, 10, 64)
			mustOK(t, "parse file id", err)
			max = maxOf(max, id)
		}
	}
	return max + 1
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	mustOK(t, "WriteFile", os.WriteFile(path, data, 0o600))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	mustOK(t, "ReadFile", err)
	return data
}

// TestCrashLeftovers puts into a closed database the files a kill -9 can
// leave behind, as the crash test found them: each must open (the first
// time, and again), with every object, and the leftover gone.
func TestCrashLeftovers(t *testing.T) {
	tmpl := &template{t: t}
	tests := []struct {
		name string
		// leave puts a leftover into dir and returns its path.
		leave func(t *testing.T, dir string) string
	}{
		{"empty mem", func(t *testing.T, dir string) string {
			// Killed between creating the next memtable log and sizing it.
			p := filepath.Join(dir, fmtID(nextID(t, dir, ".mem"), 5)+".mem")
			writeFile(t, p, nil)
			return p
		}},
		{"empty vlog", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, fmtID(nextID(t, dir, ".vlog"), 6)+".vlog")
			writeFile(t, p, nil)
			return p
		}},
		{"empty DISCARD", func(t *testing.T, dir string) string {
			// Killed as badger created its discard statistics (first open).
			p := filepath.Join(dir, "DISCARD")
			mustOK(t, "Truncate", os.Truncate(p, 0))
			return ""
		}},
		{"empty mem and vlog", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, fmtID(nextID(t, dir, ".mem"), 5)+".mem"), nil)
			p := filepath.Join(dir, fmtID(nextID(t, dir, ".vlog"), 6)+".vlog")
			writeFile(t, p, nil)
			return p
		}},
		{"empty unlisted table", func(t *testing.T, dir string) string {
			// Killed as a flush or compaction created its table.
			p := table.NewFilename(nextID(t, dir, ".sst"), dir)
			writeFile(t, p, nil)
			return p
		}},
		{"partial unlisted table", func(t *testing.T, dir string) string {
			// Killed while a flush or compaction wrote its table.
			src := readFile(t, table.NewFilename(listedIDs(t, dir)[0], dir))
			p := table.NewFilename(nextID(t, dir, ".sst"), dir)
			writeFile(t, p, src[:len(src)/2])
			return p
		}},
		{"garbage unlisted table", func(t *testing.T, dir string) string {
			// Cut short where the file system had allocated but not
			// written (a power loss while nosync): whatever is there.
			p := table.NewFilename(nextID(t, dir, ".sst"), dir)
			writeFile(t, p, []byte(strings.Repeat("\xde\xad\xbe\xef", 4096)))
			return p
		}},
		{"complete unlisted table", func(t *testing.T, dir string) string {
			// Killed after a flush wrote its table, before the MANIFEST
			// change; or after a compaction's change, before it removed
			// its inputs.
			src := readFile(t, table.NewFilename(listedIDs(t, dir)[0], dir))
			p := table.NewFilename(nextID(t, dir, ".sst"), dir)
			writeFile(t, p, src)
			return p
		}},
		{"torn MANIFEST tail", func(t *testing.T, dir string) string {
			// Killed in the middle of appending a MANIFEST change: a
			// length and checksum, and part of the change.
			p := filepath.Join(dir, badger.ManifestFilename)
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			mustOK(t, "OpenFile", err)
			_, err = f.Write([]byte{0, 0, 0, 16, 1, 2, 3, 4, 10, 5})
			mustOK(t, "Write", err)
			mustOK(t, "Close", f.Close())
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, want := populated(t, tmpl)
			listed := listedIDs(t, dir)
			leftover := tc.leave(t, dir)
			for i := range 2 {
				s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
				mustOK(t, "Open "+strconv.Itoa(i+1), err)
				if diff := cmp.Diff(want, contents(t, s)); diff != "" {
					t.Errorf("Open %d: contents (-want +got):\n%s", i+1, diff)
				}
				if got := s.ResourceVersion(); got != "1" {
					t.Errorf("Open %d: ResourceVersion = %q, want 1", i+1, got)
				}
				checkIndexes(t, s)
				mustOK(t, "Close", s.Close())
			}
			if leftover != "" {
				if fi, err := os.Stat(leftover); err == nil && fi.Size() == 0 {
					t.Errorf("the empty leftover %s is still there", leftover)
				} else if err == nil && strings.HasSuffix(leftover, ".sst") {
					// Badger reuses table ids it has not listed yet: a
					// table by that name must now be listed and sound.
					if id, _ := table.ParseFileID(leftover); !contains(listedIDs(t, dir), id) {
						t.Errorf("the unlisted table %s is still there", leftover)
					}
				}
			}
			if got := listedIDs(t, dir); len(got) == 0 {
				t.Errorf("no tables listed after reopening; before: %v", listed)
			}
		})
	}
}

func contains(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func fmtID(id uint64, width int) string {
	s := strconv.FormatUint(id, 10)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

// TestDamagedFiles damages a closed database in ways a crash cannot: each
// Open must fail with ErrCorrupt naming the directory and the file, leave
// the files as they were, and start no goroutine (goleak in TestMain).
func TestDamagedFiles(t *testing.T) {
	tmpl := &template{t: t}
	manifest := func(dir string) string { return filepath.Join(dir, badger.ManifestFilename) }
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		naming string // what the error names, besides the directory
	}{
		{"damaged listed table", func(t *testing.T, dir string) {
			p := table.NewFilename(listedIDs(t, dir)[0], dir)
			fi, err := os.Stat(p)
			mustOK(t, "Stat", err)
			overwriteRange(t, p, fi.Size()/3, 64)
		}, ".sst, listed in the MANIFEST"},
		{"truncated listed table", func(t *testing.T, dir string) {
			p := table.NewFilename(listedIDs(t, dir)[0], dir)
			fi, err := os.Stat(p)
			mustOK(t, "Stat", err)
			mustOK(t, "Truncate", os.Truncate(p, fi.Size()/2))
		}, ".sst, listed in the MANIFEST"},
		{"empty listed table", func(t *testing.T, dir string) {
			mustOK(t, "Truncate", os.Truncate(table.NewFilename(listedIDs(t, dir)[0], dir), 0))
		}, ".sst, listed in the MANIFEST"},
		{"missing listed table", func(t *testing.T, dir string) {
			mustOK(t, "Remove", os.Remove(table.NewFilename(listedIDs(t, dir)[0], dir)))
		}, ".sst, listed in the MANIFEST"},
		{"garbage MANIFEST", func(t *testing.T, dir string) {
			writeFile(t, manifest(dir), []byte(strings.Repeat("garbage!", 64)))
		}, "MANIFEST"},
		{"MANIFEST truncated into its header", func(t *testing.T, dir string) {
			mustOK(t, "Truncate", os.Truncate(manifest(dir), 5))
		}, "MANIFEST"},
		{"empty MANIFEST", func(t *testing.T, dir string) {
			mustOK(t, "Truncate", os.Truncate(manifest(dir), 0))
		}, "MANIFEST"},
		{"MANIFEST change with a bad checksum", func(t *testing.T, dir string) {
			// The first change starts after the 8-byte header with its
			// length and checksum; damage its body.
			overwriteRange(t, manifest(dir), 8+8, 2)
		}, "MANIFEST"},
		{"missing MANIFEST", func(t *testing.T, dir string) {
			mustOK(t, "Remove", os.Remove(manifest(dir)))
		}, "MANIFEST"},
		{"vlog shorter than its header", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, fmtID(nextID(t, dir, ".vlog"), 6)+".vlog"), []byte{0, 0, 0})
		}, ".vlog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := populated(t, tmpl)
			tc.damage(t, dir)
			before := dirListing(t, dir)
			for i := range 2 {
				s, err := open(t.Context(), dir, podOptions(t, "pods", 0), smallConfig())
				if err == nil {
					s.Close()
					t.Fatalf("Open %d of a damaged directory succeeded", i+1)
				}
				if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "delete the directory") || !strings.Contains(err.Error(), tc.naming) {
					t.Errorf("Open %d = %v, want ErrCorrupt naming %s, %q and how to start over", i+1, err, dir, tc.naming)
				}
			}
			if diff := cmp.Diff(before, dirListing(t, dir)); diff != "" {
				t.Errorf("a failed Open changed the files (-before +after):\n%s", diff)
			}
		})
	}
}

// overwriteRange writes n bytes of a pattern at offset.
func overwriteRange(t *testing.T, path string, offset, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	mustOK(t, "OpenFile", err)
	_, err = f.WriteAt([]byte(strings.Repeat("\xde\xad\xbe\xef", int(n/4+1)))[:n], offset)
	mustOK(t, "WriteAt", err)
	mustOK(t, "Close", f.Close())
}

// dirListing maps the files of dir to their sizes.
func dirListing(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	mustOK(t, "ReadDir", err)
	out := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		mustOK(t, "Info", err)
		out[e.Name()] = fi.Size()
	}
	return out
}

// TestCheckLeavesAnotherProcessAlone makes the files another process is
// in the middle of writing (an empty value log, a partial table not listed
// yet) appear in a directory it holds: Open must wait for the lock and fail
// with ErrLocked, neither calling them damage nor removing them.
func TestCheckLeavesAnotherProcessAlone(t *testing.T) {
	dir := t.TempDir()
	holdDir(t, dir)
	writeFile(t, filepath.Join(dir, fmtID(nextID(t, dir, ".vlog"), 6)+".vlog"), nil)
	writeFile(t, table.NewFilename(nextID(t, dir, ".sst"), dir), []byte(strings.Repeat("\xde\xad\xbe\xef", 1024)))
	before := dirListing(t, dir)

	o := podOptions(t, "pods", 0)
	o.LockTimeout = 300 * time.Millisecond
	s, err := Open(t.Context(), dir, o)
	if err == nil {
		s.Close()
		t.Fatalf("Open of a directory held by another process succeeded")
	}
	if !errors.Is(err, store.ErrLocked) || errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Open = %v, want ErrLocked", err)
	}
	if diff := cmp.Diff(before, dirListing(t, dir)); diff != "" {
		t.Errorf("Open changed the files of a directory another process holds (-before +after):\n%s", diff)
	}
}
