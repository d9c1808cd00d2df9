package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/test/apiserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// klog's flush daemon is started by the package and never stopped.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// The harness's shared clientset keeps idle HTTP/2 connections to
		// the API servers of finished tests; they die with the process.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
	)
}

// waitLimit bounds every wait. It turns a hang (a lost notification, an
// informer that never syncs) into a failure with a message; nothing asserts
// how long anything took. A resumed informer syncs after its catch-up watch
// gets the API server's pre-deadline bookmark, a few seconds.
const waitLimit = 3 * time.Minute

// envN names the environment variable that sets how many ConfigMaps the
// cold-start test creates.
const envN = "INFORMERDB_E2E_N"

func objectCount(t *testing.T) int {
	t.Helper()
	v := os.Getenv(envN)
	if v == "" {
		return 2000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 {
		t.Fatalf("%s=%q: want a number of at least 100", envN, v)
	}
	return n
}

// backendCase is one persistent backend the restart tests run on.
type backendCase struct {
	name string
	url  func(dir string) string
}

var persistentBackends = []backendCase{
	{"bolt", func(dir string) string { return "bolt://" + dir + "/cache.db" }},
	{"badger", func(dir string) string { return "badger://" + dir }},
	{"memory-file", func(dir string) string { return "memory://" + dir + "/cache.snap" }},
}

// ev is one handler notification, reduced to what the tests compare.
type ev struct {
	Op      string // add, update, delete
	Name    string
	UID     string
	RV      string
	Initial bool // OnAdd's isInInitialList
	Tomb    bool // OnDelete got a cache.DeletedFinalStateUnknown
	NilObj  bool // ... whose Obj was nil (a violation of DESIGN invariant 4)
	OldUID  string
	OldRV   string
}

// eventLog is what the tests' handlers record, in order, with waits on
// it. It is safe for concurrent use; the zero value is not: use
// newEventLog.
type eventLog[E any] struct {
	mu      sync.Mutex // guards evs and changed
	evs     []E
	changed chan struct{} // closed and replaced on every append
}

func newEventLog[E any]() eventLog[E] { return eventLog[E]{changed: make(chan struct{})} }

func (l *eventLog[E]) record(e E) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
	close(l.changed)
	l.changed = make(chan struct{})
}

// events returns a copy of what was recorded so far.
func (l *eventLog[E]) events() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]E(nil), l.evs...)
}

// waitFor waits until done holds for the recorded events and returns them.
func (l *eventLog[E]) waitFor(t *testing.T, what string, done func([]E) bool) []E {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		evs, changed := append([]E(nil), l.evs...), l.changed
		l.mu.Unlock()
		if done(evs) {
			return evs
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waiting for %s: gave up after %v with %d events recorded, the last: %+v", what, waitLimit, len(evs), evs[max(0, len(evs)-5):])
		}
	}
}

// waitN waits for at least n events and returns the first n.
func (l *eventLog[E]) waitN(t *testing.T, n int) []E {
	t.Helper()
	return l.waitFor(t, fmt.Sprintf("%d events", n), func(evs []E) bool { return len(evs) >= n })[:n]
}

// recorder is a cache.ResourceEventHandler of ConfigMaps that records what
// it receives. It is safe for concurrent use.
type recorder struct{ eventLog[ev] }

func newRecorder() *recorder { return &recorder{newEventLog[ev]()} }

func cmOf(obj interface{}) *corev1.ConfigMap {
	cm, _ := obj.(*corev1.ConfigMap)
	if cm == nil {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("<%T>", obj)}}
	}
	return cm
}

func (r *recorder) OnAdd(obj interface{}, initial bool) {
	cm := cmOf(obj)
	r.record(ev{Op: "add", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion, Initial: initial})
}

func (r *recorder) OnUpdate(oldObj, newObj interface{}) {
	o, n := cmOf(oldObj), cmOf(newObj)
	r.record(ev{Op: "update", Name: n.Name, UID: string(n.UID), RV: n.ResourceVersion, OldUID: string(o.UID), OldRV: o.ResourceVersion})
}

func (r *recorder) OnDelete(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if tomb.Obj == nil {
			_, name, _ := strings.Cut(tomb.Key, "/")
			r.record(ev{Op: "delete", Name: name, Tomb: true, NilObj: true})
			return
		}
		cm := cmOf(tomb.Obj)
		r.record(ev{Op: "delete", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion, Tomb: true})
		return
	}
	cm := cmOf(obj)
	r.record(ev{Op: "delete", Name: cm.Name, UID: string(cm.UID), RV: cm.ResourceVersion})
}

// codec is the ConfigMap codec every test store uses.
func codec(t testing.TB) store.Codec {
	t.Helper()
	c, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	return c
}

// storeOptions are the options of a ConfigMap store of the given scope.
func storeOptions(t testing.TB, scope string) *store.Options {
	return &store.Options{
		Name:  "v1/configmaps",
		Codec: codec(t),
		Scope: scope,
		Indexers: cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			"app":                indexer.LabelIndexFunc("app"),
		},
	}
}

// selection is what an informer caches: a namespace and a label selector.
type selection struct {
	namespace string
	labels    string
}

// scope is the store.Options.Scope fingerprint of sel on srv.
func (sel selection) scope(srv *apiserver.Server) string {
	return fmt.Sprintf("cluster=%s;resource=v1/configmaps;namespace=%s;labels=%s", srv.URL(), sel.namespace, sel.labels)
}

// listWatch is the ListerWatcher of sel, through client-go's
// NewFilteredListWatchFromClient as an application would write it.
func (sel selection) listWatch(c kubernetes.Interface) cache.ListerWatcherWithContext {
	lw := cache.NewFilteredListWatchFromClient(c.CoreV1().RESTClient(), "configmaps", sel.namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = sel.labels
	})
	return cache.ToListerWatcherWithContext(lw)
}

// running is an informer started by startInformer.
type running struct {
	inf    *informer.Informer
	store  store.Store
	rec    *recorder
	reg    cache.ResourceEventHandlerRegistration
	cancel context.CancelFunc
	done   chan struct{}
}

// openStore opens url with the options of sel.
func openStore(t *testing.T, srv *apiserver.Server, url string, sel selection) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), url, storeOptions(t, sel.scope(srv)))
	if err != nil {
		t.Fatalf("open store %s: %v", url, err)
	}
	return s
}

// startInformer runs an informer of sel on the store at url with a
// recording handler. Cleanup stops it if the test has not.
func startInformer(t *testing.T, srv *apiserver.Server, url string, sel selection) *running {
	t.Helper()
	return startInformerOn(t, srv, openStore(t, srv, url, sel), sel)
}

func startInformerOn(t *testing.T, srv *apiserver.Server, s store.Store, sel selection) *running {
	t.Helper()
	inf, err := informer.New(sel.listWatch(srv.Client()), &corev1.ConfigMap{}, s, &informer.Options{
		Reflector: reflector.Options{
			Name: "e2e-configmaps",

			CatchUpWatchTimeout: 3 * time.Second,
			Backoff:             reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		},
	})

	if err != nil {
		t.Fatalf("informer.New: %v", err)
	}
	return runRecorded(t, inf, s)
}

// runRecorded adds a recording handler to inf, over store s, and runs it.
// Cleanup stops it if the test has not.
func runRecorded(t *testing.T, inf *informer.Informer, s store.Store) *running {
	t.Helper()
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	r := &running{inf: inf, store: s, rec: rec, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the informer, waits for Run to return and closes the store.
// It is idempotent.
func (r *running) stop(t *testing.T) {
	t.Helper()
	stopInformer(t, r.cancel, r.done, r.store)
}

// stopInformer cancels an informer's Run, waits until done is closed and
// closes its store (a store closed already is fine).
func stopInformer(t *testing.T, cancel context.CancelFunc, done <-chan struct{}, s store.Store) {
	t.Helper()
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("informer did not stop within %v", waitLimit)
	}
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("close store: %v", err)
	}
}

// waitSynced waits until the informer and its handler have synced.
func (r *running) waitSynced(t *testing.T) {
	t.Helper()
	waitAllSynced(t, r.inf, r.reg)
}

// waitAllSynced waits until inf and the registration reg have synced.
func waitAllSynced(t *testing.T, inf cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) {
	t.Helper()
	for _, c := range []cache.DoneChecker{inf.HasSyncedChecker(), reg.HasSyncedChecker()} {
		select {
		case <-c.Done():
		case <-time.After(waitLimit):
			t.Fatalf("%s did not sync within %v", c.Name(), waitLimit)
		}
	}
}

// state is a set of ConfigMaps by name: UID and resourceVersion.
type state map[string]version

type version struct{ UID, RV string }

// serverState lists sel from the API server.
func serverState(t *testing.T, c kubernetes.Interface, sel selection) state {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(sel.namespace).List(t.Context(), metav1.ListOptions{LabelSelector: sel.labels})
	if err != nil {
		t.Fatalf("list configmaps in %s: %v", sel.namespace, err)
	}
	out := state{}
	for _, cm := range list.Items {
		out[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	return out
}

// storeState is what s holds.
func storeState(t *testing.T, s cache.Store) state {
	t.Helper()
	out := state{}
	for _, obj := range s.List() {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("store holds a %T", obj)
		}
		out[cm.Name] = version{string(cm.UID), cm.ResourceVersion}
	}
	return out
}

// waitConverged waits until the store holds exactly what the server has.
func waitConverged(t *testing.T, c kubernetes.Interface, s cache.Store, sel selection) state {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		want := serverState(t, c, sel)
		got := storeState(t, s)
		diff := cmp.Diff(want, got)
		if diff == "" {
			return want
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not converge with the API server within %v (-server +store):\n%s", waitLimit, diff)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replayOf is what a restarted informer's handler gets first: OnAdd(obj,
// true) for every persisted object, sorted by name (replay order is the
// store's).
func replayOf(st state) []ev {
	var out []ev
	for name, v := range st {
		out = append(out, ev{Op: "add", Name: name, UID: v.UID, RV: v.RV, Initial: true})
	}
	sortByName(out)
	return out
}

func sortByName(evs []ev) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Name < evs[j].Name })
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// payload makes each ConfigMap about 1 KiB, like the measurements in
// DESIGN.md.
var payload = strings.Repeat("x", 1000)

func newConfigMap(ns, name, app, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Data:       map[string]string{"payload": payload, "data": data},
	}
}

func createConfigMap(t *testing.T, c kubernetes.Interface, ns, name, app string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), newConfigMap(ns, name, app, "v1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

func updateConfigMap(t *testing.T, c kubernetes.Interface, ns, name, data string) (old, cur *corev1.ConfigMap) {
	t.Helper()
	old, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap %s/%s: %v", ns, name, err)
	}
	upd := old.DeepCopy()
	upd.Data["data"] = data
	cur, err = c.CoreV1().ConfigMaps(ns).Update(t.Context(), upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update configmap %s/%s: %v", ns, name, err)
	}
	return old, cur
}

func deleteConfigMap(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	old, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap %s/%s: %v", ns, name, err)
	}
	// The precondition makes the delete hit exactly the object read.
	err = c.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}})
	if err != nil {
		t.Fatalf("delete configmap %s/%s: %v", ns, name, err)
	}
	return old
}

// createConfigMaps creates n ConfigMaps cm-00000... in ns, with label app
// alternating a and b, from a few goroutines.
func createConfigMaps(t *testing.T, c kubernetes.Interface, ns string, n int) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				cm := newConfigMap(ns, cmName(i), appOf(i), "v1")
				if _, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create configmap %s/%s: %w", ns, cm.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func cmName(i int) string { return fmt.Sprintf("cm-%05d", i) }

func appOf(i int) string {
	if i%2 == 0 {
		return "a"
	}
	return "b"
}

// bytesSent is what the API server sent for ConfigMaps in m: LIST
// responses and watch events (a streaming list's initial events, and
// resumed watches' events).
func bytesSent(m apiserver.Metrics) int64 {
	return m.ListBytes["configmaps"] + m.WatchEventBytes["configmaps"]
}
