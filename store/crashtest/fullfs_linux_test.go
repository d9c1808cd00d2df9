package crashtest

import (
	gocontext "context"
	"errors"
	"fmt"
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
// reopen finds every acknowledged commit and nothing else. TestDiskFull
// checks the same through a file size limit, which needs no privileges
// but which badger's reserve cannot see.
func TestFullFileSystem(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		if !b.durable {
			continue
		}
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
// store there (the parent cannot see that file system). It prints each
// batch committed, the failure, and "ok" when every check held; a failed
// check exits with 3.
func fullFSChild(env string) int {
	fail := func(format string, args ...interface{}) int {
		fmt.Fprintf(os.Stderr, "full file system child: "+format+"\n", args...)
		return 3
	}
	name, dir, _ := strings.Cut(env, "\n")
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == name })
	if i < 0 {
		return fail("no backend %q", name)
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
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, fullFSFiller), 0o600); err != nil {
		return fail("write the filler: %v", err)
	}
	url := backends[i].url(filepath.Join(dir, "db"))
	ctx := gocontext.Background()
	out := os.Stdout // unbuffered: a crash must not take the lines before it
	s, err := store.Open(ctx, url, options())
	if err != nil {
		return fail("open: %v", err)
	}
	keys := map[string]bool{} // the model: every key committed
	commit := func(n int) error {
		ops := make([]store.Op, 0, fullFSBatch)
		added := make([]string, 0, fullFSBatch)
		for j := range fullFSBatch {
			key := fmt.Sprintf("full/b%04d-%02d", n, j)
			p := newPod(key, uint64(n), "fill")
			p.Annotations["payload"] = strings.Repeat("f", 16<<10)
			ops = append(ops, store.Op{Type: store.OpPut, Object: p})
			added = append(added, key)
		}
		if err := s.Commit(ctx, store.Batch{Ops: ops, ResourceVersion: strconv.Itoa(n)}); err != nil {
			return err
		}
		for _, k := range added {
			keys[k] = true
		}
		fmt.Fprintf(out, "commit %d\n", n)
		return nil
	}
	n, full := 0, 0
	for full == 0 && n < 2*fullFSSize/(fullFSBatch<<14) {
		n++
		if err := commit(n); err != nil {
			full = n
			fmt.Fprintf(out, "full %d: %v\n", n, err)
			if !errors.Is(err, syscall.ENOSPC) {
				return fail("batch %d failed with %v; want an error wrapping ENOSPC", n, err)
			}
		}
	}
	if full == 0 {
		return fail("%d batches of %d objects of 16 KiB fit a file system of %d bytes", n, fullFSBatch, fullFSSize)
	}
	if rv := s.ResourceVersion(); rv != strconv.Itoa(full-1) {
		return fail("resume point %q after the failed batch %d; want %d", rv, full, full-1)
	}
	if got := len(s.ListKeys()); got != len(keys) {
		return fail("%d objects after the failed batch; want the %d committed", got, len(keys))
	}
	// Room again: the failed batch, then one more.
	if err := os.Remove(filler); err != nil {
		return fail("remove the filler: %v", err)
	}
	for _, b := range []int{full, full + 1} {
		if err := commit(b); err != nil {
			return fail("batch %d once there was room: %v", b, err)
		}
	}
	if err := s.Close(); err != nil {
		return fail("close: %v", err)
	}
	s, err = store.Open(ctx, url, options())
	if err != nil {
		return fail("reopen: %v", err)
	}
	defer s.Close()
	if rv := s.ResourceVersion(); rv != strconv.Itoa(full+1) {
		return fail("resume point %q after reopening; want %d", rv, full+1)
	}
	got := s.ListKeys()
	if len(got) != len(keys) {
		return fail("%d objects after reopening; want the %d committed", len(got), len(keys))
	}
	for _, k := range got {
		if !keys[k] {
			return fail("object %s after reopening was never acknowledged", k)
		}
	}
	fmt.Fprintln(out, "ok")
	return 0
}

// fullFSBatch is how many objects of 16 KiB a batch of the full file
// system child adds.
const fullFSBatch = 64

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
