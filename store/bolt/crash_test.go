package bolt_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/storetest"
)

// writerEnv makes the test binary, re-executed as a child, commit batches
// into the bolt file it names until it is killed.
const writerEnv = "INFORMERDB_BOLT_TEST_WRITER"

// crashKeys is the key space the crash test's batches churn over.
const crashKeys = 300

// batchOps returns batch i's operations: puts of 40 objects with
// resourceVersion i (and labels that move them between index values), and
// deletes of 10 others. It is deterministic, so the parent can compute the
// state after any batch.
func batchOps(i int) []store.Op {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	var ops []store.Op
	for range 40 {
		k := r.IntN(crashKeys)
		ops = append(ops, store.Op{Type: store.OpPut, Object: newPod(fmt.Sprintf("ns-%d", k%3), fmt.Sprintf("p-%03d", k), strconv.Itoa(i),
			map[string]string{"app": fmt.Sprintf("a%d", (k+i)%7)})})
	}
	for range 10 {
		k := r.IntN(crashKeys)
		ops = append(ops, store.Op{Type: store.OpDelete, Key: fmt.Sprintf("ns-%d/p-%03d", k%3, k)})
	}
	return ops
}

// stateAfter returns key -> resourceVersion after batches 1..n.
func stateAfter(n int) map[string]string {
	st := map[string]string{}
	for i := 1; i <= n; i++ {
		for _, op := range batchOps(i) {
			if op.Type == store.OpPut {
				p := op.Object.(*corev1.Pod)
				st[p.Namespace+"/"+p.Name] = p.ResourceVersion
			} else {
				delete(st, op.Key)
			}
		}
	}
	return st
}

// runWriter commits batches after the persisted resume point, forever.
func runWriter(path string) int {
	ctx := context.Background()
	s, err := bolt.Open(ctx, path, podOptions("pods"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer: open:", err)
		return 1
	}
	next := 1
	if rv := s.ResourceVersion(); rv != "" {
		n, err := strconv.Atoi(rv)
		if err != nil {
			fmt.Fprintln(os.Stderr, "writer: resume point:", err)
			return 1
		}
		next = n + 1
	}
	fmt.Println("ready")
	for i := next; ; i++ {
		if err := s.Commit(ctx, store.Batch{Ops: batchOps(i), ResourceVersion: strconv.Itoa(i)}); err != nil {
			fmt.Fprintln(os.Stderr, "writer: commit:", err)
			return 1
		}
	}
}

// TestKillDuringCommits kills a writer at random instants (SIGKILL) and
// checks, after each restart, that the store holds exactly the batches up to
// its resume point (invariants 1 and 9: the resume point never runs ahead,
// a commit is all or nothing) and that indexes agree with objects
// (invariant 7). Both modes reopen the file in turn.
func TestKillDuringCommits(t *testing.T) {
	url := dbURL(t, "")
	path := pathOf(t, url)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	last := 0
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
			// The test fails below either way; kill and reap the writer so it
			// outlives nothing. Their errors would only repeat the failure.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("round %d: writer said %q, %v; want ready", round, line, err)
		}
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		// The writer must have died of the kill, not stopped on its own, or
		// the round tests no interrupted write.
		var exitErr *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exitErr) || exitErr.ExitCode() != -1 {
			t.Fatalf("round %d: writer after SIGKILL: %v, want killed by the signal", round, err)
		}

		query := ""
		if round%2 == 1 {
			query = "?cache=5"
		}
		s := mustOpen(t, url+query, podOptions("pods"))
		rv, err := strconv.Atoi(s.ResourceVersion())
		if err != nil {
			t.Fatalf("round %d: resume point %q: %v", round, s.ResourceVersion(), err)
		}
		if rv < last {
			t.Fatalf("round %d: resume point went back from %d to %d", round, last, rv)
		}
		t.Logf("round %d: killed after batch %d", round, rv)
		last = rv
		got := map[string]string{}
		for _, obj := range s.List() {
			p := obj.(*corev1.Pod)
			got[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		if diff := cmp.Diff(stateAfter(rv), got); diff != "" {
			t.Errorf("round %d: contents after batch %d (-want +got):\n%s", round, rv, diff)
		}
		storetest.CheckIndexes(t, s)
		mustClose(t, s)
	}
}
