package crash_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/store/storetest"
	"github.com/informerdb/informerdb/test/apiserver"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(child())
	}
	goleak.VerifyTestMain(m,
		// klog's flush daemon is started by the package and never stopped.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// The harness's shared clientset keeps idle connections to the API
		// server of a finished test; they die with the process.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
	)
}

// Parent environment.
const (
	envCycles = "INFORMERDB_CRASH_CYCLES"
	envSeed   = "INFORMERDB_CRASH_SEED"
)

// waitLimit bounds every wait for the child or the API server. It turns a
// hang into a failure with a message; nothing asserts how long anything
// took.
const waitLimit = 3 * time.Minute

const (
	// names is the key space: few enough names that deletes, re-creates
	// and updates hit the same keys over and over.
	names = 80
	// watchWindow is the kube-apiserver watch cache's smallest capacity
	// (cacher defaultLowerBoundCapacity): a resume from a point with at
	// most this many changes after it is certainly inside the window.
	watchWindow = 100
)

// backend is a persistent backend under test.
type backend struct {
	name string
	// url is the database URL under dir; lockURL the same database with a
	// short lock timeout.
	url, lockURL func(dir string) string
	// corrupt writes garbage into the database under dir; remove deletes
	// it (the documented recovery from ErrCorrupt).
	corrupt, remove func(t *testing.T, dir string)
}

var backends = []backend{
	{
		name:    "bolt",
		url:     func(dir string) string { return "bolt://" + filepath.Join(dir, "cache.db") },
		lockURL: func(dir string) string { return "bolt://" + filepath.Join(dir, "cache.db") + "?lock_timeout=1s" },
		// Garbage over the first 64 KiB destroys both meta pages, whatever
		// the page size.
		corrupt: func(t *testing.T, dir string) { overwrite(t, filepath.Join(dir, "cache.db"), 64<<10) },
		remove: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "cache.db")); err != nil {
				t.Fatalf("remove database: %v", err)
			}
		},
	},
	{
		name:    "badger",
		url:     func(dir string) string { return "badger://" + filepath.Join(dir, "badger") },
		lockURL: func(dir string) string { return "badger://" + filepath.Join(dir, "badger") + "?lock_timeout=1s" },
		corrupt: func(t *testing.T, dir string) { overwrite(t, filepath.Join(dir, "badger", "MANIFEST"), 4<<10) },
		remove: func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "badger")); err != nil {
				t.Fatalf("remove database: %v", err)
			}
		},
	},
	snapshotBackend("memory"),
	snapshotBackend("memdb"),
}

// snapshotBackend is a backend whose database is a snapshot file, written
// every 100ms while a child runs: a kill loses what came after the last
// snapshot, and the restart resumes from that older point.
func snapshotBackend(scheme string) backend {
	file := func(dir string) string { return filepath.Join(dir, "cache.snap") }
	return backend{
		name:    scheme + "-file",
		url:     func(dir string) string { return scheme + "://" + file(dir) + "?snapshot_interval=100ms" },
		lockURL: func(dir string) string { return scheme + "://" + file(dir) + "?lock_timeout=1s" },
		// A killed child may not have written a snapshot yet: garbage
		// in place of the file, whether there was one or not.
		corrupt: func(t *testing.T, dir string) {
			if err := os.WriteFile(file(dir), bytes.Repeat([]byte("garbage!"), 512), 0o600); err != nil {
				t.Fatalf("corrupt %s: %v", file(dir), err)
			}
		},
		remove: func(t *testing.T, dir string) {
			if err := os.Remove(file(dir)); err != nil {
				t.Fatalf("remove database: %v", err)
			}
		},
	}
}

// overwrite replaces the first n bytes of path with seeded garbage.
func overwrite(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("corrupt %s: %v", path, err)
	}
	defer f.Close()
	garbage := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range garbage {
		garbage[i] = byte(r.Uint32())
	}
	if _, err := f.WriteAt(garbage, 0); err != nil {
		t.Fatalf("corrupt %s: %v", path, err)
	}
}

func cycles(t *testing.T) int {
	t.Helper()
	v := os.Getenv(envCycles)
	if v == "" {
		return 4
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", envCycles, v)
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

// TestCrash runs the kill cycles, then the locked and corrupt database
// scenarios, per backend, against one API server.
func TestCrash(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n, sd := cycles(t), seed(t)
	t.Logf("%s=%d %s=%d", envCycles, n, envSeed, sd)
	for i, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			h := newHarness(t, srv, exe, b, rand.New(rand.NewPCG(sd, uint64(i))))
			defer h.hist.stop()
			for c := range n {
				// After a failed cycle the database or the child may be
				// unusable, and every later cycle would fail the same
				// way: the first failure has the details.
				if !h.cycle(fmt.Sprintf("cycle-%04d", c), true) {
					t.Errorf("stopped after cycle %d failed", c)
					break
				}
			}
			if !t.Failed() {
				t.Run("locked", func(t *testing.T) {
					defer h.use(t)()
					h.locked(t)
				})
				t.Run("corrupt", func(t *testing.T) {
					defer h.use(t)()
					h.corrupted(t)
				})
			}
			s := h.stats
			t.Logf("summary backend=%s seed=%d cycles=%d kills=%d events_checked=%d deletes_checked=%d relists=%d resumes=%d cold_starts=%d api_restarts=%d violations=%d",
				b.name, sd, s.cycles, s.kills, s.events, s.deletes, s.relists, s.resumes, s.colds, s.apiRestarts, s.violations)
			if s.violations > 0 {
				t.Errorf("%d violations (details above)", s.violations)
			}
			if s.resumes == 0 && n >= 2 {
				t.Errorf("no cycle resumed: the suite checked no resume")
			}
		})
	}
}

// harness drives one backend's cycles. It is used by one goroutine.
type harness struct {
	t    *testing.T
	srv  *apiserver.Server
	c    kubernetes.Interface
	exe  string
	b    backend
	rng  *rand.Rand
	dir  string // database and journals
	ns   string
	hist *history

	live          map[string]*corev1.ConfigMap // what the parent last wrote, by name
	maxRV         int64                        // newest resourceVersion the parent was given
	deletes       []string                     // UIDs deleted, not yet seen by the history watch
	apiRestartRev int64                        // etcd revision when the API server was last restarted

	// What the store held after the last kill: the next child replays it.
	persisted   state
	persistedRV string

	stats struct {
		cycles, kills, events, deletes, relists, resumes, colds, apiRestarts, violations int
	}
}

func newHarness(t *testing.T, srv *apiserver.Server, exe string, b backend, rng *rand.Rand) *harness {
	h := &harness{
		t: t, srv: srv, c: srv.Client(), exe: exe, b: b, rng: rng,
		dir: t.TempDir(), ns: "crash-" + b.name, hist: newHistory(),
		live: map[string]*corev1.ConfigMap{}, persisted: state{},
	}
	ns, err := h.c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// The namespace is new, so the watch from its creation sees every
	// ConfigMap change in it.
	h.hist.start(h.c, h.ns, ns.ResourceVersion)
	for range names / 2 {
		h.randomChange()
	}
	return h
}

// use makes t the test the harness reports to (helpers must fail the
// running subtest, never its parent) and returns the undo.
func (h *harness) use(t *testing.T) func() {
	prev := h.t
	h.t = t
	return func() { h.t = prev }
}

// violation reports a broken invariant: it fails the test and is counted
// in the summary.
func (h *harness) violation(t *testing.T, format string, args ...any) {
	t.Helper()
	h.stats.violations++
	t.Errorf("VIOLATION: "+format, args...)
}

// randomChange makes one change to a random name: create when absent, else
// update (sometimes moving it to another index value), delete, or delete
// and re-create.
func (h *harness) randomChange() {
	t := h.t
	name := fmt.Sprintf("cm-%02d", h.rng.IntN(names))
	app := fmt.Sprintf("app-%d", h.rng.IntN(4))
	cur, ok := h.live[name]
	switch r := h.rng.IntN(10); {
	case !ok:
		h.create(name, app)
	case r < 5:
		upd := cur.DeepCopy()
		upd.Labels["app"] = app
		upd.Data["n"] = strconv.Itoa(h.rng.IntN(1 << 20))
		got, err := h.c.CoreV1().ConfigMaps(h.ns).Update(t.Context(), upd, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
		h.wrote(got)
	case r < 8:
		h.delete(cur)
	default:
		h.delete(cur)
		h.create(name, app)
	}
}

func (h *harness) create(name, app string) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: map[string]string{"app": app}},
		Data:       map[string]string{"n": "0", "payload": strings.Repeat("p", 256)},
	}
	got, err := h.c.CoreV1().ConfigMaps(h.ns).Create(h.t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create %s: %v", name, err)
	}
	h.wrote(got)
}

func (h *harness) delete(cm *corev1.ConfigMap) {
	err := h.c.CoreV1().ConfigMaps(h.ns).Delete(h.t.Context(), cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	if err != nil {
		h.t.Fatalf("delete %s: %v", cm.Name, err)
	}
	delete(h.live, cm.Name)
	h.deletes = append(h.deletes, string(cm.UID))
}

func (h *harness) wrote(cm *corev1.ConfigMap) {
	h.live[cm.Name] = cm
	rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if err != nil {
		h.t.Fatalf("resourceVersion %q: %v", cm.ResourceVersion, err)
	}
	h.maxRV = max(h.maxRV, rv)
}

// caughtUp waits until the history watch has seen every change made.
func (h *harness) caughtUp() {
	h.hist.waitFor(h.t, h.maxRV, h.deletes)
	h.deletes = nil
}

// restartAPIServer restarts kube-apiserver while no child runs: its watch
// cache then starts at the current revision, and a child resuming from an
// older point must relist.
func (h *harness) restartAPIServer() {
	t := h.t
	h.caughtUp()
	h.hist.stop()
	h.apiRestartRev = h.srv.EtcdRevision(t)
	h.srv.RestartAPIServer(t)
	h.stats.apiRestarts++
	list, err := h.c.CoreV1().ConfigMaps(h.ns).List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("list after API server restart: %v", err)
	}
	h.hist.start(h.c, h.ns, list.ResourceVersion)
}

func (h *harness) serverState() state {
	list, err := h.c.CoreV1().ConfigMaps(h.ns).List(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatalf("list configmaps: %v", err)
	}
	out := state{}
	for _, cm := range list.Items {
		out[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	return out
}

// cycle is one kill cycle: changes while the child is down (sometimes with
// an API server restart), a restart of the child, checks once it synced,
// changes while it runs, a SIGKILL at a random instant, and the checks of
// what it left behind. With early, the kill may come at a random instant
// before the child synced.
func (h *harness) cycle(name string, early bool) bool {
	return h.t.Run(name, func(t *testing.T) {
		defer h.use(t)()
		h.stats.cycles++
		for range h.rng.IntN(12) {
			h.randomChange()
		}
		// The first two cycles are a cold start and a resume, so that
		// even the short profile checks both.
		warmup := h.stats.cycles <= 2
		if !warmup && h.rng.IntN(8) == 0 {
			h.restartAPIServer()
			for range h.rng.IntN(6) {
				h.randomChange()
			}
		}
		h.caughtUp()

		before := h.srv.Metrics(t)
		c := h.startChild(t, name, h.b.url(h.dir))
		run := &runInfo{prev: h.persisted, prevRV: h.persistedRV}
		if early && !warmup && h.rng.IntN(10) < 3 {
			time.Sleep(time.Duration(h.rng.IntN(1500)) * time.Millisecond)
			c.kill(t)
		} else {
			run.synced = true
			run.dump = c.waitSynced(t)
			cost := h.srv.Metrics(t).Sub(before)
			run.server = h.serverState()
			h.checkSynced(t, run, cost)
			// Changes while the child runs, and a kill at a random
			// instant among them.
			k := h.rng.IntN(25)
			timer := time.AfterFunc(time.Duration(h.rng.IntN(1000))*time.Millisecond, c.killNow)
			for range k {
				h.randomChange()
				time.Sleep(time.Duration(h.rng.IntN(20)) * time.Millisecond)
			}
			<-c.killed
			timer.Stop()
			c.waitKilled(t)
		}
		h.stats.kills++
		if got, want := c.openRV(), strconv.Quote(run.prevRV); got != "" && got != want {
			h.violation(t, "child opened the store at resume point %s, the parent left it at %s", got, want)
		}
		h.caughtUp()
		h.checkPersisted(t)
		h.checkJournal(t, c.journal, run)
	})
}

// runInfo is what a child run was started on and saw.
type runInfo struct {
	prev     state  // persisted state the child opened
	prevRV   string // and its resume point
	synced   bool   // the run was waited on until synced
	relisted bool   // it relisted (more than the probe LIST) before it synced
	dump     state  // the child's store when synced
	server   state  // the API server's state when the child synced
}

// checkSynced checks a synced child: its store equals the API server, and
// its start cost the server what its resume point allows.
func (h *harness) checkSynced(t *testing.T, run *runInfo, cost apiserver.Metrics) {
	t.Helper()
	if diff := cmp.Diff(run.server, run.dump); diff != "" {
		h.violation(t, "store of the synced child differs from the API server (-server +store):\n%s", diff)
	}
	lists := cost.Lists["configmaps"]
	if run.prevRV == "" {
		h.stats.colds++
		if lists < 1 {
			h.violation(t, "cold start made %d LISTs, want at least 1", lists)
		}
		return
	}
	r, err := strconv.ParseInt(run.prevRV, 10, 64)
	if err != nil {
		h.violation(t, "resume point %q is not a number: %v", run.prevRV, err)
		return
	}
	// A relist is the probe plus at least one page; a resume the probe.
	relisted := lists >= 2
	run.relisted = relisted
	if relisted {
		h.stats.relists++
	} else {
		h.stats.resumes++
	}
	switch {
	case r < h.apiRestartRev:
		if !relisted {
			h.violation(t, "resume point %d predates the API server restart at revision %d (history lost), but the child made %d LIST(s), not a relist", r, h.apiRestartRev, lists)
		}
	case r > h.apiRestartRev && h.hist.since(r) <= watchWindow:
		if lists != 1 {
			h.violation(t, "resume point %d is inside the watch window (%d changes after it, no API server restart since), but the child made %d LISTs; want only the limit=1 probe; cost %+v", r, h.hist.since(r), lists, cost)
		}
	}
}

// checkPersisted opens the store the killed child left and checks it
// against the history at its resume point, and its indexes.
func (h *harness) checkPersisted(t *testing.T) {
	t.Helper()
	s, err := store.Open(t.Context(), h.b.url(h.dir), storeOptions(h.srv.URL(), h.ns))
	if err != nil {
		h.violation(t, "open the store after the kill: %v", err)
		t.FailNow()
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	rv := s.ResourceVersion()
	got := state{}
	for _, obj := range s.List() {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			h.violation(t, "store holds a %T", obj)
			continue
		}
		got[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	if info := s.Info(); info.Reset != "" {
		h.violation(t, "store was reset on reopen: %s", info.Reset)
	}
	if rv == "" {
		// Killed before the first relist was committed: nothing may be
		// stored without a resume point.
		if len(got) != 0 {
			h.violation(t, "store has no resume point but holds %d objects", len(got))
		}
	} else {
		r, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			h.violation(t, "resume point %q: %v", rv, err)
		} else if diff := cmp.Diff(h.hist.at(r), got); diff != "" {
			h.violation(t, "persisted objects differ from the API server's state at the persisted resume point %d (-history at R +store):\n%s", r, diff)
		}
		if h.persistedRV != "" {
			// A relist's resourceVersion is a consistent read, newer than
			// any event or bookmark before it: R only moves forward.
			if prev, _ := strconv.ParseInt(h.persistedRV, 10, 64); r < prev {
				h.violation(t, "resume point went back from %s to %d", h.persistedRV, r)
			}
		}
	}
	ok := t.Run("indexes", func(t *testing.T) { storetest.CheckIndexes(t, s) })
	if !ok {
		h.violation(t, "indexes disagree with objects after the kill (see the indexes subtest)")
	}
	h.persisted, h.persistedRV = got, rv
}

// checkJournal replays what the child's handler received against the
// state it must have seen: first OnAdd(obj, true) for every persisted
// object, then notifications that each follow from the one before, all of
// real states of the object; at the synced marker exactly the API server's
// state. Deletions of replayed objects count as deletes checked.
func (h *harness) checkJournal(t *testing.T, path string, run *runInfo) {
	t.Helper()
	recs := readJournal(t, path)
	h.stats.events += len(recs)
	view := state{}
	i := 0
	for ; i < len(recs) && i < len(run.prev); i++ {
		r := recs[i]
		if r.Op != "add" || !r.Initial {
			h.violation(t, "journal record %d is %+v, want the replay of persisted objects (%d) first", i, r, len(run.prev))
			return
		}
		view[r.Name] = version{r.UID, r.RV}
	}
	if i == len(run.prev) {
		if diff := cmp.Diff(run.prev, view); diff != "" {
			h.violation(t, "replay differs from the persisted objects (-persisted +replayed):\n%s", diff)
		}
	}
	removed := map[string]string{} // replayed UID -> how it left the view
	sawSynced := false
	for ; i < len(recs); i++ {
		r := recs[i]
		cur, present := view[r.Name]
		switch r.Op {
		case "synced":
			sawSynced = true
			if run.synced {
				if diff := cmp.Diff(run.server, view); diff != "" {
					h.violation(t, "what the handler saw up to sync differs from the API server (-server +handler):\n%s", diff)
				}
			}
			continue
		case "add":
			if present {
				h.violation(t, "journal record %d: OnAdd of %s, which the handler already has as %+v", i, r.Name, cur)
			}
			view[r.Name] = version{r.UID, r.RV}
		case "update":
			if !present || cur != (version{r.OldUID, r.OldRV}) {
				h.violation(t, "journal record %d: OnUpdate of %s from %s/%s, but the handler has %+v (present %v)", i, r.Name, r.OldUID, r.OldRV, cur, present)
			}
			if r.OldUID != r.UID {
				removed[r.OldUID] = "update to a new UID"
			}
			view[r.Name] = version{r.UID, r.RV}
		case "delete":
			switch {
			case r.NilObj:
				h.violation(t, "journal record %d: OnDelete of %s got a DeletedFinalStateUnknown with nil Obj", i, r.Name)
			case !present || cur.UID != r.UID:
				h.violation(t, "journal record %d: OnDelete of %s uid %s, but the handler has %+v (present %v)", i, r.Name, r.UID, cur, present)
			}
			removed[r.UID] = "delete"
			delete(view, r.Name)
			continue
		default:
			h.violation(t, "journal record %d: unknown op %+v", i, r)
			continue
		}
		if !h.hist.known(r.Name, r.UID, r.RV) {
			h.violation(t, "journal record %d: %s %s uid %s rv %s is no state the object ever had", i, r.Op, r.Name, r.UID, r.RV)
		}
	}
	if run.synced && !sawSynced {
		h.violation(t, "the child reported synced but its journal has no synced marker")
	}
	if !run.synced {
		return
	}
	// Every object persisted before the restart and gone from the server
	// when the child synced was deleted while the child was down (or
	// before its last commit): its handler must have got the delete.
	serverUIDs := map[string]bool{}
	for _, v := range run.server {
		serverUIDs[v.UID] = true
	}
	for name, v := range run.prev {
		if serverUIDs[v.UID] {
			continue
		}
		switch removed[v.UID] {
		case "delete":
			h.stats.deletes++
		case "update to a new UID":
			// A name deleted and re-created while down must reach handlers
			// as OnDelete + OnAdd, from the resumed watch's DELETED event or,
			// after a relist, as a tombstone for the old UID (DESIGN
			// invariant 4): an update to the new UID hides the delete from
			// handlers keyed by UID.
			h.violation(t, "%s (uid %s) was deleted and re-created while the child was down (relisted: %v), yet its handler got an update to the new UID instead of OnDelete", name, v.UID, run.relisted)
		default:
			h.violation(t, "%s (uid %s) was deleted while the child was down, but its handler never got OnDelete", name, v.UID)
		}
	}
}

func readJournal(t *testing.T, path string) []record {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	var out []record
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			continue // a record cut by the kill
		}
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("journal %s: line %q: %v", path, line, err)
		}
		out = append(out, r)
	}
	return out
}

// locked starts a second child on the database a running child holds: it
// must fail with ErrLocked after its lock timeout, not hang.
func (h *harness) locked(t *testing.T) {
	run := &runInfo{prev: h.persisted, prevRV: h.persistedRV}
	a := h.startChild(t, "locked-holder", h.b.url(h.dir))
	a.waitOpen(t)
	b := h.startChild(t, "locked-second", h.b.lockURL(h.dir))
	code := b.waitExit(t)
	if stderr := b.stderr(); code != exitLocked || !strings.Contains(stderr, store.ErrLocked.Error()) {
		h.violation(t, "second child on a held database exited with code %d, want %d (ErrLocked); stderr:\n%s", code, exitLocked, stderr)
	} else {
		t.Logf("second child: %s", strings.TrimSpace(stderr))
	}
	a.killNow()
	a.waitKilled(t)
	h.stats.kills++
	h.caughtUp()
	h.checkPersisted(t)
	h.checkJournal(t, a.journal, run)
}

// corrupted damages the database while no child runs: the child must fail
// with ErrCorrupt naming the database; deleting it and restarting (the
// documented recovery) relists and converges.
func (h *harness) corrupted(t *testing.T) {
	h.b.corrupt(t, h.dir)
	c := h.startChild(t, "corrupt", h.b.url(h.dir))
	code := c.waitExit(t)
	if stderr := c.stderr(); code != exitCorrupt || !strings.Contains(stderr, store.ErrCorrupt.Error()) || !strings.Contains(stderr, h.dir) {
		h.violation(t, "child on a corrupt database exited with code %d, want %d (ErrCorrupt naming %s); stderr:\n%s", code, exitCorrupt, h.dir, stderr)
	} else {
		t.Logf("child on the corrupt database: %s", strings.TrimSpace(stderr))
	}
	h.b.remove(t, h.dir)
	h.persisted, h.persistedRV = state{}, ""
	colds := h.stats.colds
	h.cycle("recovered", false)
	if h.stats.colds != colds+1 {
		h.violation(t, "the restart after deleting the corrupt database was not a cold start")
	}
}

// childProc is a running child.
type childProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser // held open while the child may run; Wait closes it
	journal string
	errPath string
	// lines has the child's stdout lines, and is closed at EOF, when
	// readDone is closed too; the buffer holds more than a child prints, so
	// the reader never blocks on a test that does not read them.
	lines    chan string
	readDone chan struct{}
	killed   chan struct{} // closed by killNow
	once     sync.Once

	waitOnce sync.Once
	waitErr  error // of cmd.Wait, set by waitOnce

	mu   sync.Mutex // guards open
	open string     // the quoted resume point of the "open" line
}

func (h *harness) startChild(t *testing.T, name, url string) *childProc {
	t.Helper()
	c := &childProc{
		journal:  filepath.Join(h.dir, "journal-"+name+".jsonl"),
		errPath:  filepath.Join(h.dir, "child-"+name+".stderr"),
		lines:    make(chan string, 4096),
		readDone: make(chan struct{}),
		killed:   make(chan struct{}),
	}
	cfg := h.srv.Config()
	c.cmd = exec.Command(h.exe)
	c.cmd.Env = append(os.Environ(),
		envChild+"=1", envStoreURL+"="+url, envServer+"="+cfg.Host, envToken+"="+cfg.BearerToken,
		envNamespace+"="+h.ns, envJournal+"="+c.journal)
	stderr, err := os.Create(c.errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	c.cmd.Stderr = stderr
	// The child exits when its stdin reaches EOF: if the parent dies
	// (a test timeout, a panic), its children do not outlive it.
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdin = stdin
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	// A test that fails while the child runs must not leave it running,
	// nor unreaped.
	t.Cleanup(func() {
		c.killNow()
		_ = c.wait()
	})
	go func() {
		defer close(c.readDone)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "open "); ok {
				c.mu.Lock()
				c.open = rest
				c.mu.Unlock()
			}
			c.lines <- line
		}
	}()
	return c
}

// wait waits for the child to exit, once; later calls return the same.
func (c *childProc) wait() error {
	c.waitOnce.Do(func() {
		// exec.Cmd wants the pipe drained before Wait.
		<-c.readDone
		c.waitErr = c.cmd.Wait()
	})
	return c.waitErr
}

func (c *childProc) openRV() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

func (c *childProc) stderr() string {
	data, _ := os.ReadFile(c.errPath)
	return string(data)
}

func (c *childProc) killNow() {
	c.once.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		close(c.killed)
	})
}

func (c *childProc) kill(t *testing.T) {
	t.Helper()
	c.killNow()
	c.waitKilled(t)
}

// waitKilled waits for the killed child and checks it died of the SIGKILL,
// not of an error of its own before.
func (c *childProc) waitKilled(t *testing.T) {
	t.Helper()
	err := c.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL (%v); stderr:\n%s", err, c.stderr())
	}
}

// waitExit waits for a child expected to exit on its own and returns its
// exit code; a child still running after waitLimit is killed and fails
// the test.
func (c *childProc) waitExit(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		t.Fatalf("child: %v", err)
	case <-time.After(waitLimit):
		c.killNow()
		err := <-done
		t.Fatalf("child still running after %v (killed: %v); stderr:\n%s", waitLimit, err, c.stderr())
	}
	return -1
}

// waitOpen waits until the child reported its store open.
func (c *childProc) waitOpen(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for c.openRV() == "" {
		select {
		case <-c.readDone:
			t.Fatalf("child exited before it opened its store; stderr:\n%s", c.stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("child did not open its store within %v; stderr:\n%s", waitLimit, c.stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSynced waits for the child's "synced" report and returns the store
// state it dumped.
func (c *childProc) waitSynced(t *testing.T) state {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	out := state{}
	synced := false
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited before it synced; stderr:\n%s", c.stderr())
			}
			switch {
			case line == "synced":
				synced = true
			case line == "end" && synced:
				return out
			case synced && strings.HasPrefix(line, "state "):
				f := strings.Fields(line)
				if len(f) != 4 {
					t.Fatalf("child: bad state line %q", line)
				}
				out[f[1]] = version{f[2], f[3]}
			}
		case <-deadline.C:
			t.Fatalf("child did not sync within %v; stderr:\n%s", waitLimit, c.stderr())
		}
	}
}
