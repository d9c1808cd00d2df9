package informer

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
	_ "github.com/informerdb/informerdb/store/badger"
	_ "github.com/informerdb/informerdb/store/bolt"
	_ "github.com/informerdb/informerdb/store/memdb"
	_ "github.com/informerdb/informerdb/store/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait in these tests. It is not a timing
// assertion: a correct informer gets there in milliseconds, and a wait that
// hits the limit means a lost notification.
const waitLimit = 30 * time.Second

// backend opens the stores of one registered backend for a test.
type backend struct {
	scheme string // the backend, "-file" for an in-process one with a snapshot file
	// open returns the test's store; restart returns the store an informer
	// started after a restart sees: the same object for memory (which only
	// lives as long as the process), the reopened database otherwise.
	open    func(t *testing.T) store.Store
	restart func(t *testing.T, s store.Store) store.Store
}

// backends returns the stores the behaviour tests run against: every
// backend, the in-process ones both as they are (a restart reuses the store
// object) and with a snapshot file (a restart closes and reopens it), the
// persistent ones reopened from disk.
func backends(t *testing.T) []backend {
	t.Helper()
	same := func(_ *testing.T, s store.Store) store.Store { return s }
	inDir := func(name, scheme, file string) backend {
		b := backend{scheme: name}
		var u string
		b.open = func(t *testing.T) store.Store {
			u = scheme + "://" + filepath.Join(t.TempDir(), file)
			return openStore(t, u)
		}
		b.restart = func(t *testing.T, s store.Store) store.Store {
			if err := s.Close(); err != nil {
				t.Fatalf("closing %s: %v", u, err)
			}
			return openStore(t, u)
		}
		return b
	}
	out := []backend{
		{scheme: "memory", open: func(t *testing.T) store.Store { return openStore(t, "memory://") }, restart: same},
		{scheme: "memdb", open: func(t *testing.T) store.Store { return openStore(t, "memdb://") }, restart: same},
		inDir("memory-file", "memory", "cache.snap"),
		inDir("memdb-file", "memdb", "cache.snap"),
		inDir("bolt", "bolt", "cache.db"),
		inDir("badger", "badger", ""),
	}
	return out
}

// forEachBackend runs f as a subtest per registered backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends(t) {
		t.Run("backend="+b.scheme, func(t *testing.T) { f(t, b) })
	}
}

func openStore(t *testing.T, rawURL string) store.Store {
	t.Helper()
	codec, err := indexer.NewCodec(&corev1.ConfigMap{})
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	opts := &store.Options{Name: "v1/configmaps", Codec: codec}
	if u, _ := url.Parse(rawURL); u.Scheme == "bolt" || u.Scheme == "badger" {
		opts.Durability = store.DurabilityNoSync // tests do not survive power loss
	}
	s, err := store.Open(t.Context(), rawURL, opts)
	if err != nil {
		t.Fatalf("opening %s: %v", rawURL, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testOptions are Options for tests: no group-commit delay, no streaming
// list (fakeLW does not serve it), fast reflector backoff.
func testOptions() Options {
	o := Options{MaxBatchDelay: NoBatchDelay}
	o.Reflector.WatchList = ptr.To(false)
	o.Reflector.Backoff.Initial = time.Millisecond
	o.Reflector.Backoff.Max = 10 * time.Millisecond
	return o
}

// running is an informer running in the background.
type running struct {
	inf    *Informer
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs inf until the test ends or stop is called.
func start(t *testing.T, inf *Informer) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{inf: inf, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(r.stop)
	return r
}

// stop stops the informer and waits for Run to return.
func (r *running) stop() {
	r.cancel()
	<-r.done
}

// waitDone waits for a DoneChecker.
func waitDone(t *testing.T, what string, c cache.DoneChecker) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(waitLimit):
		t.Fatalf("%s (%s) not done after %v", what, c.Name(), waitLimit)
	}
}

// ev is one recorded handler call, reduced to what tests compare.
type ev struct {
	Op      string // add, update, delete
	Key     string
	Value   string // data "v" of the new object (deleted object for delete)
	OldVal  string // update: data "v" of the old object
	UID     string
	OldUID  string
	Initial bool // add: isInInitialList
	Tomb    bool // delete: a DeletedFinalStateUnknown
}

// recorder is a handler that records every call. If gate is set, every
// call first waits for it to be closed.
type recorder struct {
	gate    chan struct{}
	mu      sync.Mutex
	events  []ev
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) record(e ev) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func cmOf(obj interface{}) *corev1.ConfigMap {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, _ := obj.(*corev1.ConfigMap)
	return cm
}

func keyOf(obj interface{}) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

func (r *recorder) OnAdd(obj interface{}, initial bool) {
	cm := cmOf(obj)
	r.record(ev{Op: "add", Key: keyOf(obj), Value: cm.Data["v"], UID: string(cm.UID), Initial: initial})
}

func (r *recorder) OnUpdate(oldObj, newObj interface{}) {
	o, n := cmOf(oldObj), cmOf(newObj)
	r.record(ev{Op: "update", Key: keyOf(newObj), Value: n.Data["v"], OldVal: o.Data["v"], UID: string(n.UID), OldUID: string(o.UID)})
}

func (r *recorder) OnDelete(obj interface{}) {
	_, tomb := obj.(cache.DeletedFinalStateUnknown)
	e := ev{Op: "delete", Key: keyOf(obj), Tomb: tomb}
	if cm := cmOf(obj); cm != nil {
		e.Value, e.UID = cm.Data["v"], string(cm.UID)
	} else {
		e.Value = "<nil object>"
	}
	r.record(e)
}

// wait returns the first n events once there are at least n.
func (r *recorder) wait(t *testing.T, n int) []ev {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		r.mu.Lock()
		if len(r.events) >= n {
			out := append([]ev(nil), r.events[:n]...)
			r.mu.Unlock()
			return out
		}
		got := len(r.events)
		r.mu.Unlock()
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("handler got %d events, want %d after %v", got, n, waitLimit)
		}
	}
}

// all returns every event so far.
func (r *recorder) all() []ev {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ev(nil), r.events...)
}

// storeValues returns key -> data "v" for every object in s.
func storeValues(s cache.Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		cm := obj.(*corev1.ConfigMap)
		out[keyOf(cm)] = cm.Data["v"]
	}
	return out
}

// sourceValues returns key -> data "v" for every object of f.
func (f *fakeLW) values() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, cm := range f.objs {
		out[k] = cm.Data["v"]
	}
	return out
}

func newInformer(t *testing.T, lw cache.ListerWatcherWithContext, s store.Store, opts Options) *Informer {
	t.Helper()
	inf, err := New(lw, &corev1.ConfigMap{}, s, &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return inf
}

func addHandler(t *testing.T, inf *Informer, h cache.ResourceEventHandler) cache.ResourceEventHandlerRegistration {
	t.Helper()
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	return reg
}

// pollUntil waits, within waitLimit, until mismatch returns "".
func pollUntil(t *testing.T, what string, mismatch func() string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		m := mismatch()
		if m == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not there after %v: %s", what, waitLimit, m)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitQueued waits until inf's queue holds at least n entries.
func waitQueued(t *testing.T, inf *Informer, n int) {
	t.Helper()
	pollUntil(t, fmt.Sprintf("the queue to hold %d entries", n), func() string {
		if q := inf.Stats().Queued; q < int64(n) {
			return fmt.Sprintf("%d queued", q)
		}
		return ""
	})
}
