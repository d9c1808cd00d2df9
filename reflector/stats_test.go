package reflector

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

var errReplace = errors.New("replace refused")

// failReplaces makes the first n Replace calls of h's queue fail, and
// records Stats.Relists as each Replace call begins: what a reader sees
// while the queue holds the list (an informer may apply it, and report
// synced, before Replace returns).
func failReplaces(h *harness, n int) func() []RelistStats {
	var mu sync.Mutex
	var seen []RelistStats
	h.q.gate = func(op string) {
		if op != "replace" {
			return
		}
		s := h.r.Stats().Relists
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
		h.q.mu.Lock()
		defer h.q.mu.Unlock()
		if n > 0 {
			n--
			h.q.err = errReplace
		} else {
			h.q.err = nil
		}
	}
	return func() []RelistStats {
		mu.Lock()
		defer mu.Unlock()
		return append([]RelistStats(nil), seen...)
	}
}

// TestRelistCountedOncePerRelist checks Stats.Relists when the queue
// refuses a relist's Replace: the relist is listed again and handed over
// again, and counted once, already when the queue first gets it.
func TestRelistCountedOncePerRelist(t *testing.T) {
	tests := []struct {
		name    string
		resume  string
		lists   []listResult
		watches []watchResult
		wantLW  []lwCall
		wantQ   []qCall
		want    RelistStats
	}{
		{
			name:   "cold",
			lists:  []listResult{{obj: cmList("10", "", cm("a", "5"))}, {obj: cmList("11", "", cm("a", "5"))}},
			wantLW: []lwCall{fullList, fullList, watchCall("11", "normal")},
			wantQ: []qCall{
				{Op: "replace", RV: "10", Keys: []string{"ns/a"}},
				{Op: "replace", RV: "11", Keys: []string{"ns/a"}},
			},
			want: RelistStats{Cold: 1},
		},
		{
			name:    "expired",
			resume:  "100",
			lists:   []listResult{{obj: cmList("150", "")}, {obj: cmList("160", "", cm("a", "140"))}, {obj: cmList("170", "", cm("a", "140"))}},
			watches: []watchResult{{err: expiredErr()}},
			wantLW:  []lwCall{probeCall, watchCall("100", catchUpSeconds), fullList, fullList, watchCall("170", "normal")},
			wantQ: []qCall{
				{Op: "replace", RV: "160", Keys: []string{"ns/a"}},
				{Op: "replace", RV: "170", Keys: []string{"ns/a"}},
			},
			want: RelistStats{Expired: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: tc.resume}, tc.lists, tc.watches)
			seen := failReplaces(h, 1)
			h.start()
			h.stepWhenWaiting() // the backoff after the refused Replace
			if d := cmp.Diff(tc.wantLW, h.waitLWCalls(len(tc.wantLW))); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantQ, h.q.Calls()); d != "" {
				t.Errorf("queue calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, h.r.Stats().Relists); d != "" {
				t.Errorf("Stats.Relists after a refused and a retried Replace (-want +got):\n%s", d)
			}
			// Counted before the queue had it: a reader that sees the
			// informer synced sees the relist counted.
			if d := cmp.Diff([]RelistStats{tc.want, tc.want}, seen()); d != "" {
				t.Errorf("Stats.Relists as each Replace began (-want +got):\n%s", d)
			}
			if errs := h.rec.Errs(); len(errs) == 0 || !errors.Is(errs[len(errs)-1], errReplace) {
				t.Errorf("watch error handler got %v, want the refused Replace last", errs)
			}
		})
	}
}

func notFoundErr() *apierrors.StatusError {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
}

// TestGoneCountsOnlyStoresEmptied checks that Stats.Relists.Gone counts the
// stores a 404 emptied, once per absence, and not a 404 met by a store that
// holds nothing (a cold start, an empty list) or a 404 on a watch of a
// resource that is still served.
func TestGoneCountsOnlyStoresEmptied(t *testing.T) {
	emptied := qCall{Op: "replace", RV: "", Keys: []string{}}
	tests := []struct {
		name    string
		resume  string
		lists   []listResult
		watches []watchResult
		// failReplaces makes the first Replace calls fail.
		failReplaces int
		// steps is how many backoffs the test clocks through.
		steps  int
		wantLW []lwCall
		wantQ  []qCall
		want   RelistStats
	}{
		{
			name:   "cold start, nothing to empty",
			lists:  []listResult{{err: notFoundErr()}, {obj: cmList("10", "", cm("a", "5"))}},
			steps:  1,
			wantLW: []lwCall{fullList, fullList, watchCall("10", "normal")},
			wantQ:  []qCall{emptied, {Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
			want:   RelistStats{Cold: 1},
		},
		{
			name:   "resume, gone while down",
			resume: "100",
			lists: []listResult{{err: notFoundErr()}, {obj: cmList("10", "")},
				{obj: cmList("10", "", cm("a", "5"))}},
			steps:  1,
			wantLW: []lwCall{probeCall, probeCall, fullList, watchCall("10", "normal")},
			wantQ:  []qCall{emptied, {Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
			want:   RelistStats{Gone: 1, Cold: 1},
		},
		{
			name:   "resume, emptying retried",
			resume: "100",
			lists: []listResult{{err: notFoundErr()}, {err: notFoundErr()}, {obj: cmList("10", "")},
				{obj: cmList("10", "", cm("a", "5"))}},
			failReplaces: 1,
			steps:        2,
			wantLW:       []lwCall{probeCall, probeCall, probeCall, fullList, watchCall("10", "normal")},
			wantQ:        []qCall{emptied, emptied, {Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
			want:         RelistStats{Gone: 1, Cold: 1},
		},
		{
			name:    "watch 404, still served",
			resume:  "100",
			lists:   []listResult{{obj: cmList("150", "")}, {obj: cmList("160", "")}},
			watches: []watchResult{{w: watcher(true, added("a", "120"), errEvent(notFoundErr()))}},
			steps:   1,
			// A probe tells, not a full list; the watch goes on from where
			// it was.
			wantLW: []lwCall{probeCall, watchCall("100", catchUpSeconds), probeCall, watchCall("120", catchUpSeconds)},
			wantQ:  []qCall{{Op: "add", Key: "ns/a", RV: "120"}},
			want:   RelistStats{},
		},
		{
			name:    "watch 404 after a list of objects",
			lists:   []listResult{{obj: cmList("10", "", cm("a", "5"))}, {err: notFoundErr()}, {obj: cmList("20", "", cm("a", "5"))}},
			watches: []watchResult{{err: notFoundErr()}},
			steps:   2,
			wantLW:  []lwCall{fullList, watchCall("10", "normal"), probeCall, fullList, watchCall("20", "normal")},
			wantQ: []qCall{
				{Op: "replace", RV: "10", Keys: []string{"ns/a"}}, emptied,
				{Op: "replace", RV: "20", Keys: []string{"ns/a"}},
			},
			want: RelistStats{Cold: 2, Gone: 1},
		},
		{
			name:    "watch 404 after an empty list",
			lists:   []listResult{{obj: cmList("10", "")}, {err: notFoundErr()}, {obj: cmList("20", "")}},
			watches: []watchResult{{err: notFoundErr()}},
			steps:   2,
			wantLW:  []lwCall{fullList, watchCall("10", "normal"), probeCall, fullList, watchCall("20", "normal")},
			wantQ:   []qCall{{Op: "replace", RV: "10", Keys: []string{}}, emptied, {Op: "replace", RV: "20", Keys: []string{}}},
			want:    RelistStats{Cold: 2},
		},
		{
			name:    "watch 404 after an empty list and an added object",
			lists:   []listResult{{obj: cmList("10", "")}, {err: notFoundErr()}, {obj: cmList("20", "")}},
			watches: []watchResult{{w: watcher(true, added("a", "11"), errEvent(notFoundErr()))}},
			steps:   2,
			wantLW:  []lwCall{fullList, watchCall("10", "normal"), probeCall, fullList, watchCall("20", "normal")},
			wantQ: []qCall{
				{Op: "replace", RV: "10", Keys: []string{}}, {Op: "add", Key: "ns/a", RV: "11"}, emptied,
				{Op: "replace", RV: "20", Keys: []string{}},
			},
			want: RelistStats{Cold: 2, Gone: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: tc.resume}, tc.lists, tc.watches)
			if tc.failReplaces > 0 {
				failReplaces(h, tc.failReplaces)
			}
			h.start()
			for i := 0; i < tc.steps; i++ {
				h.stepWhenWaiting()
			}
			if d := cmp.Diff(tc.wantLW, h.waitLWCalls(len(tc.wantLW))); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantQ, h.q.Calls()); d != "" {
				t.Errorf("queue calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, h.r.Stats().Relists); d != "" {
				t.Errorf("Stats.Relists (-want +got):\n%s", d)
			}
			emptying := 0
			for _, l := range defaultLogs(h) {
				if strings.Contains(l, "emptying the store") {
					emptying++
				}
			}
			if int64(emptying) != tc.want.Gone {
				t.Errorf("%d default-verbosity lines say the store is emptied, want %d (one per counted absence): %q", emptying, tc.want.Gone, defaultLogs(h))
			}
		})
	}
}

// TestRejectedWatchBacksOffAndIsReported checks what a watch the server
// rejects (400 Bad Request, 422 Invalid: a field selector it does not
// support) does: like client-go, it is reported through the watch error
// handler and retried after a growing backoff, for ever, without a full
// list (a LIST would only be rejected too). With a negative CatchUpDeadline
// the resume is never given up.
func TestRejectedWatchBacksOffAndIsReported(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "",
		field.ErrorList{field.NotSupported[string](field.NewPath("fieldSelector"), "spec.x", nil)})
	badRequest := apierrors.NewBadRequest("unable to parse requirement")
	h := newHarness(t, Options{ResumeFrom: "100", CatchUpDeadline: -time.Second, CatchUpWatchTimeout: -1,
		// Next to no jitter, so that each delay is known to the microsecond.
		Backoff: Backoff{Initial: time.Second, Max: time.Minute, Factor: 2, Jitter: 1e-9}},
		[]listResult{{obj: cmList("200", "")}},
		[]watchResult{{err: badRequest}, {w: watcher(true, errEvent(invalid))}, {err: invalid}, {err: badRequest}})
	var mu sync.Mutex
	var handed []*cache.Reflector
	report := h.r.opts.WatchErrorHandler
	h.r.opts.WatchErrorHandler = func(ctx context.Context, r *cache.Reflector, err error) {
		mu.Lock()
		handed = append(handed, r)
		mu.Unlock()
		report(ctx, r, err)
	}
	h.start()
	want := []lwCall{probeCall}
	for i := 0; i < 4; i++ {
		want = append(want, watchCall("100", "normal"))
		h.waitFor("a backoff timer", h.clock.HasWaiters)
		if d := cmp.Diff(want, h.lw.Calls()); d != "" {
			t.Fatalf("failure %d: calls before its backoff (-want +got):\n%s", i+1, d)
		}
		errs := h.rec.Errs()
		if len(errs) != i+1 || (!apierrors.IsBadRequest(errs[i]) && !apierrors.IsInvalid(errs[i])) {
			t.Fatalf("failure %d: watch error handler got %v, want each rejection reported once", i+1, errs)
		}
		// The delay doubles: 1s, 2s, 4s, 8s. A moment short of it the
		// reflector still waits.
		delay := time.Second << i
		h.clock.Step(delay - time.Millisecond)
		if !h.clock.HasWaiters() {
			t.Fatalf("failure %d: retried before %v", i+1, delay)
		}
		h.clock.Step(2 * time.Millisecond)
	}
	want = append(want, watchCall("100", "normal"))
	h.waitLWCalls(len(want))
	if d := cmp.Diff(want, h.lw.Calls()); d != "" {
		t.Errorf("list/watch calls (-want +got):\n%s", d)
	}
	// The open watch has no deadline timer: the resume is not given up.
	h.clock.Step(24 * time.Hour)
	if h.clock.HasWaiters() {
		t.Errorf("a timer waits on the open watch; a negative CatchUpDeadline must not give the resume up")
	}
	if s := h.r.Stats(); s.Relists != (RelistStats{}) || s.Watches != 5 {
		t.Errorf("Stats = %+v, want 5 watches and no relist", s)
	}
	if _, ok := h.r.CaughtUpResourceVersion(); ok {
		t.Errorf("caught up although no watch got past the resume point")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range handed {
		if r != nil {
			t.Errorf("watch error handler call %d got *cache.Reflector %p, want nil as documented", i, r)
		}
	}
}

// TestNegativeCatchUpDeadlineIsAccepted pins the documented meaning of a
// negative CatchUpDeadline (never give the resume up), which the harness
// and users rely on; it is not an invalid argument.
func TestNegativeCatchUpDeadlineIsAccepted(t *testing.T) {
	r, err := New(&fakeLW{n: newNotifier()}, &fakeQueue{n: newNotifier()}, &Options{CatchUpDeadline: -time.Nanosecond})
	if err != nil {
		t.Fatalf("New with a negative CatchUpDeadline: %v", err)
	}
	if r.opts.CatchUpDeadline >= 0 {
		t.Errorf("CatchUpDeadline became %v, want it kept negative (never)", r.opts.CatchUpDeadline)
	}
}

// TestDroppedEventsAreCounted checks Stats.Dropped: events the reflector
// could not use and events the queue refused are lost for good (the resume
// point moves past them, as in client-go), so they are counted for metrics.
func TestDroppedEventsAreCounted(t *testing.T) {
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name, secret.ResourceVersion = "ns", "s", "103"
	tests := []struct {
		name     string
		queueErr error
		events   []watch.Event
		want     Stats
	}{
		{
			name:     "refused by the queue",
			queueErr: errors.New("key function failed"),
			events:   []watch.Event{added("a", "101"), modified("a", "102"), bookmark("103")},
			want:     Stats{Lists: 1, Watches: 1, Resumes: 1, Events: 2, Bookmarks: 1, Dropped: 2},
		},
		{
			name: "not usable",
			events: []watch.Event{{Type: watch.Added, Object: secret}, {Type: "SURPRISE", Object: cm("x", "102")},
				added("a", "103")},
			want: Stats{Lists: 1, Watches: 1, Resumes: 1, Events: 1, Dropped: 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: "100", ExpectedType: &corev1.ConfigMap{}},
				[]listResult{{obj: cmList("100", "")}}, []watchResult{{w: watcher(false, tc.events...)}})
			h.q.err = tc.queueErr
			h.start()
			h.waitFor("the events to be handled", func() bool {
				// Reports and counters come before the resourceVersion.
				return h.r.LastSyncResourceVersion() == "103"
			})
			if d := cmp.Diff(tc.want, h.r.Stats(), ignoreTimes); d != "" {
				t.Errorf("Stats (-want +got):\n%s", d)
			}
		})
	}
}

// ignoreTimes leaves out the timestamps of Stats, checked by TestResumeMakesOneProbeAndWatchesFromResumePoint.
var ignoreTimes = cmpopts.IgnoreFields(Stats{}, "StartedAt", "TargetAt", "CaughtUpAt")
