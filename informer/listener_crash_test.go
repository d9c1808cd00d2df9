package informer

import (
	"slices"
	"sync"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// TestHandlerPanicPause pins client-go v0.37's processorListener.run: with
// utilruntime.ReallyCrash off, a panic of the handler is recovered, the
// notification is skipped, and the next call comes one second later, so
// that a handler panicking on every object does not spin a core. The
// listener waits on the informer's clock; a fake one makes the test
// deterministic. It changes the process-wide ReallyCrash, so it does not
// run in parallel.
func TestHandlerPanicPause(t *testing.T) {
	defer func(v bool) { utilruntime.ReallyCrash = v }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false

	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	var mu sync.Mutex
	var heard []string
	called := make(chan string, 10)
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		name := obj.(string)
		mu.Lock()
		heard = append(heard, name)
		mu.Unlock()
		called <- name
		if name == "panics" || name == "panics too" {
			panic("handler fails on " + name)
		}
	}}
	p := newProcessor(clk)
	l := newListener(klog.Background(), h, 0, 0, clk.Now())
	p.add(l)
	p.start()
	defer p.stop()
	notes := func(names ...string) []queuedNote {
		out := make([]queuedNote, len(names))
		for i, n := range names {
			out[i] = queuedNote{n: notification{kind: notifyAdd, newObj: n}, op: -1}
		}
		return out
	}
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-called:
			if got != want {
				t.Fatalf("handler called with %q; want %q", got, want)
			}
		case <-time.After(waitLimit):
			t.Fatalf("handler not called with %q after %v", want, waitLimit)
		}
	}
	waitPaused := func() {
		t.Helper()
		pollUntil(t, "the listener to pause", func() string {
			if !clk.HasWaiters() {
				return "no timer"
			}
			return ""
		})
	}

	p.distribute(notes("ok", "panics", "next"), nil, false)
	wait("ok")
	wait("panics")
	// The listener waits on its timer: "next" cannot come before the
	// clock moves a whole second.
	waitPaused()
	clk.Step(crashPause - time.Millisecond)
	if !clk.HasWaiters() {
		t.Fatal("the pause ended before a second passed")
	}
	select {
	case got := <-called:
		t.Fatalf("handler called with %q during the pause", got)
	default:
	}
	clk.Step(time.Millisecond)
	wait("next")

	// No pause after a call that returned: "after" follows at once, and
	// a second panic pauses again.
	p.distribute(notes("after", "panics too", "last"), nil, false)
	wait("after")
	wait("panics too")
	waitPaused()
	clk.Step(crashPause)
	wait("last")
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"ok", "panics", "next", "after", "panics too", "last"}; !slices.Equal(heard, want) {
		t.Errorf("handler heard %q; want %q", heard, want)
	}
}

// TestHandlerPanicPauseEndsOnClose: a listener removed during its pause
// returns at once, without waiting for the clock.
func TestHandlerPanicPauseEndsOnClose(t *testing.T) {
	defer func(v bool) { utilruntime.ReallyCrash = v }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false

	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) { panic("always") }}
	p := newProcessor(clk)
	l := newListener(klog.Background(), h, 0, 0, clk.Now())
	p.add(l)
	p.start()
	defer p.stop()
	p.distribute([]queuedNote{
		{n: notification{kind: notifyAdd, newObj: "a"}, op: -1},
		{n: notification{kind: notifyAdd, newObj: "b"}, op: -1},
	}, nil, false)
	pollUntil(t, "the listener to pause", func() string {
		if !clk.HasWaiters() {
			return "no timer"
		}
		return ""
	})
	if !p.remove(l) {
		t.Fatal("remove: listener not registered")
	}
	select {
	case <-l.ShutdownChan():
	case <-time.After(waitLimit):
		t.Fatalf("listener still running %v after it was removed during its pause", waitLimit)
	}
}
