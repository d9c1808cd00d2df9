package reflector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// notifier wakes every waiter when something a test may wait for changed.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}

// safetyTimeout only keeps a broken test from hanging; no assertion depends
// on it.
const safetyTimeout = 20 * time.Second

// waitFor blocks until cond holds, re-checking whenever n is notified.
func waitFor(t *testing.T, n *notifier, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(safetyTimeout)
	for {
		ch := n.wait()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Millisecond):
			// Some state (counters, the caught-up mark) changes just
			// after the queue call that notified; look again shortly.
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// lwCall is one request the fake ListerWatcher received, flattened for cmp.
type lwCall struct {
	Verb     string // "list" or "watch"
	RV       string
	Limit    int64
	Continue string
	Match    metav1.ResourceVersionMatch
	Initial  bool // sendInitialEvents=true
	Bookmark bool // allowWatchBookmarks
	// Timeout is "" when unset, "normal" when in [min, 2*min) of the
	// harness' MinWatchTimeout, else the number of seconds.
	Timeout string
}

type listResult struct {
	obj runtime.Object
	err error
}

type watchResult struct {
	w   watch.Interface
	err error
}

// fakeLW serves scripted list results and watches in order. Past the script,
// lists fail and watches stay open with no events.
type fakeLW struct {
	n          *notifier
	minTimeout time.Duration

	mu      sync.Mutex
	calls   []lwCall
	lists   []listResult
	watches []watchResult
	opened  []watch.Interface
	// unsupported makes it declare no watch-list semantics.
	unsupported bool
}

func (f *fakeLW) record(verb string, o metav1.ListOptions) {
	c := lwCall{Verb: verb, RV: o.ResourceVersion, Limit: o.Limit, Continue: o.Continue, Match: o.ResourceVersionMatch,
		Initial: o.SendInitialEvents != nil && *o.SendInitialEvents, Bookmark: o.AllowWatchBookmarks}
	if o.TimeoutSeconds != nil {
		s := *o.TimeoutSeconds
		lo := int64(f.minTimeout / time.Second)
		if s >= lo && s < 2*lo {
			c.Timeout = "normal"
		} else {
			c.Timeout = fmt.Sprint(s)
		}
	}
	f.calls = append(f.calls, c)
}

func (f *fakeLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	defer f.n.notify()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("list", o)
	if len(f.lists) == 0 {
		return nil, errors.New("fakeLW: no scripted list left")
	}
	r := f.lists[0]
	f.lists = f.lists[1:]
	return r.obj, r.err
}

func (f *fakeLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	defer f.n.notify()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("watch", o)
	if len(f.watches) == 0 {
		w := watch.NewRaceFreeFake()
		f.opened = append(f.opened, w)
		return w, nil
	}
	r := f.watches[0]
	f.watches = f.watches[1:]
	if r.w != nil {
		f.opened = append(f.opened, r.w)
	}
	return r.w, r.err
}

func (f *fakeLW) IsWatchListSemanticsUnSupported() bool { return f.unsupported }

func (f *fakeLW) Calls() []lwCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]lwCall(nil), f.calls...)
}

// qCall is one call the fake queue received.
type qCall struct {
	Op   string
	Key  string   // add, update, delete
	RV   string   // the object's RV, or the Replace/Bookmark RV
	Keys []string // replace: the listed keys, sorted
}

// fakeQueue records calls. gate, when set, is called first by every call and
// may block.
type fakeQueue struct {
	n    *notifier
	gate func(op string)

	mu    sync.Mutex
	calls []qCall
	err   error
}

func (q *fakeQueue) rec(op string, obj interface{}) error {
	if q.gate != nil {
		q.gate(op)
	}
	defer q.n.notify()
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, qCall{Op: op, Key: m.GetNamespace() + "/" + m.GetName(), RV: m.GetResourceVersion()})
	return q.err
}

func (q *fakeQueue) Add(obj interface{}) error    { return q.rec("add", obj) }
func (q *fakeQueue) Update(obj interface{}) error { return q.rec("update", obj) }
func (q *fakeQueue) Delete(obj interface{}) error { return q.rec("delete", obj) }

func (q *fakeQueue) Replace(list []interface{}, rv string) error {
	if q.gate != nil {
		q.gate("replace")
	}
	defer q.n.notify()
	keys := []string{}
	for _, o := range list {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		keys = append(keys, m.GetNamespace()+"/"+m.GetName())
	}
	sort.Strings(keys)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, qCall{Op: "replace", RV: rv, Keys: keys})
	return q.err
}

func (q *fakeQueue) Bookmark(rv string) error {
	if q.gate != nil {
		q.gate("bookmark")
	}
	defer q.n.notify()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, qCall{Op: "bookmark", RV: rv})
	return q.err
}

func (q *fakeQueue) Calls() []qCall {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]qCall(nil), q.calls...)
}

// recorder collects errors from the watch error handler and log lines.
type recorder struct {
	n    *notifier
	mu   sync.Mutex
	errs []error
	logs []string
}

func (r *recorder) Errs() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func (r *recorder) Logs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

type harness struct {
	t     *testing.T
	n     *notifier
	lw    *fakeLW
	q     *fakeQueue
	rec   *recorder
	clock *testingclock.FakeClock
	r     *Reflector

	cancel context.CancelFunc
	done   chan error
}

// newHarness builds a Reflector over scripted lists and watches with a fake
// clock. opts.WatchList defaults to false here so that tests of the
// paginated path need not script a failing streaming list.
func newHarness(t *testing.T, opts Options, lists []listResult, watches []watchResult) *harness {
	t.Helper()
	n := newNotifier()
	h := &harness{t: t, n: n, rec: &recorder{n: n}, clock: testingclock.NewFakeClock(time.Unix(1_000_000, 0))}
	if opts.MinWatchTimeout == 0 {
		opts.MinWatchTimeout = DefaultMinWatchTimeout
	}
	h.lw = &fakeLW{n: n, minTimeout: opts.MinWatchTimeout, lists: lists, watches: watches}
	h.q = &fakeQueue{n: n}
	if opts.WatchList == nil {
		f := false
		opts.WatchList = &f
	}
	if opts.Clock == nil {
		opts.Clock = h.clock
	}
	if opts.CatchUpDeadline == 0 {
		// Its timer would be one more waiter on the fake clock; the tests
		// of the deadline set it.
		opts.CatchUpDeadline = -1
	}
	opts.WatchErrorHandler = func(ctx context.Context, _ *cache.Reflector, err error) {
		h.rec.mu.Lock()
		h.rec.errs = append(h.rec.errs, err)
		h.rec.mu.Unlock()
		h.n.notify()
	}
	r, err := New(h.lw, h.q, &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.r = r
	return h
}

// start runs the Reflector with a logger that records default-verbosity
// lines.
func (h *harness) start() {
	h.t.Helper()
	logger := funcr.New(func(prefix, args string) {
		h.rec.mu.Lock()
		h.rec.logs = append(h.rec.logs, args)
		h.rec.mu.Unlock()
		h.n.notify()
	}, funcr.Options{Verbosity: 0})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() {
		h.done <- h.r.Run(ctx)
		h.n.notify()
	}()
	h.t.Cleanup(h.stop)
}

// stop cancels Run and checks that it returned nil. Idempotent.
func (h *harness) stop() {
	h.t.Helper()
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(safetyTimeout):
		h.t.Fatalf("Run did not return after cancel")
	}
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	waitFor(h.t, h.n, what, cond)
}

func (h *harness) waitLWCalls(n int) []lwCall {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("%d list/watch calls", n), func() bool { return len(h.lw.Calls()) >= n })
	return h.lw.Calls()
}

func (h *harness) waitQCalls(n int) []qCall {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("%d queue calls", n), func() bool { return len(h.q.Calls()) >= n })
	return h.q.Calls()
}

// settle waits until the Reflector has finished handling the last queue
// call: it updates its resourceVersion and counters right after the call.
func (h *harness) settle() {
	h.t.Helper()
	h.waitFor("the reflector to record the last queue call", func() bool {
		c := h.q.Calls()
		return len(c) > 0 && h.r.LastSyncResourceVersion() == c[len(c)-1].RV
	})
}

// stepWhenWaiting advances the fake clock once the Reflector waits on it
// (a backoff).
func (h *harness) stepWhenWaiting() {
	h.t.Helper()
	h.waitFor("a backoff timer", h.clock.HasWaiters)
	h.clock.Step(time.Hour)
}

// Objects.

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func bookmarkObj(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
}

func initialEventsEnd(rv string) *corev1.ConfigMap {
	o := bookmarkObj(rv)
	o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return o
}

func cmList(rv, cont string, items ...*corev1.ConfigMap) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, i := range items {
		l.Items = append(l.Items, *i)
	}
	return l
}

// goneErr is the 410 Gone that servers before 1.18 send for an expired
// resourceVersion; built by hand because apierrors.NewGone is deprecated,
// yet the reflector must still recognize the reason.
func goneErr() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusGone,
		Reason:  metav1.StatusReasonGone,
		Message: "gone",
	}}
}

func expiredErr() *apierrors.StatusError {
	return apierrors.NewResourceExpired("too old resource version: 100 (200)")
}

// tooLargeErr is what kube-apiserver's storage.NewTooLargeResourceVersionError
// builds.
func tooLargeErr() *apierrors.StatusError {
	err := apierrors.NewTimeoutError("Too large resource version: 300, current: 200", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// watcher returns a fake watch holding events; closed, it ends after them.
func watcher(closed bool, events ...watch.Event) *watch.RaceFreeFakeWatcher {
	w := watch.NewRaceFreeFake()
	for _, e := range events {
		w.Action(e.Type, e.Object)
	}
	if closed {
		w.Stop()
	}
	return w
}

func added(name, rv string) watch.Event { return watch.Event{Type: watch.Added, Object: cm(name, rv)} }
func modified(name, rv string) watch.Event {
	return watch.Event{Type: watch.Modified, Object: cm(name, rv)}
}
func deleted(name, rv string) watch.Event {
	return watch.Event{Type: watch.Deleted, Object: cm(name, rv)}
}
func bookmark(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: bookmarkObj(rv)}
}
func errEvent(err *apierrors.StatusError) watch.Event {
	return watch.Event{Type: watch.Error, Object: &err.ErrStatus}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// CaughtUpResourceVersion returns the resourceVersion of the list, event or
// bookmark that reached the sync target; ok is false until then.
func (r *Reflector) CaughtUpResourceVersion() (rv string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caughtUpRV, r.caughtUp
}
