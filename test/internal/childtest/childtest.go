// Package childtest runs a test binary again as a child process (in a mode
// its TestMain selects from the environment), kills it with SIGKILL as a
// crashing node would, and reads the journal the child writes: JSON records,
// one write and one fdatasync each, so that what the child recorded before
// the kill is on disk. The end-to-end tests of controllers built the way
// users build them (test/builder, test/typedfactory) share it.
package childtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/informerdb/informerdb/informer"
)

// Record is one line of a child's journal. Each test uses the fields it
// needs; Kind says what the line is ("stats" and "stats-end" are this
// package's, see ServeStats).
type Record struct {
	Kind       string `json:"kind"`
	Controller string `json:"controller,omitempty"`
	Handler    string `json:"handler,omitempty"`
	Informer   string `json:"informer,omitempty"`
	Key        string `json:"key,omitempty"` // namespace/name
	Exists     bool   `json:"exists,omitempty"`
	// Lists, Resumes and Relists are an informer's reflector counters
	// in a "stats" line.
	Lists   int64 `json:"lists,omitempty"`
	Resumes int64 `json:"resumes,omitempty"`
	Relists int64 `json:"relists,omitempty"`
	// Batch numbers the answers to SIGUSR1: a batch's stats lines and its
	// stats-end carry the same one (the child's handlers write meanwhile).
	Batch int `json:"batch,omitempty"`
}

// Journal appends records to a file. It is safe for concurrent use.
type Journal struct {
	mu sync.Mutex // guards f
	f  *os.File
}

// OpenJournal opens the journal at path for appending.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("childtest: journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Write appends r and syncs it. A child that cannot write its journal
// exits (status 3) holding the lock, so that no record follows one that
// may be missing; hence no deferred Unlock.
func (j *Journal) Write(r Record) {
	line, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings, booleans and integers only
	}
	j.mu.Lock()
	_, err = j.f.Write(append(line, '\n'))
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: journal:", err)
		os.Exit(3)
	}
	j.mu.Unlock()
}

// ExitWithParent makes the child exit when its parent dies: the parent
// holds the child's stdin open while it runs, so EOF means it is gone, and
// a child must not outlive it.
func ExitWithParent() {
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "child: parent gone (stdin closed)")
		os.Exit(3)
	}()
}

// ServeStats answers each SIGUSR1 with a "stats" line per informer that
// informers returns (its reflector's LIST, resume and relist counts),
// then a "stats-end" line, all of one batch.
func ServeStats(j *Journal, informers func() []*informer.Informer) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		batch := 0
		for range usr1 {
			batch++
			for _, inf := range informers() {
				st := inf.Stats().Reflector
				rl := st.Relists
				j.Write(Record{Kind: "stats", Batch: batch, Informer: inf.Name(), Lists: st.Lists, Resumes: st.Resumes,
					Relists: rl.Cold + rl.Expired + rl.TooLarge + rl.TimeTravel + rl.CatchUp + rl.ScopeChange + rl.Corrupt + rl.Gone})
			}
			j.Write(Record{Kind: "stats-end", Batch: batch})
		}
	}()
}

// WaitLimit bounds each wait for a child: a restart of a few informers
// takes seconds; hitting it means a lost notification or a stuck child.
const WaitLimit = 90 * time.Second

// Proc is a running child process and its journal.
type Proc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	journal string
	stderr  *lockedWriter
	exited  chan struct{}
}

// Start runs the test binary again, with env added to the environment (it
// selects the child's mode in TestMain), writing its journal at journal.
// The test's cleanup kills it.
func Start(t *testing.T, name, journal string, env ...string) *Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("test executable: %v", err)
	}
	p := &Proc{t: t, name: name, journal: journal, stderr: &lockedWriter{}, exited: make(chan struct{})}
	p.cmd = exec.Command(exe, "-test.run=^$")
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatalf("%s: stdin: %v", name, err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: start: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.Kill)
	return p
}

// Name is the name Start was given.
func (p *Proc) Name() string { return p.name }

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	_ = p.stdin.Close()
}

// lockedWriter lets the test read a child's stderr while it writes.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// Exited is closed once the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// StderrTail returns the last 4,000 bytes the process wrote to stderr.
func (p *Proc) StderrTail() string {
	s := p.stderr.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// Records reads the journal as written so far.
func (p *Proc) Records() []Record {
	p.t.Helper()
	f, err := os.Open(p.journal)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		p.t.Fatalf("%s: journal: %v", p.name, err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			break // a line being written
		}
		out = append(out, r)
	}
	return out
}

// WaitFor polls the journal until done returns "", failing the test with
// what it returned last after WaitLimit or when the child dies.
func (p *Proc) WaitFor(what string, done func([]Record) string) []Record {
	p.t.Helper()
	var missing string
	var recs []Record
	err := wait.PollUntilContextTimeout(p.t.Context(), 100*time.Millisecond, WaitLimit, true, func(context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, errors.New("child exited")
		default:
		}
		recs = p.Records()
		missing = done(recs)
		return missing == "", nil
	})
	if err != nil {
		p.t.Fatalf("%s: %s: %v; missing: %s\nchild's stderr (tail):\n%s", p.name, what, err, missing, p.StderrTail())
	}
	return recs
}

// WaitRecord waits until the journal holds a record that match accepts.
func (p *Proc) WaitRecord(what string, match func(Record) bool) {
	p.t.Helper()
	p.WaitFor(what, func(recs []Record) string {
		if slices.ContainsFunc(recs, match) {
			return ""
		}
		return "no such record yet"
	})
}

// Stats asks the child for its informers' reflector counters (see
// ServeStats) and returns the "stats" lines of its answer.
func (p *Proc) Stats() []Record {
	p.t.Helper()
	ends := func(recs []Record) int {
		n := 0
		for _, r := range recs {
			if r.Kind == "stats-end" {
				n++
			}
		}
		return n
	}
	have := ends(p.Records())
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		p.t.Fatalf("%s: SIGUSR1: %v", p.name, err)
	}
	recs := p.WaitFor("informer stats", func(recs []Record) string {
		if ends(recs) > have {
			return ""
		}
		return "no stats yet"
	})
	batch := 0
	for _, r := range recs {
		if r.Kind == "stats-end" {
			batch = r.Batch
		}
	}
	var out []Record
	for _, r := range recs {
		if r.Kind == "stats" && r.Batch == batch {
			out = append(out, r)
		}
	}
	return out
}
