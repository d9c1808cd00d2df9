package reflector

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRepeatedUnusableWatchRelistsBackOff checks that a watch that keeps
// failing with 410 or "too large resource version" right after each relist
// does not turn into back-to-back full LISTs. client-go waits a backoff
// before every ListAndWatch; this reflector relists at once the first time
// (the usual end of a resume from a too old point), but a relist that
// follows another one within Backoff.Reset waits a backoff first. Without
// it, a watch cache lagging behind etcd (the list is served from etcd, the
// watch from the list's resourceVersion gets "too large") or a server that
// expires every watch makes the reflector list the whole resource in a
// tight loop: the LIST storm the product exists to prevent.
func TestRepeatedUnusableWatchRelistsBackOff(t *testing.T) {
	t.Run("paginated list, 410 on every watch", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "100"},
			[]listResult{
				{obj: cmList("150", "")},
				{obj: cmList("160", "", cm("a", "140"))},
				{obj: cmList("170", "", cm("a", "140"))},
				{obj: cmList("180", "", cm("a", "140"))},
			},
			[]watchResult{{err: expiredErr()}, {err: expiredErr()}, {err: expiredErr()}, {err: expiredErr()}})
		h.start()
		h.waitFor("a backoff timer", h.clock.HasWaiters)
		want := []lwCall{probeCall, watchCall("100", catchUpSeconds), fullList, watchCall("160", "normal")}
		if d := cmp.Diff(want, h.lw.Calls()); d != "" {
			t.Fatalf("calls before the first backoff (-want +got):\n%s", d)
		}
		h.clock.Step(time.Minute)
		// The relist after the backoff is followed by another 410 at once,
		// within Backoff.Reset of it: the next relist waits again.
		want = append(want, fullList, watchCall("170", "normal"))
		h.waitLWCalls(len(want))
		h.waitFor("a backoff timer", h.clock.HasWaiters)
		if d := cmp.Diff(want, h.lw.Calls()); d != "" {
			t.Errorf("calls before the second backoff (-want +got):\n%s", d)
		}
		if s := h.r.Stats().Relists; s.Expired != 2 {
			t.Errorf("Stats.Relists = %+v, want 2 expired", s)
		}
	})
	t.Run("streaming list, too large on every watch", func(t *testing.T) {
		stream := func(rv string) watchResult {
			return watchResult{w: watcher(false,
				watch.Event{Type: watch.Bookmark, Object: initialEventsEnd(rv)},
				errEvent(tooLargeErr()))}
		}
		h := newAutoHarness(t, Options{}, nil, []watchResult{stream("10"), stream("20"), stream("30")})
		h.start()
		// Past the script the fake leaves a streaming list open: a
		// reflector that never backs off parks there.
		h.waitFor("a backoff timer or a fourth streaming list", func() bool {
			return h.clock.HasWaiters() || len(h.lw.Calls()) >= 4
		})
		// The watch the cold list left open fails at once: the relist
		// waits a backoff.
		want := []lwCall{streamCall}
		if d := cmp.Diff(want, h.lw.Calls()); d != "" {
			t.Fatalf("calls before the first backoff (-want +got):\n%s", d)
		}
		wantQ := []qCall{{Op: "replace", RV: "10", Keys: []string{}}}
		if d := cmp.Diff(wantQ, h.q.Calls()); d != "" {
			t.Errorf("queue calls (-want +got):\n%s", d)
		}
		h.clock.Step(time.Minute)
		want = append(want, streamCall)
		h.waitLWCalls(len(want))
		h.waitFor("a backoff timer", h.clock.HasWaiters)
		if d := cmp.Diff(want, h.lw.Calls()); d != "" {
			t.Errorf("calls before the second backoff (-want +got):\n%s", d)
		}
	})
}

// TestDisruptedWatchRelistsAfterOneBackoff pins client-go v0.37's reflector:
// after a watch disruption (a watch that closes early, or fails), it backs
// off once and relists (RunWithContext's backoff around
// ListAndWatchWithContext). This reflector watches again from where it was
// after the backoff, and when that watch finds its resourceVersion gone
// (410), it relists at once: the disruption has had its backoff. It waited
// a second one before, the relist following the previous one within
// Backoff.Reset.
func TestDisruptedWatchRelistsAfterOneBackoff(t *testing.T) {
	for _, tc := range []struct {
		name       string
		disruption watchResult
	}{
		{"watch closed early", watchResult{w: watcher(true)}},
		{"watch failed", watchResult{err: apierrors.NewInternalError(errors.New("boom"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{},
				[]listResult{{obj: cmList("10", "", cm("a", "5"))}, {obj: cmList("20", "", cm("a", "15"))}},
				[]watchResult{tc.disruption, {err: expiredErr()}})
			h.start()
			h.waitFor("the backoff after the disruption", h.clock.HasWaiters)
			want := []lwCall{fullList, watchCall("10", "normal")}
			if d := cmp.Diff(want, h.lw.Calls()); d != "" {
				t.Fatalf("calls before the backoff (-want +got):\n%s", d)
			}
			// Well within Backoff.Reset of the first list.
			h.clock.Step(time.Minute)
			want = append(want, watchCall("10", "normal"), fullList, watchCall("20", "normal"))
			h.waitFor("the relist, or a second backoff", func() bool {
				return len(h.lw.Calls()) >= len(want) || h.clock.HasWaiters()
			})
			if d := cmp.Diff(want, h.lw.Calls()); d != "" {
				t.Errorf("calls after one backoff (-want +got):\n%s", d)
			}
			if s := h.r.Stats().Relists; s.Expired != 1 {
				t.Errorf("Stats.Relists = %+v, want 1 expired", s)
			}
		})
	}
}
