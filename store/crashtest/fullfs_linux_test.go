package crashtest

import (
	gocontext "context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/informerdb/informerdb/store"
)

// envFullFS makes the test binary the child of TestFullFileSystem: the
// backend's name and the directory to fill, separated by a newline.
const envFullFS = "INFORMERDB_CRASHTEST_FULLFS"

// Exit codes of the full file system child besides 0 (checked) and 3
// (failed).
const exitNoMount = 4 // this machine would not let it mount a file system

// fullFSSize is the size of the child's file system, and fullFSFiller the
// file it fills first and removes to make room again: more than badger's
// min_free (128 MiB), so that a store refused for space has room again.
const (
	fullFSSize   = 256 << 20
	fullFSFiller = 96 << 20
)

// TestFullFileSystem fills a real file system (a tmpfs of 256 MiB in a
// child process's own mount namespace, gone when the child exits) with new
// objects until a commit fails. The failure must be an error wrapping
// ENOSPC, not the end of the process: badger writes through memory-mapped
// files, and a write of badger's that finds the disk full faults (SIGBUS)
// and ends the process, which badger's min_free reserve prevents; bbolt
// writes with pwrite, which fails with ENOSPC. The failed commit leaves the
// store as it was, the store commits again once there is room, and a
// reopen finds every acknowledged commit and nothing else. Stores whose
// commits stay in memory (memory, memdb with a file) meet the full file
// system in their snapshot instead: Close fails with ENOSPC, no partial
// file stays, and a reopen finds the last complete snapshot. TestDiskFull
// checks the durable backends through a file size limit, which needs no
// privileges but which badger's reserve cannot see.
func TestFullFileSystem(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), envFullFS+"="+b.name+"\n"+t.TempDir())
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
			if os.Geteuid() != 0 {
				// An unprivileged user may mount a tmpfs in a user
				// namespace of its own, where the kernel allows those.
				cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
				cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
				cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var exit *exec.ExitError
			switch {
			case err != nil && !errors.As(err, &exit):
				// Starting a child in a namespace of its own is what
				// failed (EPERM, or EINVAL without user namespaces).
				t.Skipf("this machine cannot start a process in a mount namespace of its own (%v), so no file system of a known size can be made full", err)
			case exit != nil && exit.ExitCode() == exitNoMount:
				t.Skipf("this machine does not let the child mount a tmpfs: %s", strings.TrimSpace(stderr.String()))
			case err != nil:
				// A Go crash (SIGBUS in a mapped file: "unexpected fault
				// address") prints a stack per goroutine: the head
				// says what happened.
				head, _, _ := strings.Cut(stderr.String(), "\ngoroutine ")
				t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, lastLines(string(out), 3), head)
			}
			t.Logf("child:\n%s", out)
			if !strings.Contains(string(out), "\nok\n") {
				t.Errorf("the child did not finish its checks:\n%s", out)
			}
		})
	}
}

// fullFSChild runs the child of TestFullFileSystem: it mounts a tmpfs of
// fullFSSize over dir in its own mount namespace, fills it and checks the
// store there (the parent cannot see that file system). It prints what it
// committed, the failure, and "ok" when every check held; a failed check
// exits with 3.
func fullFSChild(env string) int {
	name, dir, _ := strings.Cut(env, "\n")
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == name })
	if i < 0 {
		return childFail("no backend %q", name)
	}
	// Mounts made here must not propagate to the parent's namespace.
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Fprintf(os.Stderr, "make / private: %v\n", err)
		return exitNoMount
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(fullFSSize)); err != nil {
		fmt.Fprintf(os.Stderr, "mount a tmpfs on %s: %v\n", dir, err)
		return exitNoMount
	}
	f := &filling{url: backends[i].url(filepath.Join(dir, "db")), dir: dir, keys: map[string]bool{}}
	if backends[i].durable {
		return f.commits()
	}
	return f.snapshots()
}

func childFail(format string, args ...interface{}) int {
	fmt.Fprintf(os.Stderr, "full file system child: "+format+"\n", args...)
	return 3
}

// filling is the state of a full file system child.
type filling struct {
	url, dir string
	s        store.Store
	keys     map[string]bool // the model: every key committed
}

// commit commits batch n: fullFSBatch new objects of 16 KiB, resume point n.
func (f *filling) commit(n int) error {
	ops := make([]store.Op, 0, fullFSBatch)
	added := make([]string, 0, fullFSBatch)
	for j := range fullFSBatch {
		key := fmt.Sprintf("full/b%04d-%02d", n, j)
		p := newPod(key, uint64(n), "fill")
		p.Annotations["payload"] = strings.Repeat("f", 16<<10)
		ops = append(ops, store.Op{Type: store.OpPut, Object: p})
		added = append(added, key)
	}
	if err := f.s.Commit(gocontext.Background(), store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(n)}); err != nil {
		return err
	}
	for _, k := range added {
		f.keys[k] = true
	}
	// Unbuffered: a crash must not take the lines before it.
	fmt.Printf("commit %d\n", n)
	return nil
}

// open opens the store.
func (f *filling) open() error {
	s, err := store.Open(gocontext.Background(), f.url, options())
	f.s = s
	return err
}

// check compares the store with the model and its resume point with rv.
func (f *filling) check(when string, rv int) error {
	if got := f.s.ResourceVersion(); got != strconv.Itoa(rv) {
		return fmt.Errorf("resume point %q %s; want %d", got, when, rv)
	}
	got := f.s.ListKeys()
	if len(got) != len(f.keys) {
		return fmt.Errorf("%d objects %s; want the %d committed", len(got), when, len(f.keys))
	}
	for _, k := range got {
		if !f.keys[k] {
			return fmt.Errorf("object %s %s was never acknowledged", k, when)
		}
	}
	return nil
}

// fill writes a file of size bytes to take up space, and returns its path.
func (f *filling) fill(size int64) (string, error) {
	path := filepath.Join(f.dir, "filler")
	return path, os.WriteFile(path, make([]byte, size), 0o600)
}

// commits fills the file system with commits of a store that writes each
// (bolt, badger) until one fails, then makes room and commits again.
func (f *filling) commits() int {
	filler, err := f.fill(fullFSFiller)
	if err != nil {
		return childFail("write the filler: %v", err)
	}
	if err := f.open(); err != nil {
		return childFail("open: %v", err)
	}
	n, full := 0, 0
	for full == 0 && n < 2*fullFSSize/(fullFSBatch<<14) {
		n++
		if err := f.commit(n); err != nil {
			full = n
			fmt.Printf("full %d: %v\n", n, err)
			if !errors.Is(err, syscall.ENOSPC) {
				return childFail("batch %d failed with %v; want an error wrapping ENOSPC", n, err)
			}
		}
	}
	if full == 0 {
		return childFail("%d batches of %d objects of 16 KiB fit a file system of %d bytes", n, fullFSBatch, fullFSSize)
	}
	if err := f.check("after the failed batch", full-1); err != nil {
		return childFail("%v", err)
	}
	// Room again: the failed batch, then one more.
	return f.roomAgain(filler, full, full+1)
}

// roomAgain removes the filler, commits the batches from first to last,
// closes the store and checks what a reopen finds: everything committed,
// at resume point last. It prints "ok" when that holds.
func (f *filling) roomAgain(filler string, first, last int) int {
	if err := os.Remove(filler); err != nil {
		return childFail("remove the filler: %v", err)
	}
	for n := first; n <= last; n++ {
		if err := f.commit(n); err != nil {
			return childFail("batch %d once there was room: %v", n, err)
		}
	}
	if err := f.s.Close(); err != nil {
		return childFail("close once there was room: %v", err)
	}
	if err := f.open(); err != nil {
		return childFail("reopen: %v", err)
	}
	defer f.s.Close()
	if err := f.check("after reopening", last); err != nil {
		return childFail("%v", err)
	}
	fmt.Println("ok")
	return 0
}

// snapshots checks a store whose commits stay in memory and whose
// snapshots (memory, memdb with a file) meet a full file system: the
// snapshot that does not fit fails Close with ENOSPC and leaves the last
// complete one, and no partial file, behind.
func (f *filling) snapshots() int {
	if err := f.open(); err != nil {
		return childFail("open: %v", err)
	}
	for n := 1; n <= 10; n++ {
		if err := f.commit(n); err != nil {
			return childFail("batch %d: %v", n, err)
		}
	}
	if err := f.s.Close(); err != nil {
		return childFail("close with room: %v", err)
	}
	saved := maps.Clone(f.keys)
	// Leave 4 MiB: less than the next snapshot needs.
	var st syscall.Statfs_t
	if err := syscall.Statfs(f.dir, &st); err != nil {
		return childFail("statfs: %v", err)
	}
	filler, err := f.fill(int64(st.Bavail)*st.Bsize - 4<<20)
	if err != nil {
		return childFail("write the filler: %v", err)
	}
	if err := f.open(); err != nil {
		return childFail("open on a full file system: %v", err)
	}
	for n := 11; n <= 20; n++ {
		if err := f.commit(n); err != nil {
			return childFail("batch %d (in memory) on a full file system: %v", n, err)
		}
	}
	err = f.s.Close()
	fmt.Printf("full: close: %v\n", err)
	if !errors.Is(err, syscall.ENOSPC) {
		return childFail("close on a full file system: %v; want an error wrapping ENOSPC", err)
	}
	parts, err := filepath.Glob(filepath.Join(f.dir, "db", "*.part-*"))
	if err != nil || len(parts) != 0 {
		return childFail("temporary files left by the failed snapshots: %q (%v)", parts, err)
	}
	// The last complete snapshot is what a reopen finds.
	f.keys = saved
	if err := f.open(); err != nil {
		return childFail("reopen after the failed snapshot: %v", err)
	}
	if err := f.check("after the failed snapshot", 10); err != nil {
		return childFail("%v", err)
	}
	// The store is open again, holding batches 1 to 10.
	return f.roomAgain(filler, 11, 12)
}

// fullFSBatch is how many objects of 16 KiB a batch of the full file
// system child adds.
const fullFSBatch = 64

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
