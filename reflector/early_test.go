package reflector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"
)

// startEarlyFor starts h's Early from resumeFrom with h's options, as a
// Factory does before it opens the store, and hands it to h's reflector.
func startEarlyFor(t *testing.T, h *harness, resumeFrom string) *Early {
	t.Helper()
	e, err := StartEarly(context.Background(), h.lw, h.r.opts, resumeFrom)
	if err != nil {
		t.Fatalf("StartEarly: %v", err)
	}
	h.r.opts.Early = e
	return e
}

// TestEarlyResume: the probe and the catch-up watch started before Run are
// the resume's: Run makes no request of its own, the early probe is the
// sync target, and the early watch's events and bookmark catch it up.
func TestEarlyResume(t *testing.T) {
	h := newHarness(t, Options{ResumeFrom: "100"},
		[]listResult{{obj: cmList("150", "", cm("a", "140"))}},
		[]watchResult{{w: watcher(false, added("b", "120"), modified("a", "130"), bookmark("150"))}})
	startEarlyFor(t, h, "100")
	h.waitLWCalls(2) // both requests made before Run
	h.start()
	waitClosed(t, h.r.CaughtUp(), "CaughtUp")
	wantQ := []qCall{{Op: "add", Key: "ns/b", RV: "120"}, {Op: "update", Key: "ns/a", RV: "130"}, {Op: "bookmark", RV: "150"}}
	if d := cmp.Diff(wantQ, h.waitQCalls(3)); d != "" {
		t.Errorf("queue calls (-want +got):\n%s", d)
	}
	calls := h.lw.Calls()
	if len(calls) != 2 {
		t.Errorf("list/watch calls %+v; want the early probe and watch only", calls)
	}
	if rv, ok := h.r.SyncTarget(); rv != "150" || !ok {
		t.Errorf("SyncTarget = %q, %v; want the early probe's 150", rv, ok)
	}
	if st := h.r.Stats(); st.Lists != 1 || st.Watches != 1 || st.Resumes != 1 {
		t.Errorf("Stats: %d lists, %d watches, %d resumes; want 1, 1, 1", st.Lists, st.Watches, st.Resumes)
	}
}

// TestEarlyNotUsed: an Early the reflector cannot use is stopped (its watch
// closed) and the reflector probes and watches itself: one started from
// another resume point (the store was written meanwhile), one older than a
// catch-up watch (its probe would make a stale sync target), one whose probe
// failed, and one given to a reflector that lists instead of resuming.
func TestEarlyNotUsed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from       string // the Early's resume point
		resumeFrom string // the reflector's
		probeErr   bool
		age        time.Duration
		wantProbe  bool // the reflector makes its own probe
	}{
		{name: "other resume point", from: "90", resumeFrom: "100", wantProbe: true},
		{name: "older than a catch-up watch", from: "100", resumeFrom: "100", age: DefaultCatchUpWatchTimeout, wantProbe: true},
		{name: "probe failed", from: "100", resumeFrom: "100", probeErr: true, wantProbe: true},
		{name: "cold start", from: "100", resumeFrom: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			early := watcher(false)
			lists := []listResult{{obj: cmList("150", "")}}
			if tc.wantProbe {
				lists = append(lists, listResult{obj: cmList("150", "")})
			}
			if tc.probeErr {
				lists = []listResult{{err: errors.New("early probe failed")}, {obj: cmList("150", "")}}
			}
			if tc.resumeFrom == "" {
				lists = append(lists, listResult{obj: cmList("150", "", cm("a", "140"))})
			}
			h := newHarness(t, Options{ResumeFrom: tc.resumeFrom}, lists, []watchResult{{w: early}})
			startEarlyFor(t, h, tc.from)
			h.waitLWCalls(2)
			h.clock.Step(tc.age)
			h.start()
			h.waitFor("the early watch stopped", early.IsStopped)
			if tc.wantProbe {
				waitClosed(t, h.r.TargetKnown(), "TargetKnown")
				calls := h.lw.Calls()
				if len(calls) < 3 || calls[2] != probeCall {
					t.Errorf("list/watch calls %+v; want the early probe and watch, then the reflector's probe", calls)
				}
			}
		})
	}
}

// TestEarlyStop: an Early no reflector takes is stopped, its watch closed
// once it is open, whether Stop comes before or after its requests
// returned; a second Stop does nothing.
func TestEarlyStop(t *testing.T) {
	for _, wait := range []bool{false, true} {
		h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("150", "")}}, []watchResult{{w: watcher(false)}})
		e := startEarlyFor(t, h, "100")
		if wait {
			h.waitLWCalls(2)
		}
		e.Stop()
		e.Stop()
		<-e.done
		h.waitFor("the early watch stopped", func() bool {
			w, ok := e.w.(*watch.RaceFreeFakeWatcher)
			return ok && w.IsStopped()
		})
	}
}
