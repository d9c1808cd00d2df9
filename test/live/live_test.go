// Package live_test checks live inspection against a real process: a child
// process runs informers on a real kube-apiserver, keeps their cache in a
// bolt or badger database (which it locks against other processes) and
// serves it with snapshot.NewHandler; the test runs the built snapshot
// command against the handler's address while ConfigMaps are created as
// fast as the API server takes them, and checks every snapshot it saves.
package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
	"github.com/informerdb/informerdb/test/apiserver"
	"github.com/informerdb/informerdb/test/internal/childtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// The harness's clientset keeps idle connections to the API
		// server; they die with the process.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
	)
}

// saves is how many snapshots each case saves while the writer writes.
const saves = 6

// configMapType is the type a ConfigMap store records.
const configMapType = "k8s.io/api/core/v1.ConfigMap"

// TestSaveFromRunningController is issue 35's live inspection: a running
// controller's cache is copied with "snapshot save http://..." while the
// controller holds its database and commits, for a Factory's informers
// (bolt) and a controller-runtime manager's cache on InformerConstructor
// (badger, the handler among the metrics server's ExtraHandlers). Each
// saved file verifies, and holds in its ConfigMap store exactly the
// ConfigMaps created at or before its resume point: a snapshot of one
// commit, not a mix. Between two saves the test waits for the controller
// to commit more, and each save's resume point is past the previous one:
// the commits go on while the database is served. ls, get and status read
// the live process too.
func TestSaveFromRunningController(t *testing.T) {
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	createNamespace(t, c, "kube-lease")
	srv.RenewLease(t, "kube-lease")
	bin := buildCLI(t)
	for _, tc := range []struct {
		mode, url string
	}{
		{modeFactory, "bolt://" + filepath.Join(t.TempDir(), "cache.db")},
		{modeManager, "badger://" + filepath.Join(t.TempDir(), "db")},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ns := "live-" + tc.mode
			createNamespace(t, c, ns)
			w := &writer{c: c, ns: ns}
			for i := 0; i < 40; i++ {
				w.create(t)
			}
			if _, err := c.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "token"}, StringData: map[string]string{"k": "v"},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cfg := srv.Config()
			journal := filepath.Join(t.TempDir(), "journal")
			env := []string{envMode + "=" + tc.mode, envStoreURL + "=" + tc.url, envServer + "=" + cfg.Host,
				envToken + "=" + cfg.BearerToken, envNamespace + "=" + ns, envJournal + "=" + journal}
			if tc.mode == modeManager {
				env = append(env, envAddr+"="+freeAddr(t))
			}
			p := childtest.Start(t, tc.mode, journal, env...)
			var addr string
			p.WaitFor("serving", func(recs []childtest.Record) string {
				for _, r := range recs {
					if r.Kind == "serving" {
						addr = r.Key
						return ""
					}
				}
				return "a serving record"
			})

			// The database is the child's: the command cannot open it,
			// and reads it through the handler instead.
			stop := w.run(t)
			dir := t.TempDir()
			var files []string
			for i := 0; i < saves; i++ {
				// Wait until the controller committed a ConfigMap created
				// since the last save (the status reads the live
				// process), so that each save sees new commits.
				want := w.lastRV()
				waitStatus(t, p, bin, addr, func(m *snapshot.Manifest) bool {
					s := configMaps(m)
					return s != nil && rv(t, s.Info.ResourceVersion) >= want
				})
				file := filepath.Join(dir, fmt.Sprintf("snap-%d.idb", i))
				if out, err := exec.Command(bin, "-q", "save", addr, file).CombinedOutput(); err != nil {
					t.Fatalf("save %d from %s: %v: %s\nchild's stderr (tail):\n%s", i, addr, err, out, p.StderrTail())
				}
				files = append(files, file)
			}
			out, err := exec.Command(bin, "ls", addr).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "cm-00007") {
				t.Errorf("ls %s: %v: %s", addr, err, out)
			}
			out, err = exec.Command(bin, "get", "--store", configMapStoreName(t, files[0]), addr, ns+"/cm-00003").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "cm-00003") {
				t.Errorf("get %s: %v: %s", addr, err, out)
			}
			created := stop()

			last := int64(-1)
			for i, file := range files {
				if out, err := exec.Command(bin, "verify", file).CombinedOutput(); err != nil {
					t.Errorf("verify %s: %v: %s", file, err, out)
				}
				at, names := savedConfigMaps(t, file)
				if at <= last {
					t.Errorf("save %d: resume point %d, not past the previous save's %d: did the commits stop?", i, at, last)
				}
				last = at
				var want []string
				for _, cm := range created {
					if cm.rv <= at {
						want = append(want, cm.name)
					}
				}
				t.Logf("save %d: resume point %d, %d ConfigMaps", i, at, len(names))
				if diff := cmp.Diff(want, names); diff != "" {
					t.Errorf("save %d at resume point %d: ConfigMaps (-created by then +saved):\n%s", i, at, diff)
				}
			}
			// The commits went on to the end: the controller caught up
			// with every ConfigMap created.
			final := created[len(created)-1].rv
			waitStatus(t, p, bin, addr, func(m *snapshot.Manifest) bool {
				s := configMaps(m)
				return s != nil && rv(t, s.Info.ResourceVersion) >= final && s.Objects == int64(len(created))
			})
			t.Logf("%d ConfigMaps created, the last at %d", len(created), final)
			if len(created) <= 40+saves {
				t.Errorf("only %d ConfigMaps created while saving: the writer stalled", len(created))
			}
		})
	}
}

// buildCLI builds cmd/snapshot and returns the binary's path.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "snapshot")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/informerdb/informerdb/cmd/snapshot").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/snapshot: %v: %s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address with a port free at the time.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// created is a ConfigMap the writer created, and the resourceVersion of
// its creation.
type created struct {
	name string
	rv   int64
}

// writer creates ConfigMaps cm-00000, cm-00001... in ns, one after the
// other, and records each creation's resourceVersion.
type writer struct {
	c  kubernetes.Interface
	ns string

	mu  sync.Mutex // guards all
	all []created
}

func (w *writer) create(t *testing.T) {
	w.mu.Lock()
	name := fmt.Sprintf("cm-%05d", len(w.all))
	w.mu.Unlock()
	cm, err := w.c.CoreV1().ConfigMaps(w.ns).Create(context.Background(), &corev1.ConfigMap{
		// 4 KiB each: a save streams a few MiB, over many commits.
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": name, "pad": strings.Repeat("x", 4<<10)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("create %s: %v", name, err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, created{name: name, rv: rv(t, cm.ResourceVersion)})
}

func (w *writer) lastRV() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all[len(w.all)-1].rv
}

// run creates ConfigMaps until the returned function is called, which
// returns every ConfigMap created.
func (w *writer) run(t *testing.T) (stop func() []created) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			w.create(t)
		}
	}()
	var once sync.Once
	stop = func() []created {
		once.Do(func() { close(quit); <-done })
		w.mu.Lock()
		defer w.mu.Unlock()
		return slices.Clone(w.all)
	}
	t.Cleanup(func() { stop() })
	return stop
}

func rv(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

// configMaps returns the header of the ConfigMap store of m (not its
// tombstones), or nil.
func configMaps(m *snapshot.Manifest) *snapshot.StoreHeader {
	for i, s := range m.Stores {
		if s.Info.Type == configMapType && !strings.HasSuffix(s.Info.Name, "/deleted") {
			return &m.Stores[i]
		}
	}
	return nil
}

// waitStatus runs "snapshot status -w json" on the handler until done
// accepts its manifest; the handler answers 503 until the informers
// opened their stores.
func waitStatus(t *testing.T, p *childtest.Proc, bin, addr string, done func(*snapshot.Manifest) bool) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, childtest.WaitLimit, true, func(context.Context) (bool, error) {
		out, runErr := exec.Command(bin, "status", "-w", "json", addr).CombinedOutput()
		last = string(out)
		if runErr == nil {
			var m snapshot.Manifest
			if err := json.Unmarshal(out, &m); err != nil {
				return false, err
			}
			return done(&m), nil
		}
		// Not serving yet (503 before the informers open their
		// stores): ask again.
		return false, nil
	})
	if err != nil {
		t.Fatalf("status %s: %v; last answer:\n%s\nchild's stderr (tail):\n%s", addr, err, last, p.StderrTail())
	}
}

// configMapStoreName returns the name of the ConfigMap store of a file.
func configMapStoreName(t *testing.T, file string) string {
	t.Helper()
	m, err := snapshot.Read(t.Context(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := configMaps(m)
	if s == nil {
		t.Fatalf("%s has no ConfigMap store: %+v", file, m.Stores)
	}
	return s.Info.Name
}

// savedConfigMaps returns the resume point of the ConfigMap store of a
// saved file and the names of its ConfigMaps, sorted.
func savedConfigMaps(t *testing.T, file string) (int64, []string) {
	t.Helper()
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	info, err := snapshot.Records(t.Context(), file, configMapStoreName(t, file), func(rec store.Record) error {
		obj, err := indexer.Decode(codec, rec.Data)
		if err != nil {
			return fmt.Errorf("object %q: %w", rec.Key, err)
		}
		names = append(names, obj.(*corev1.ConfigMap).Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return rv(t, info.ResourceVersion), names
}
