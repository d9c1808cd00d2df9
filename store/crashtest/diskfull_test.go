package crashtest

import (
	"bufio"
	gocontext "context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/informerdb/informerdb/store"
)

// envDiskFull makes the test binary a disk-full child for the store URL it
// names (see diskFullChild).
const envDiskFull = "INFORMERDB_CRASHTEST_DISKFULL_URL"

// maxFullBatches bounds how many batches the child commits waiting for the
// file size limit to bite.
const maxFullBatches = 5000

// TestDiskFull: a commit that cannot write its data, as on a full disk,
// must fail with an error naming the cause, leave the store as it was (in
// memory and on disk), and the store must work again once there is room.
// A child process lowers its file size limit (RLIMIT_FSIZE: writes past it
// fail with EFBIG, as writes on a full disk fail with ENOSPC, without
// needing a small file system) below what the store needs, commits
// batches until one fails, raises the limit, commits that batch again and
// one more, and closes the store; the parent reopens it and checks it
// against the model of every batch acknowledged.
func TestDiskFull(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		if !b.durable {
			continue // file-mode memory stores write snapshots, not commits
		}
		t.Run(b.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			url := b.url(dir)
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), envDiskFull+"="+url)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			exited := false
			if err != nil {
				if !b.diskFullExits || !strings.Contains(stderr.String(), "file too large") {
					t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
				}
				exited = true
			}
			var full, last uint64
			var failure, efbig string
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "full "):
					if _, err := fmt.Sscanf(line, "full %d", &full); err != nil {
						t.Fatalf("child line %q: %v", line, err)
					}
					_, rest, _ := strings.Cut(strings.TrimPrefix(line, "full "), " ")
					efbig, failure, _ = strings.Cut(rest, " ")
				case strings.HasPrefix(line, "commit "):
					if _, err := fmt.Sscanf(line, "commit %d", &last); err != nil {
						t.Fatalf("child line %q: %v", line, err)
					}
				}
			}
			if exited {
				// The process ended in the failed write: nothing it
				// acknowledged may be lost, and the store works again
				// once reopened with room.
				t.Logf("child ended by the backend after batch %d: %s", last, lastLine(stderr.String(), "file too large"))
				r := check(t, url, newModel(), 0, last, true)
				m := newModel()
				m.advance(r)
				s, err := store.Open(t.Context(), url, options())
				if err != nil {
					t.Fatalf("reopen with room: %v", err)
				}
				if err := commitBatch(t.Context(), s, m, r+1); err != nil {
					t.Errorf("commit after reopening with room: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				if got := check(t, url, newModel(), r, r+1, true); got != r+1 {
					t.Errorf("resume point %d after the commit made with room, want %d", got, r+1)
				}
				return
			}
			if b.diskFullExits {
				t.Errorf("the child survived the file size limit; the test expects %s to end the process (update diskFullExits)", b.name)
			}
			t.Logf("child: batch %d failed with: %s; last batch committed: %d", full, failure, last)
			if full == 0 {
				t.Fatalf("no commit failed under the file size limit; child output:\n%s", out)
			}
			if !strings.Contains(failure, "file too large") {
				t.Errorf("the failed commit's error %q does not name the cause (EFBIG, file too large)", failure)
			}
			if efbig != "efbig=true" {
				t.Errorf("the failed commit's error %q does not wrap syscall.EFBIG (%s)", failure, efbig)
			}
			if last < full+1 {
				t.Errorf("last batch committed %d: want the failed batch %d and one more committed once there was room", last, full)
			}
			r := check(t, url, newModel(), 0, last, true)
			if r != last {
				t.Errorf("resume point after reopening %d, want %d (the last batch committed)", r, last)
			}
		})
	}
}

// diskFullChild runs the child of TestDiskFull on url and returns its exit
// code. It prints "full n efbig=B error" for the first batch n whose commit
// failed under the limit (B: whether its error wraps syscall.EFBIG) and
// "commit n" for every batch committed.
func diskFullChild(url string) int {
	fail := func(format string, args ...interface{}) int {
		fmt.Fprintf(os.Stderr, "diskfull child: "+format+"\n", args...)
		return 3
	}
	ctx := gocontext.Background()
	// Unbuffered: a backend may end the process when a write fails (badger
	// asserts when it cannot create a memtable file), and every line the
	// parent reads must be whole and name a batch that was acknowledged.
	out := os.Stdout
	m := newModel()
	var n uint64
	s, err := store.Open(ctx, url, options())
	if err != nil {
		return fail("open: %v", err)
	}
	// A few batches (one relist among them) before the limit.
	for n < relistEvery+5 {
		n++
		if err := commitBatch(ctx, s, m, n); err != nil {
			return fail("batch %d before the limit: %v", n, err)
		}
		fmt.Fprintf(out, "commit %d\n", n)
	}
	// Closed and opened again: reading bolt's metadata needs the file
	// unlocked, and the limit must not catch an open half done.
	if err := s.Close(); err != nil {
		return fail("close: %v", err)
	}
	limit, err := fileLimit(url)
	if err != nil {
		return fail("file size limit: %v", err)
	}
	if s, err = store.Open(ctx, url, options()); err != nil {
		return fail("open again: %v", err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		return fail("getrlimit: %v", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(limit), Max: old.Max}); err != nil {
		return fail("setrlimit %d: %v", limit, err)
	}
	full := uint64(0)
	for full == 0 && n < maxFullBatches {
		n++
		before := s.ResourceVersion()
		if err := commitBatch(ctx, s, m, n); err != nil {
			full = n
			fmt.Fprintf(out, "full %d efbig=%t %v\n", n, errors.Is(err, syscall.EFBIG), err)
			if rv := s.ResourceVersion(); rv != before {
				return fail("the failed batch %d moved the resume point from %q to %q", n, before, rv)
			}
			break
		}
		fmt.Fprintf(out, "commit %d\n", n)
	}
	if full == 0 {
		return fail("no commit failed in %d batches under a file size limit of %d bytes", n, limit)
	}
	// Room again: the failed batch, then one more.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		return fail("setrlimit back: %v", err)
	}
	for _, b := range []uint64{full, full + 1} {
		if err := commitBatch(ctx, s, m, b); err != nil {
			return fail("batch %d once there was room again: %v", b, err)
		}
		fmt.Fprintf(out, "commit %d\n", b)
	}
	if err := s.Close(); err != nil {
		return fail("close: %v", err)
	}
	return 0
}

// commitBatch writes batch n of the model (a Commit, or a Replace every
// relistEvery batches) to s, advancing m only if it succeeded.
func commitBatch(ctx gocontext.Context, s store.Store, m *model, n uint64) error {
	next := &model{n: m.n, state: make(map[string]entry, len(m.state))}
	for k, v := range m.state {
		next.state[k] = v
	}
	next.advance(n)
	rv := strconv.FormatUint(n, 10)
	var err error
	if isRelist(n) {
		list := make([]interface{}, 0, len(next.state))
		for k, e := range next.state {
			list = append(list, newPod(k, e.Batch, e.App))
		}
		err = s.Replace(list, rv)
	} else {
		err = s.Commit(ctx, store.Batch{Ops: batchOps(n), ResourceVersion: rv})
	}
	if err == nil {
		*m = *next
	}
	return err
}

// fileLimit returns a file size limit below what the store at url will
// need soon: for bolt, the end of the pages its file uses (bbolt grows
// files ahead, so a limit at the file's size would not bite for a long
// time); for directory backends, 1 MiB, less than the files they create as
// they fill (memtable logs, tables). The store must be closed.
func fileLimit(url string) (int64, error) {
	if !strings.HasPrefix(url, "bolt://") {
		return 1 << 20, nil
	}
	path := strings.TrimPrefix(url, "bolt://")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	var used int64
	err = db.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return used, err
}

// lastLine returns the last line of s that contains sub, shortened.
func lastLine(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			if l := lines[i]; len(l) > 300 {
				return l[:300] + "..."
			}
			return lines[i]
		}
	}
	return ""
}
