package crashtest

import (
	"bufio"
	gocontext "context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/storetest"
)

// Environment of the child process.
const (
	envChild = "INFORMERDB_CRASHTEST_CHILD_URL"
	envKills = "INFORMERDB_CRASH_KILLS"
	envSeed  = "INFORMERDB_CRASH_SEED"
)

// backend is a persistent backend under test; crash_*_test.go add theirs.
type backend struct {
	name string
	// url returns the database URL under dir.
	url func(dir string) string
	// durable: every Commit that returned survives kill -9.
	durable bool
	// diskFullExits: a write the file system refuses ends the process
	// instead of failing the commit (see TestDiskFull).
	diskFullExits bool
}

var backends []backend

func TestMain(m *testing.M) {
	if u := os.Getenv(envChild); u != "" {
		os.Exit(child(u))
	}
	if u := os.Getenv(envDiskFull); u != "" {
		os.Exit(diskFullChild(u))
	}
	if env := os.Getenv(envFullFS); env != "" {
		os.Exit(fullFSChild(env))
	}
	goleak.VerifyTestMain(m)
}

// keySpace bounds the keys batches touch, so the state stays small while
// keys are updated, deleted and re-created over and over.
const keySpace = 48

// op is one change of a batch in the model.
type op struct {
	key    string
	delete bool
	app    string // index value of a put
}

// batch returns the ops of batch n (n >= 1), a pure function of n so that
// parent and child agree on it without talking.
func batch(n uint64) []op {
	r := rand.New(rand.NewPCG(n, 0x5eed))
	ops := make([]op, 1+r.IntN(6))
	for i := range ops {
		ops[i].key = fmt.Sprintf("obj-%02d", r.IntN(keySpace))
		if r.IntN(4) == 0 {
			ops[i].delete = true
		} else {
			ops[i].app = fmt.Sprintf("app-%d", r.IntN(5))
		}
	}
	return ops
}

// batchOps returns the store operations of batch n (not a relist).
func batchOps(n uint64) []store.Op {
	var ops []store.Op
	for _, o := range batch(n) {
		if o.delete {
			ops = append(ops, store.Op{Type: store.OpDelete, Key: "crash/" + o.key})
		} else {
			ops = append(ops, store.Op{Type: store.OpPut, Object: newPod("crash/"+o.key, n, o.app)})
		}
	}
	return ops
}

// entry is the model of one stored object: which batch wrote it last, with
// which index value.
type entry struct {
	Batch uint64
	App   string
}

// model is the state after applying batches 1..n to an empty store.
type model struct {
	n     uint64
	state map[string]entry
}

func newModel() *model { return &model{state: map[string]entry{}} }

// relistEvery makes every so many batches a relist: a Replace of the whole
// contents, large enough (up to 600 objects) to take the backends' paths
// for big transactions, which must be atomic too (DESIGN invariant 2).
const relistEvery = 25

func isRelist(n uint64) bool { return n%relistEvery == 0 }

// relist returns the contents a relist at batch n replaces state with: about
// half of the objects kept (rewritten by batch n) and a fresh set of bulk
// objects.
func relist(state map[string]entry, n uint64) map[string]entry {
	r := rand.New(rand.NewPCG(n, 0x2e1157))
	out := map[string]entry{}
	for _, k := range slices.Sorted(maps.Keys(state)) {
		if strings.HasPrefix(k, "crash/obj-") && r.IntN(2) == 0 {
			out[k] = entry{Batch: n, App: state[k].App}
		}
	}
	for i := range r.IntN(600) {
		out[fmt.Sprintf("crash/bulk-%04d", i)] = entry{Batch: n, App: "bulk"}
	}
	return out
}

// advance applies batches up to n.
func (m *model) advance(n uint64) {
	for ; m.n < n; m.n++ {
		b := m.n + 1
		if isRelist(b) {
			m.state = relist(m.state, b)
			continue
		}
		for _, o := range batch(b) {
			if o.delete {
				delete(m.state, "crash/"+o.key)
			} else {
				m.state["crash/"+o.key] = entry{Batch: b, App: o.app}
			}
		}
	}
}

func podCodec() store.Codec {
	c, err := indexer.NewCodec(&corev1.Pod{})
	if err != nil {
		panic(err)
	}
	return c
}

func options() *store.Options {
	return &store.Options{
		Name:  "crash",
		Codec: podCodec(),
		Indexers: cache.Indexers{
			"app":       indexer.LabelIndexFunc("app"),
			"namespace": indexer.NamespaceIndexFunc,
			"batch":     indexer.LabelIndexFunc("batch"),
		},
	}
}

func newPod(key string, n uint64, app string) *corev1.Pod {
	ns, name, _ := strings.Cut(key, "/")
	rv := strconv.FormatUint(n, 10)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: rv,
			Labels:      map[string]string{"app": app, "batch": rv},
			Annotations: map[string]string{"payload": strings.Repeat("p", 512)},
		},
		Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "c", Image: "img"}}},
	}
}

// child commits batches after the store's resume point until it is killed.
// It reports "open R" once open and "commit n" after each Commit returns.
func child(url string) int {
	ctx := gocontext.Background()
	s, err := store.Open(ctx, url, options())
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest child: open:", err)
		return 3
	}
	var n uint64
	if rv := s.ResourceVersion(); rv != "" {
		if n, err = strconv.ParseUint(rv, 10, 64); err != nil {
			fmt.Fprintln(os.Stderr, "crashtest child: resume point:", err)
			return 3
		}
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "open %d\n", n)
	out.Flush()
	m := newModel()
	m.advance(n)
	for {
		n++
		m.advance(n)
		if isRelist(n) {
			list := make([]interface{}, 0, len(m.state))
			for k, e := range m.state {
				list = append(list, newPod(k, e.Batch, e.App))
			}
			if err := s.Replace(list, strconv.FormatUint(n, 10)); err != nil {
				fmt.Fprintln(os.Stderr, "crashtest child: replace:", err)
				return 3
			}
			fmt.Fprintf(out, "commit %d\n", n)
			out.Flush()
			continue
		}
		if err := s.Commit(ctx, store.Batch{Ops: batchOps(n), ResourceVersion: strconv.FormatUint(n, 10)}); err != nil {
			fmt.Fprintln(os.Stderr, "crashtest child: commit:", err)
			return 3
		}
		fmt.Fprintf(out, "commit %d\n", n)
		out.Flush()
	}
}

func kills(t *testing.T) int {
	t.Helper()
	v := os.Getenv(envKills)
	if v == "" {
		return 25
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", envKills, v)
	}
	return n
}

func seed(t *testing.T) uint64 {
	t.Helper()
	v := os.Getenv(envSeed)
	if v == "" {
		return uint64(time.Now().UnixNano())
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a number", envSeed, v)
	}
	return n
}

func TestCrash(t *testing.T) {
	if len(backends) == 0 {
		t.Fatal("no persistent backend registered for the crash test")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n, sd := kills(t), seed(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Logf("%s=%d %s=%d", envKills, n, envSeed, sd)
			runKills(t, exe, b, n, rand.New(rand.NewPCG(sd, 1)))
		})
	}
}

func runKills(t *testing.T, exe string, b backend, kills int, r *rand.Rand) {
	dir := filepath.Join(t.TempDir(), "db")
	url := b.url(dir)
	m := newModel()
	var lastR, acked uint64
	violations, checked, done := 0, uint64(0), 0
	// The summary is logged however the loop ends, a fatal error included.
	defer func() {
		t.Logf("summary backend=%s kills=%d batches_checked=%d resume_point=%d violations=%d", b.name, done, checked, lastR, violations)
	}()
	for i := range kills {
		got, err := runChild(t, exe, url, r)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		acked = max(acked, got)
		var rNow uint64
		ok := t.Run(fmt.Sprintf("kill-%03d", i), func(t *testing.T) {
			rNow = check(t, url, m, lastR, acked, b.durable)
		})
		done++
		if !ok {
			violations++
			keepEvidence(t, dir, b.name, i)
		}
		checked += rNow - min(rNow, lastR)
		lastR = max(lastR, rNow)
		// Without durability, acknowledged commits beyond the snapshot are
		// lost and will be redone: the child starts again after R.
		acked = lastR
	}
	if lastR == 0 {
		t.Errorf("no batch survived %d kills: the test checked nothing", kills)
	}
}

// keepEvidence copies the database a check failed on out of the test's
// temporary directory, for a post-mortem.
func keepEvidence(t *testing.T, dir, backend string, kill int) {
	t.Helper()
	dst, err := os.MkdirTemp("", fmt.Sprintf("informerdb-crash-%s-kill%03d-", backend, kill))
	if err == nil {
		err = os.CopyFS(dst, os.DirFS(dir))
	}
	if err != nil {
		t.Logf("keeping the failed database: %v", err)
		return
	}
	t.Logf("the database of the failed check is kept in %s", dst)
}

// runChild starts a child on url, kills it at a random instant and returns
// the last batch it reported committed.
func runChild(t *testing.T, exe, url string, r *rand.Rand) (uint64, error) {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"="+url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	opened := make(chan struct{})
	var last atomic.Uint64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			var n uint64
			if _, err := fmt.Sscanf(sc.Text(), "commit %d", &n); err == nil {
				last.Store(n)
			}
			if first {
				first = false
				close(opened)
			}
		}
	}()
	// Most kills land while batches are being committed; some while the
	// child is still opening the store.
	if r.IntN(5) != 0 {
		select {
		case <-opened:
		case <-readDone:
		case <-time.After(60 * time.Second):
		}
	}
	// Mostly short lives, so kills land at many points of small commits;
	// one in six lives long enough for a relist to complete after the slow
	// open of a race-enabled child.
	life := 40 * time.Millisecond
	if r.IntN(6) == 0 {
		life = 600 * time.Millisecond
	}
	time.Sleep(time.Duration(r.Int64N(int64(life))))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, err
	}
	<-readDone
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		if err == nil {
			err = errors.New("exit status 0") // what %w would print as %!w(<nil>)
		}
		return 0, fmt.Errorf("child did not die of SIGKILL (%w); stderr:\n%s", err, stderr.String())
	}
	return last.Load(), nil
}

// check opens the store after a kill and checks it against the model,
// returning its resume point.
func check(t *testing.T, url string, m *model, lastR, acked uint64, durable bool) uint64 {
	t.Helper()
	s, err := store.Open(t.Context(), url, options())
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	var r uint64
	if rv := s.ResourceVersion(); rv != "" {
		if r, err = strconv.ParseUint(rv, 10, 64); err != nil {
			t.Fatalf("resume point %q: %v", rv, err)
		}
	}
	if r < lastR {
		t.Errorf("resume point went back from %d to %d", lastR, r)
	}
	if durable && r < acked {
		t.Errorf("resume point %d is behind batch %d, whose Commit returned before the kill", r, acked)
	}
	if r < m.n {
		*m = *newModel()
	}
	m.advance(r)
	got := map[string]entry{}
	for _, k := range s.ListKeys() {
		obj, ok, err := s.GetByKey(k)
		if err != nil || !ok {
			t.Fatalf("GetByKey(%q) = %v, %v", k, ok, err)
		}
		p := obj.(*corev1.Pod)
		b, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatalf("object %q: resourceVersion %q", k, p.ResourceVersion)
		}
		if p.Labels["batch"] != p.ResourceVersion {
			t.Errorf("object %q: label batch=%q, resourceVersion %q: a torn object", k, p.Labels["batch"], p.ResourceVersion)
		}
		got[k] = entry{Batch: b, App: p.Labels["app"]}
	}
	if diff := cmp.Diff(m.state, got); diff != "" {
		t.Errorf("objects at resume point %d differ from batches 1..%d applied (-want +got):\n%s", r, r, diff)
	}
	storetest.CheckIndexes(t, s)
	return r
}
