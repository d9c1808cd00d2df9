package informer

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// fakeLW is an in-memory API server for ConfigMaps: it keeps objects, a
// global resourceVersion and the history of events, serves consistent
// lists, and watches from any resourceVersion not older than the last
// compaction (older ones get 410 Gone, as after an etcd compaction). It
// records every list and watch request. It is safe for concurrent use.
type fakeLW struct {
	mu        sync.Mutex
	rv        int64
	compacted int64 // watches from an RV below this get 410
	objs      map[string]*corev1.ConfigMap
	history   []watch.Event
	watchers  map[*fakeWatcher]struct{}
	lists     []metav1.ListOptions
	watches   []metav1.ListOptions
	uid       int
	// gate, when set, holds back every watch event until it is closed.
	gate chan struct{}
	// noBookmarks turns off the bookmark sent when a watch starts.
	noBookmarks bool
	// opaque makes resourceVersions non-numeric ("r5"), as some aggregated
	// APIs do: they cannot be compared.
	opaque bool
	// muted watches get no more events (the history still records them),
	// as if the connection had stalled.
	muted bool
	// gone makes lists and watches fail with 404, as for a resource whose
	// CRD was deleted.
	gone bool
}

var _ cache.ListerWatcherWithContext = (*fakeLW)(nil)

func newFakeLW() *fakeLW {
	return &fakeLW{objs: map[string]*corev1.ConfigMap{}, watchers: map[*fakeWatcher]struct{}{}}
}

func (f *fakeLW) fmtRV(n int64) string {
	if f.opaque {
		return "r" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

func parseRV(s string) (int64, error) {
	return strconv.ParseInt(strings.TrimPrefix(s, "r"), 10, 64)
}

func cmKey(ns, name string) string { return ns + "/" + name }

// emitLocked records e and sends it to every open watcher.
func (f *fakeLW) emitLocked(e watch.Event) {
	f.history = append(f.history, e)
	if f.muted {
		return
	}
	for w := range f.watchers {
		w.send(e)
	}
}

// create adds a ConfigMap and returns it.
func (f *fakeLW) create(ns, name, value string) *corev1.ConfigMap {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := cmKey(ns, name)
	if _, ok := f.objs[k]; ok {
		panic("fakeLW: create of existing " + k)
	}
	f.rv++
	f.uid++
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: f.fmtRV(f.rv),
			UID: types.UID(fmt.Sprintf("uid-%d", f.uid)), Labels: map[string]string{"app": "test"},
		},
		Data: map[string]string{"v": value},
	}
	f.objs[k] = cm
	f.emitLocked(watch.Event{Type: watch.Added, Object: cm.DeepCopy()})
	return cm.DeepCopy()
}

// update sets the value of an existing ConfigMap.
func (f *fakeLW) update(ns, name, value string) *corev1.ConfigMap {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := cmKey(ns, name)
	old, ok := f.objs[k]
	if !ok {
		panic("fakeLW: update of missing " + k)
	}
	f.rv++
	cm := old.DeepCopy()
	cm.ResourceVersion = f.fmtRV(f.rv)
	cm.Data = map[string]string{"v": value}
	f.objs[k] = cm
	f.emitLocked(watch.Event{Type: watch.Modified, Object: cm.DeepCopy()})
	return cm.DeepCopy()
}

// remove deletes a ConfigMap.
func (f *fakeLW) remove(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := cmKey(ns, name)
	old, ok := f.objs[k]
	if !ok {
		panic("fakeLW: delete of missing " + k)
	}
	f.rv++
	cm := old.DeepCopy()
	cm.ResourceVersion = f.fmtRV(f.rv)
	delete(f.objs, k)
	f.emitLocked(watch.Event{Type: watch.Deleted, Object: cm})
}

// setGone makes the resource unserved (lists and watches get 404) or
// served again; going away ends the open watches, as the API server does
// when a CRD is deleted. Objects stay, as for a CRD re-created with them.
func (f *fakeLW) setGone(gone bool) {
	f.mu.Lock()
	f.gone = gone
	var open []*fakeWatcher
	if gone {
		for w := range f.watchers {
			open = append(open, w)
		}
	}
	f.mu.Unlock()
	for _, w := range open {
		w.Stop() // takes f.mu to unregister
	}
}

// setGate makes watches opened from now on hold their events until gate is
// closed.
func (f *fakeLW) setGate(gate chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = gate
}

// muteWatches stops sending events to the open watches.
func (f *fakeLW) muteWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.muted = true
}

// expireWatches ends every open watch with a 410 Expired error event, as
// the API server does when a watcher falls too far behind.
func (f *fakeLW) expireWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.muted = false
	for w := range f.watchers {
		w.send(watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version").ErrStatus})
	}
}

// compact makes every resourceVersion before the current one too old to
// watch from.
func (f *fakeLW) compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted = f.rv
}

// currentRV returns the current resourceVersion.
func (f *fakeLW) currentRV() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fmtRV(f.rv)
}

// fullLists returns the number of list requests other than the limit=1
// freshness probe.
func (f *fakeLW) fullLists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fullListsLocked()
}

func (f *fakeLW) fullListsLocked() int {
	n := 0
	for _, o := range f.lists {
		if o.Limit != 1 {
			n++
		}
	}
	return n
}

// probes returns the number of limit=1 list requests.
func (f *fakeLW) probes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, o := range f.lists {
		if o.Limit == 1 {
			n++
		}
	}
	return n
}

// ListWithContext serves a consistent list of every object (a limit=1
// probe gets at most one item).
func (f *fakeLW) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, opts)
	if f.gone {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), "")
	}
	keys := make([]string, 0, len(f.objs))
	for k := range f.objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: f.fmtRV(f.rv)}}
	for _, k := range keys {
		if opts.Limit == 1 && len(list.Items) == 1 {
			list.Continue = "more"
			break
		}
		list.Items = append(list.Items, *f.objs[k].DeepCopy())
	}
	return list, nil
}

// WatchWithContext streams the events after opts.ResourceVersion, then a
// bookmark at the current resourceVersion when bookmarks are allowed (the
// server telling the client it has caught up), then live events.
func (f *fakeLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches = append(f.watches, opts)
	if f.gone {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), "")
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("fakeLW: sendInitialEvents is not supported")
	}
	from, err := parseRV(opts.ResourceVersion)
	if err != nil {
		from = f.rv
	}
	if from < f.compacted {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, f.compacted))
	}
	w := newFakeWatcher(ctx, f.gate, func(w *fakeWatcher) {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.watchers, w)
	})
	for _, e := range f.history {
		if rvOf(e.Object) > from {
			w.send(e)
		}
	}
	if opts.AllowWatchBookmarks && !f.noBookmarks {
		w.send(watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: f.fmtRV(f.rv)},
		}})
	}
	f.watchers[w] = struct{}{}
	return w, nil
}

func rvOf(obj runtime.Object) int64 {
	cm := obj.(*corev1.ConfigMap)
	n, _ := parseRV(cm.ResourceVersion)
	return n
}

// fakeWatcher is a watch.Interface with an unbounded buffer, pumped by one
// goroutine that ends on Stop or when its context is done.
type fakeWatcher struct {
	result  chan watch.Event
	done    chan struct{} // closed by Stop
	mu      sync.Mutex
	cond    *sync.Cond
	buf     []watch.Event
	stopped bool
	once    sync.Once
	onStop  func(*fakeWatcher)
	stopCtx func() bool
	gate    chan struct{}
}

func newFakeWatcher(ctx context.Context, gate chan struct{}, onStop func(*fakeWatcher)) *fakeWatcher {
	w := &fakeWatcher{result: make(chan watch.Event), done: make(chan struct{}), onStop: onStop, gate: gate}
	w.cond = sync.NewCond(&w.mu)
	stop := context.AfterFunc(ctx, w.Stop)
	w.mu.Lock()
	w.stopCtx = stop
	w.mu.Unlock()
	go w.pump()
	return w
}

func (w *fakeWatcher) send(e watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, e)
	w.cond.Signal()
}

func (w *fakeWatcher) pump() {
	defer close(w.result)
	if w.gate != nil {
		select {
		case <-w.gate:
		case <-w.done:
			return
		}
	}
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		e := w.buf[0]
		w.buf = w.buf[1:]
		w.mu.Unlock()
		select {
		case w.result <- e:
		case <-w.done:
			return
		}
	}
}

func (w *fakeWatcher) Stop() {
	w.once.Do(func() {
		w.mu.Lock()
		w.stopped = true
		w.cond.Broadcast()
		stop := w.stopCtx
		w.mu.Unlock()
		close(w.done)
		if stop != nil {
			stop()
		}
		w.onStop(w)
	})
}

func (w *fakeWatcher) ResultChan() <-chan watch.Event { return w.result }
