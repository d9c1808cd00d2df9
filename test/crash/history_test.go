package crash_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// change is one change of a ConfigMap as the parent's own watch saw it,
// with the resourceVersion the API server gave it. Deletions carry the
// deletion's resourceVersion, which the DELETE response does not return:
// that is why the parent watches instead of trusting its own requests.
type change struct {
	RV      int64
	Name    string
	UID     string
	Deleted bool
}

// history is every change of the test namespace's ConfigMaps, in
// resourceVersion order, from the parent's watch. It is safe for concurrent
// use.
type history struct {
	mu      sync.Mutex // guards the fields below
	changes []change
	deleted map[string]bool // UIDs seen deleted
	states  map[string]bool // "name uid rv" of every state an object had
	lastRV  int64
	err     error         // a watch failure that ended the watch
	changed chan struct{} // closed and replaced on every change

	cancel context.CancelFunc // stops the running watch
	done   chan struct{}      // closed when it has returned
}

func newHistory() *history {
	return &history{deleted: map[string]bool{}, states: map[string]bool{}, changed: make(chan struct{})}
}

// start watches ns from resourceVersion rv until stop. The parent is the
// only writer of ns and makes no change between a stop and the next start,
// so restarting the watch from a fresh resourceVersion (after an API server
// restart, which makes the old one expire) loses nothing.
func (h *history) start(c kubernetes.Interface, ns string, rv string) {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		from := rv
		for ctx.Err() == nil {
			w, err := c.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: from})
			if err != nil {
				// Connection errors while the API server is down are
				// retried; the parent stops the watch before restarting it.
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			for e := range w.ResultChan() {
				if e.Type == watch.Error {
					if ctx.Err() != nil {
						w.Stop()
						return // stopped
					}
					h.fail(fmt.Errorf("history watch from %s: error event %+v", from, e.Object))
					w.Stop()
					return
				}
				cm, ok := e.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
				if err != nil {
					h.fail(fmt.Errorf("history watch: resourceVersion %q: %w", cm.ResourceVersion, err))
					w.Stop()
					return
				}
				h.add(change{RV: rv, Name: cm.Name, UID: string(cm.UID), Deleted: e.Type == watch.Deleted})
				from = cm.ResourceVersion
			}
			w.Stop()
		}
	}()
}

// stop stops the watch and waits for it to return.
func (h *history) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

func (h *history) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *history) add(c change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.RV <= h.lastRV {
		h.err = fmt.Errorf("history watch: change %+v does not come after resourceVersion %d", c, h.lastRV)
	}
	h.changes = append(h.changes, c)
	h.lastRV = c.RV
	if c.Deleted {
		h.deleted[c.UID] = true
	} else {
		h.states[stateKey(c.Name, c.UID, strconv.FormatInt(c.RV, 10))] = true
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// waitFor waits until the watch has seen resourceVersion rv and the
// deletion of every UID in deletes.
func (h *history) waitFor(t *testing.T, rv int64, deletes []string) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		err, ok, changed := h.err, h.lastRV >= rv, h.changed
		for _, uid := range deletes {
			ok = ok && h.deleted[uid]
		}
		h.mu.Unlock()
		if err != nil {
			t.Fatalf("%v", err)
		}
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("history watch did not see resourceVersion %d and deletions %v within %v", rv, deletes, waitLimit)
		}
	}
}

// at returns the state of ns at resourceVersion rv: every change at or
// before rv applied.
func (h *history) at(rv int64) state {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := state{}
	for _, c := range h.changes {
		if c.RV > rv {
			break
		}
		if c.Deleted {
			delete(out, c.Name)
		} else {
			out[c.Name] = version{UID: c.UID, RV: strconv.FormatInt(c.RV, 10)}
		}
	}
	return out
}

// since counts the changes after rv.
func (h *history) since(rv int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.changes {
		if c.RV > rv {
			n++
		}
	}
	return n
}

// known reports whether the history holds name at resourceVersion rv with
// uid: whether a notification carries a state the object really had.
func (h *history) known(name, uid, rv string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.states[stateKey(name, uid, rv)]
}

func stateKey(name, uid, rv string) string { return name + " " + uid + " " + rv }

// state is a set of ConfigMaps by name.
type state map[string]version

type version struct{ UID, RV string }
