package reflector

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// autoWatchList asks newHarness for WatchList nil (auto mode).
var autoWatchList = new(bool)

func newAutoHarness(t *testing.T, opts Options, lists []listResult, watches []watchResult) *harness {
	t.Helper()
	opts.WatchList = autoWatchList
	h := newHarness(t, opts, lists, watches)
	h.r.opts.WatchList = nil
	return h
}

var (
	probeCall = lwCall{Verb: "list", Limit: 1}
	fullList  = lwCall{Verb: "list", Limit: DefaultPageSize}
)

// catchUpSeconds is the timeoutSeconds of a catch-up watch with the
// default Options.CatchUpWatchTimeout.
var catchUpSeconds = strconv.Itoa(int(DefaultCatchUpWatchTimeout / time.Second))

func watchCall(rv, timeout string) lwCall {
	return lwCall{Verb: "watch", RV: rv, Bookmark: true, Timeout: timeout}
}

var streamCall = lwCall{Verb: "watch", Match: metav1.ResourceVersionMatchNotOlderThan, Initial: true, Bookmark: true, Timeout: "normal"}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(safetyTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func defaultLogs(h *harness) []string {
	var msgs []string
	for _, l := range h.rec.Logs() {
		// funcr writes "msg"="..." first after the level fields.
		i := strings.Index(l, `"msg"="`)
		if i < 0 {
			msgs = append(msgs, l)
			continue
		}
		rest := l[i+len(`"msg"="`):]
		// A message without its closing quote (cut short) is kept whole.
		msg, _, _ := strings.Cut(rest, `"`)
		msgs = append(msgs, msg)
	}
	return msgs
}

func TestNewRejectsBadInput(t *testing.T) {
	lw := &fakeLW{n: newNotifier()}
	q := &fakeQueue{n: newNotifier()}
	var nilQueue *fakeQueue
	tests := []struct {
		name string
		lw   *fakeLW
		q    Queue
		opts Options
		want string
	}{
		{"nil ListerWatcher", nil, q, Options{}, "ListerWatcher is nil"},
		{"nil Queue", lw, nil, Options{}, "Queue is nil"},
		{"typed nil Queue", lw, nilQueue, Options{}, "Queue is nil"},
		{"negative MinWatchTimeout", lw, q, Options{MinWatchTimeout: -time.Second}, "MinWatchTimeout"},
		{"sub-second MinWatchTimeout", lw, q, Options{MinWatchTimeout: time.Millisecond}, "MinWatchTimeout"},
		{"too short CatchUpWatchTimeout", lw, q, Options{CatchUpWatchTimeout: 2 * time.Second}, "CatchUpWatchTimeout"},
		{"backoff max below initial", lw, q, Options{Backoff: Backoff{Initial: time.Minute, Max: time.Second}}, "backoff Max"},
		{"negative backoff", lw, q, Options{Backoff: Backoff{Jitter: -1}}, "negative"},
		{"backoff factor below 1", lw, q, Options{Backoff: Backoff{Factor: 0.5}}, "Factor"},
		{"empty ExpectedGVK", lw, q, Options{ExpectedGVK: &schema.GroupVersionKind{}}, "ExpectedGVK"},
		{"ResumeFrom 0", lw, q, Options{ResumeFrom: "0"}, "ResumeFrom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r *Reflector
			var err error
			if tc.lw == nil {
				r, err = New(nil, tc.q, &tc.opts)
			} else {
				r, err = New(tc.lw, tc.q, &tc.opts)
			}
			if err == nil {
				t.Fatalf("New = %v, nil error; want an error mentioning %q", r, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("New error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "reflector: new") {
				t.Errorf("New error %q, want it to start with %q and mention %q", err, "reflector: new", tc.want)
			}
		})
	}
}

func TestRunOnlyOnce(t *testing.T) {
	t.Run("while running", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("100", "")}}, nil)
		h.start()
		h.waitLWCalls(2)
		err := h.r.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "already started") {
			t.Errorf("second Run = %v, want an 'already started' error", err)
		}
	})
	t.Run("after return", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("100", "")}}, nil)
		h.start()
		h.waitLWCalls(2)
		h.stop()
		err := h.r.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "already started") {
			t.Errorf("Run after Run = %v, want an 'already started' error", err)
		}
		if n := len(h.lw.Calls()); n != 2 {
			t.Errorf("list/watch calls = %d after the refused Run, want still 2", n)
		}
	})
}

func TestResumeMakesOneProbeAndWatchesFromResumePoint(t *testing.T) {
	h := newHarness(t, Options{ResumeFrom: "100"},
		[]listResult{{obj: cmList("150", "", cm("a", "140"))}},
		[]watchResult{{w: watcher(false, added("b", "120"), modified("a", "150"))}})
	if _, ok := h.r.SyncTarget(); ok {
		t.Errorf("SyncTarget known before Run")
	}
	h.start()
	got := h.waitQCalls(2)
	waitClosed(t, h.r.CaughtUp(), "CaughtUp")

	wantQ := []qCall{{Op: "add", Key: "ns/b", RV: "120"}, {Op: "update", Key: "ns/a", RV: "150"}}
	if d := cmp.Diff(wantQ, got); d != "" {
		t.Errorf("queue calls (-want +got):\n%s", d)
	}
	wantLW := []lwCall{probeCall, watchCall("100", catchUpSeconds)}
	if d := cmp.Diff(wantLW, h.lw.Calls()); d != "" {
		t.Errorf("list/watch calls (-want +got):\n%s", d)
	}
	if rv, ok := h.r.SyncTarget(); rv != "150" || !ok {
		t.Errorf("SyncTarget = %q, %v; want 150, true", rv, ok)
	}
	if rv, ok := h.r.CaughtUpResourceVersion(); rv != "150" || !ok {
		t.Errorf("CaughtUpResourceVersion = %q, %v; want 150, true", rv, ok)
	}
	if h.r.CaughtUpByRelist() {
		t.Errorf("CaughtUpByRelist = true after catching up by watch events")
	}
	if rv := h.r.LastSyncResourceVersion(); rv != "150" {
		t.Errorf("LastSyncResourceVersion = %q, want 150", rv)
	}
	wantStats := Stats{Lists: 1, Watches: 1, Resumes: 1, Events: 2}
	st := h.r.Stats()
	if d := cmp.Diff(wantStats, st, ignoreTimes); d != "" {
		t.Errorf("Stats (-want +got):\n%s", d)
	}
	// The start's milestones, in order: where a resume spends its time.
	if st.StartedAt.IsZero() || st.TargetAt.Before(st.StartedAt) || st.CaughtUpAt.Before(st.TargetAt) || st.CaughtUpAt.IsZero() {
		t.Errorf("Stats times: started %v, target known %v, caught up %v; want all set, in that order", st.StartedAt, st.TargetAt, st.CaughtUpAt)
	}
	if d := cmp.Diff([]string{"Resuming watch"}, defaultLogs(h)); d != "" {
		t.Errorf("default-verbosity log lines (-want +got):\n%s", d)
	}
	if errs := h.rec.Errs(); len(errs) != 0 {
		t.Errorf("watch error handler got %v, want nothing", errs)
	}
}

func TestResumeAtTargetIsCaughtUpAtOnce(t *testing.T) {
	h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("100", "")}}, nil)
	h.start()
	got := h.waitLWCalls(2)
	if d := cmp.Diff([]lwCall{probeCall, watchCall("100", "normal")}, got); d != "" {
		t.Errorf("list/watch calls (-want +got):\n%s", d)
	}
	if rv, ok := h.r.CaughtUpResourceVersion(); rv != "100" || !ok {
		t.Errorf("CaughtUpResourceVersion = %q, %v; want 100, true", rv, ok)
	}
}

func TestColdStartListsOnceAndReplacesOnce(t *testing.T) {
	tests := []struct {
		name     string
		pageSize int64
		lists    []listResult
		wantLW   []lwCall
		wantQ    []qCall
		wantList int64
	}{
		{
			name:     "two pages",
			pageSize: 2,
			lists: []listResult{
				{obj: cmList("10", "c1", cm("a", "3"), cm("b", "4"))},
				{obj: cmList("10", "", cm("c", "9"))},
			},
			wantLW: []lwCall{
				{Verb: "list", Limit: 2},
				{Verb: "list", Limit: 2, Continue: "c1"},
				watchCall("10", "normal"),
			},
			wantQ:    []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a", "ns/b", "ns/c"}}},
			wantList: 2,
		},
		{
			name:     "empty list",
			lists:    []listResult{{obj: cmList("5", "")}},
			wantLW:   []lwCall{fullList, watchCall("5", "normal")},
			wantQ:    []qCall{{Op: "replace", RV: "5", Keys: []string{}}},
			wantList: 1,
		},
		{
			name:     "no paging",
			pageSize: -1,
			lists:    []listResult{{obj: cmList("5", "", cm("a", "2"))}},
			wantLW:   []lwCall{{Verb: "list"}, watchCall("5", "normal")},
			wantQ:    []qCall{{Op: "replace", RV: "5", Keys: []string{"ns/a"}}},
			wantList: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{PageSize: tc.pageSize}, tc.lists, nil)
			h.start()
			gotLW := h.waitLWCalls(len(tc.wantLW))
			if d := cmp.Diff(tc.wantLW, gotLW); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantQ, h.q.Calls()); d != "" {
				t.Errorf("queue calls (-want +got):\n%s", d)
			}
			rv := tc.wantQ[0].RV
			if got, ok := h.r.SyncTarget(); got != rv || !ok {
				t.Errorf("SyncTarget = %q, %v; want %q, true", got, ok, rv)
			}
			if !isClosed(h.r.CaughtUp()) {
				t.Errorf("CaughtUp not closed after the initial list")
			}
			want := Stats{Lists: tc.wantList, Watches: 1, Relists: RelistStats{Cold: 1}}
			if d := cmp.Diff(want, h.r.Stats(), ignoreTimes); d != "" {
				t.Errorf("Stats (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"Listing"}, defaultLogs(h)); d != "" {
				t.Errorf("default-verbosity log lines (-want +got):\n%s", d)
			}
		})
	}
}

func TestUnusableResumePointRelists(t *testing.T) {
	probe150 := listResult{obj: cmList("150", "", cm("a", "140"))}
	full160 := listResult{obj: cmList("160", "", cm("a", "140"), cm("b", "155"))}
	tests := []struct {
		name        string
		resumeFrom  string
		lists       []listResult
		watches     []watchResult
		wantLW      []lwCall
		wantQ       []qCall
		wantRelists RelistStats
		wantResumes int64
		errCheck    func(error) bool
		// steps is how many backoffs (after early watch closes) the test
		// clocks through.
		steps int
	}{
		{
			name:        "410 event on the first watch after resume",
			resumeFrom:  "100",
			lists:       []listResult{probe150, full160},
			watches:     []watchResult{{w: watcher(true, errEvent(expiredErr()))}},
			wantLW:      []lwCall{probeCall, watchCall("100", catchUpSeconds), fullList, watchCall("160", "normal")},
			wantQ:       []qCall{{Op: "replace", RV: "160", Keys: []string{"ns/a", "ns/b"}}},
			wantRelists: RelistStats{Expired: 1},
			wantResumes: 1,
			errCheck:    isExpired,
		},
		{
			name:        "410 from the watch request itself",
			resumeFrom:  "100",
			lists:       []listResult{probe150, full160},
			watches:     []watchResult{{err: expiredErr()}},
			wantLW:      []lwCall{probeCall, watchCall("100", catchUpSeconds), fullList, watchCall("160", "normal")},
			wantQ:       []qCall{{Op: "replace", RV: "160", Keys: []string{"ns/a", "ns/b"}}},
			wantRelists: RelistStats{Expired: 1},
			wantResumes: 1,
			errCheck:    isExpired,
		},
		{
			name:       "410 Gone on a later watch",
			resumeFrom: "100",
			lists:      []listResult{probe150, full160},
			watches: []watchResult{
				{w: watcher(true, added("c", "120"), modified("a", "150"))},
				{w: watcher(true, errEvent(goneErr()))},
			},
			wantLW: []lwCall{probeCall, watchCall("100", catchUpSeconds), watchCall("150", "normal"), fullList, watchCall("160", "normal")},
			wantQ: []qCall{
				{Op: "add", Key: "ns/c", RV: "120"},
				{Op: "update", Key: "ns/a", RV: "150"},
				{Op: "replace", RV: "160", Keys: []string{"ns/a", "ns/b"}},
			},
			wantRelists: RelistStats{Expired: 1},
			wantResumes: 1,
			errCheck:    isExpired,
			steps:       1,
		},
		{
			name:        "too large resource version",
			resumeFrom:  "100",
			lists:       []listResult{probe150, full160},
			watches:     []watchResult{{w: watcher(true, errEvent(tooLargeErr()))}},
			wantLW:      []lwCall{probeCall, watchCall("100", catchUpSeconds), fullList, watchCall("160", "normal")},
			wantQ:       []qCall{{Op: "replace", RV: "160", Keys: []string{"ns/a", "ns/b"}}},
			wantRelists: RelistStats{TooLarge: 1},
			wantResumes: 1,
			errCheck:    isTooLargeResourceVersion,
		},
		{
			name:       "410 after a cold start",
			resumeFrom: "",
			lists:      []listResult{{obj: cmList("10", "", cm("a", "5"))}, {obj: cmList("20", "", cm("a", "5"), cm("b", "15"))}},
			watches: []watchResult{
				{w: watcher(true, added("b", "15"))},
				{w: watcher(true, errEvent(expiredErr()))},
			},
			wantLW: []lwCall{fullList, watchCall("10", "normal"), watchCall("15", "normal"), fullList, watchCall("20", "normal")},
			wantQ: []qCall{
				{Op: "replace", RV: "10", Keys: []string{"ns/a"}},
				{Op: "add", Key: "ns/b", RV: "15"},
				{Op: "replace", RV: "20", Keys: []string{"ns/a", "ns/b"}},
			},
			wantRelists: RelistStats{Cold: 1, Expired: 1},
			errCheck:    isExpired,
			steps:       1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: tc.resumeFrom}, tc.lists, tc.watches)
			h.start()
			for i := 0; i < tc.steps; i++ {
				h.stepWhenWaiting()
			}
			gotLW := h.waitLWCalls(len(tc.wantLW))
			if d := cmp.Diff(tc.wantLW, gotLW); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantQ, h.q.Calls()); d != "" {
				t.Errorf("queue calls (-want +got):\n%s", d)
			}
			s := h.r.Stats()
			if d := cmp.Diff(tc.wantRelists, s.Relists); d != "" {
				t.Errorf("Stats.Relists (-want +got):\n%s", d)
			}
			if s.Resumes != tc.wantResumes {
				t.Errorf("Stats.Resumes = %d, want %d", s.Resumes, tc.wantResumes)
			}
			errs := h.rec.Errs()
			if len(errs) != 1 || !tc.errCheck(errs[0]) {
				t.Errorf("watch error handler got %v, want exactly the one error that caused the relist", errs)
			}
			last := tc.wantQ[len(tc.wantQ)-1].RV
			if rv := h.r.LastSyncResourceVersion(); rv != last {
				t.Errorf("LastSyncResourceVersion = %q, want %q", rv, last)
			}
		})
	}
}

func TestTimeTravel(t *testing.T) {
	t.Run("resume point newer than the server relists", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "200"},
			[]listResult{{obj: cmList("150", "")}, {obj: cmList("160", "", cm("a", "140"))}}, nil)
		h.start()
		gotLW := h.waitLWCalls(3)
		if d := cmp.Diff([]lwCall{probeCall, fullList, watchCall("160", "normal")}, gotLW); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]qCall{{Op: "replace", RV: "160", Keys: []string{"ns/a"}}}, h.q.Calls()); d != "" {
			t.Errorf("queue calls (-want +got):\n%s", d)
		}
		want := Stats{Lists: 2, Watches: 1, Relists: RelistStats{TimeTravel: 1}}
		if d := cmp.Diff(want, h.r.Stats(), ignoreTimes); d != "" {
			t.Errorf("Stats (-want +got):\n%s", d)
		}
		logs := h.rec.Logs()
		if len(logs) != 1 || !containsAll(logs[0], "Listing", ReasonTimeTravel) {
			t.Errorf("default-verbosity logs = %q, want one Listing line with reason %q", logs, ReasonTimeTravel)
		}
		if rv, ok := h.r.CaughtUpResourceVersion(); rv != "160" || !ok {
			t.Errorf("CaughtUpResourceVersion = %q, %v; want 160, true", rv, ok)
		}
		// The relist is the target, not the probe, and only applying it
		// syncs: the resume point from the other history does not.
		if rv, ok := h.r.SyncTarget(); rv != "160" || !ok {
			t.Errorf("SyncTarget = %q, %v; want the relist's 160, true", rv, ok)
		}
		if !h.r.CaughtUpByRelist() {
			t.Errorf("CaughtUpByRelist = false after a time-travel relist")
		}
		if why := h.r.Synced(logr.Discard(), Applied{ResourceVersion: "200"}); why != "" {
			t.Errorf("Synced(200) = %q: the resume point from before the time travel counts as synced", why)
		}
		if why := h.r.Synced(logr.Discard(), Applied{ResourceVersion: "160", Relist: true}); why == "" {
			t.Errorf("Synced(160, relist) = not synced after the relist at 160 is applied")
		}
	})
	t.Run("incomparable resource versions skip the check and say so", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "opaque-1"},
			[]listResult{{obj: cmList("opaque-2", "")}},
			[]watchResult{{w: watcher(false, added("b", "opaque-3"), bookmark("opaque-4"))}})
		h.start()
		gotQ := h.waitQCalls(2)
		h.settle()
		if d := cmp.Diff([]lwCall{probeCall, watchCall("opaque-1", catchUpSeconds)}, h.lw.Calls()); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
		wantQ := []qCall{{Op: "add", Key: "ns/b", RV: "opaque-3"}, {Op: "bookmark", RV: "opaque-4"}}
		if d := cmp.Diff(wantQ, gotQ); d != "" {
			t.Errorf("queue calls (-want +got):\n%s", d)
		}
		if s := h.r.Stats(); s.Relists != (RelistStats{}) || s.Resumes != 1 {
			t.Errorf("Stats = %+v, want no relist and one resume", s)
		}
		logs := h.rec.Logs()
		if len(logs) != 1 || !containsAll(logs[0], "Resuming watch", "time-travel check skipped", "not comparable") {
			t.Errorf("default-verbosity logs = %q, want one resume line saying the time-travel check was skipped", logs)
		}
		// An event cannot be compared with the target; the bookmark after
		// it is the server's statement of progress.
		if rv, ok := h.r.CaughtUpResourceVersion(); rv != "opaque-4" || !ok {
			t.Errorf("CaughtUpResourceVersion = %q, %v; want opaque-4, true", rv, ok)
		}
	})
}

func TestDropsRewatchFromLastSeenWithoutRelist(t *testing.T) {
	h := newHarness(t, Options{ResumeFrom: "100"},
		[]listResult{{obj: cmList("200", "")}},
		[]watchResult{
			{w: watcher(true, added("a", "110"), added("b", "120"))},
			{w: watcher(true, deleted("a", "130"))},
		})
	h.start()
	// Each watch closed before its timeout: a dropped connection, retried
	// after a backoff, not at once.
	for i := 0; i < 2; i++ {
		h.stepWhenWaiting()
	}
	gotLW := h.waitLWCalls(4)
	wantLW := []lwCall{probeCall, watchCall("100", catchUpSeconds), watchCall("120", catchUpSeconds), watchCall("130", catchUpSeconds)}
	if d := cmp.Diff(wantLW, gotLW); d != "" {
		t.Errorf("list/watch calls (-want +got):\n%s", d)
	}
	wantQ := []qCall{{Op: "add", Key: "ns/a", RV: "110"}, {Op: "add", Key: "ns/b", RV: "120"}, {Op: "delete", Key: "ns/a", RV: "130"}}
	if d := cmp.Diff(wantQ, h.q.Calls()); d != "" {
		t.Errorf("queue calls (-want +got):\n%s", d)
	}
	want := Stats{Lists: 1, Watches: 3, Resumes: 1, Events: 3}
	if d := cmp.Diff(want, h.r.Stats(), ignoreTimes); d != "" {
		t.Errorf("Stats (-want +got):\n%s", d)
	}
	if _, ok := h.r.CaughtUpResourceVersion(); ok {
		t.Errorf("caught up at 130 although the sync target is 200")
	}
	if errs := h.rec.Errs(); len(errs) != 0 {
		t.Errorf("watch error handler got %v; a closed watch is not an error", errs)
	}
}

func TestWatchReachingItsTimeoutIsRenewedAtOnce(t *testing.T) {
	w1 := watcher(false, added("a", "110"))
	h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("100", "")}}, []watchResult{{w: w1}})
	h.start()
	h.waitQCalls(1)
	// The server ends a watch at its timeoutSeconds, at most 2*MinWatchTimeout.
	h.clock.Step(2 * DefaultMinWatchTimeout)
	w1.Stop()
	got := h.waitLWCalls(3)
	if d := cmp.Diff([]lwCall{probeCall, watchCall("100", "normal"), watchCall("110", "normal")}, got); d != "" {
		t.Errorf("list/watch calls (-want +got):\n%s", d)
	}
	if errs := h.rec.Errs(); len(errs) != 0 {
		t.Errorf("watch error handler got %v; a watch ending at its timeout is not an error", errs)
	}
}

func TestBookmarksOnly(t *testing.T) {
	h := newHarness(t, Options{ResumeFrom: "100"},
		[]listResult{{obj: cmList("130", "")}},
		[]watchResult{{w: watcher(false, bookmark(""), bookmark("110"), bookmark("120"), bookmark("130"))}})
	h.start()
	got := h.waitQCalls(3)
	waitClosed(t, h.r.CaughtUp(), "CaughtUp")
	want := []qCall{{Op: "bookmark", RV: "110"}, {Op: "bookmark", RV: "120"}, {Op: "bookmark", RV: "130"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("queue calls (-want +got):\n%s", d)
	}
	if rv := h.r.LastSyncResourceVersion(); rv != "130" {
		t.Errorf("LastSyncResourceVersion = %q, want 130", rv)
	}
	if s := h.r.Stats(); s.Bookmarks != 3 || s.Events != 0 {
		t.Errorf("Stats = %+v, want 3 bookmarks and no events", s)
	}
	if rv, _ := h.r.CaughtUpResourceVersion(); rv != "130" {
		t.Errorf("CaughtUpResourceVersion = %q, want 130", rv)
	}
}

func TestCatchUpWatches(t *testing.T) {
	tests := []struct {
		name    string
		watches []watchResult
		// steps is how many backoffs the test must clock through.
		steps      int
		wantLW     []lwCall
		wantCaught string
	}{
		{
			name:       "bookmark at the target ends catch-up",
			watches:    []watchResult{{w: watcher(true, bookmark("200"))}},
			steps:      1,
			wantLW:     []lwCall{probeCall, watchCall("100", "7"), watchCall("200", "normal")},
			wantCaught: "200",
		},
		{
			name:       "bookmark short of the target keeps catching up",
			watches:    []watchResult{{w: watcher(true, bookmark("150"))}, {w: watcher(true, modified("a", "210"))}},
			steps:      2,
			wantLW:     []lwCall{probeCall, watchCall("100", "7"), watchCall("150", "7"), watchCall("210", "normal")},
			wantCaught: "210",
		},
		{
			name: "three catch-up watches without a bookmark end catch-up watches",
			watches: []watchResult{
				{w: watcher(true)}, {w: watcher(true)}, {w: watcher(true)},
			},
			steps: 3,
			wantLW: []lwCall{probeCall, watchCall("100", "7"), watchCall("100", "7"), watchCall("100", "7"),
				watchCall("100", "normal")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: "100", CatchUpWatchTimeout: 7 * time.Second},
				[]listResult{{obj: cmList("200", "")}}, tc.watches)
			h.start()
			for i := 0; i < tc.steps; i++ {
				h.stepWhenWaiting()
			}
			gotLW := h.waitLWCalls(len(tc.wantLW))
			if d := cmp.Diff(tc.wantLW, gotLW); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
			rv, ok := h.r.CaughtUpResourceVersion()
			if rv != tc.wantCaught || ok != (tc.wantCaught != "") {
				t.Errorf("CaughtUpResourceVersion = %q, %v; want %q", rv, ok, tc.wantCaught)
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		h := newHarness(t, Options{ResumeFrom: "100", CatchUpWatchTimeout: -1}, []listResult{{obj: cmList("200", "")}}, nil)
		h.start()
		if d := cmp.Diff([]lwCall{probeCall, watchCall("100", "normal")}, h.waitLWCalls(2)); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
	})
}

// TestCatchUpNudge: a catch-up watch the server ends at its timeout
// without reaching the sync target is followed by a consistent LIST of one
// object before the next catch-up watch (kube-apiserver's watch cache then
// catches up with etcd, so the next watch's bookmark can carry a
// resourceVersion past events the watch filtered out); once the target is
// reached, no more.
func TestCatchUpNudge(t *testing.T) {
	w1, w2 := watch.NewRaceFreeFake(), watch.NewRaceFreeFake()
	h := newHarness(t, Options{ResumeFrom: "100", CatchUpWatchTimeout: 7 * time.Second},
		[]listResult{{obj: cmList("200", "")}, {obj: cmList("205", "")}},
		[]watchResult{{w: w1}, {w: w2}})
	h.start()
	h.waitLWCalls(2)
	w1.Action(watch.Modified, cm("a", "150"))
	h.waitQCalls(1)
	h.settle()
	// The server ends the watch at its timeout; its bookmark was held
	// back (nothing past the last event it processed).
	h.clock.Step(7 * time.Second)
	w1.Stop()
	h.waitLWCalls(4)
	w2.Action(watch.Bookmark, bookmarkObj("205"))
	h.waitFor("caught up", func() bool { _, ok := h.r.CaughtUpResourceVersion(); return ok })
	h.clock.Step(7 * time.Second)
	w2.Stop()
	want := []lwCall{probeCall, watchCall("100", "7"), probeCall, watchCall("150", "7"), watchCall("205", "normal")}
	if d := cmp.Diff(want, h.waitLWCalls(len(want))); d != "" {
		t.Errorf("list/watch calls (-want +got):\n%s", d)
	}
	if st := h.r.Stats(); st.Lists != 2 || st.Relists != (RelistStats{}) {
		t.Errorf("Stats = %+v, want 2 LISTs (the probe, one nudge) and no relist", st)
	}
}

// TestCatchUpNudgeMisses: a catch-up watch without a bookmark counts
// towards the three after which catch-up watches stop only if the LIST
// after it shows etcd past the sync target (the server had something to
// bookmark and did not: it sends no bookmarks). While etcd has not moved,
// catch-up watches and LISTs go on.
func TestCatchUpNudgeMisses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nudgeRV string
		// catchUps is how many catch-up watches come before the first
		// normal one (0: none within the 5 watches checked).
		catchUps int
	}{
		{"etcd moved: three misses end catch-up watches", "250", 3},
		{"etcd did not move: no miss, catch-up goes on", "200", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const watches = 5
			lists := []listResult{{obj: cmList("200", "")}}
			var ws []watchResult
			var fakes []*watch.RaceFreeFakeWatcher
			for range watches {
				lists = append(lists, listResult{obj: cmList(tc.nudgeRV, "")})
				w := watch.NewRaceFreeFake()
				fakes = append(fakes, w)
				ws = append(ws, watchResult{w: w})
			}
			h := newHarness(t, Options{ResumeFrom: "100", CatchUpWatchTimeout: 7 * time.Second}, lists, ws)
			h.start()
			var want []lwCall
			want = append(want, probeCall)
			for i := range watches {
				catchUp := tc.catchUps == 0 || i < tc.catchUps
				timeout := "normal"
				if catchUp {
					timeout = "7"
				}
				want = append(want, watchCall("100", timeout))
				if i == watches-1 {
					break
				}
				h.waitFor("watch "+itoa(i+1), func() bool {
					n := 0
					for _, c := range h.lw.Calls() {
						if c.Verb == "watch" {
							n++
						}
					}
					return n == i+1
				})
				// The server ends the watch at its timeout, with no
				// bookmark.
				if catchUp {
					h.clock.Step(7 * time.Second)
				} else {
					h.clock.Step(2 * DefaultMinWatchTimeout)
				}
				fakes[i].Stop()
				if catchUp {
					want = append(want, probeCall)
				}
			}
			if d := cmp.Diff(want, h.waitLWCalls(len(want))); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestSlowQueueLosesAndReordersNothing(t *testing.T) {
	var events []watch.Event
	var want []qCall
	for i := 0; i < 60; i++ {
		name, rv := string(rune('a'+i%26))+string(rune('a'+i/26)), itoa(101+i)
		switch i % 3 {
		case 0:
			events = append(events, added(name, rv))
			want = append(want, qCall{Op: "add", Key: "ns/" + name, RV: rv})
		case 1:
			events = append(events, modified(name, rv))
			want = append(want, qCall{Op: "update", Key: "ns/" + name, RV: rv})
		default:
			events = append(events, bookmark(rv))
			want = append(want, qCall{Op: "bookmark", RV: rv})
		}
	}
	h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("100", "")}},
		[]watchResult{{w: watcher(false, events...)}})
	entered := make(chan struct{})
	release := make(chan struct{})
	first := true
	h.q.gate = func(op string) {
		if first {
			first = false
			close(entered)
			<-release
		}
	}
	h.start()
	<-entered
	if got := h.q.Calls(); len(got) != 0 {
		t.Fatalf("queue recorded %v while its first call was blocked", got)
	}
	close(release)
	got := h.waitQCalls(len(want))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("queue calls (-want +got):\n%s", d)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestErrorsGoToTheWatchErrorHandler(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "105"}}
	wrongKind := cm("k", "105")
	wrongKind.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	rightKind := cm("a", "106")
	rightKind.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	tests := []struct {
		name    string
		opts    Options
		watches []watchResult
		wantErr string
		wantQ   []qCall
	}{
		{
			name:    "event of another Go type",
			opts:    Options{ExpectedType: &corev1.ConfigMap{}},
			watches: []watchResult{{w: watcher(false, watch.Event{Type: watch.Added, Object: secret}, added("a", "106"))}},
			wantErr: "*v1.Secret",
			wantQ:   []qCall{{Op: "add", Key: "ns/a", RV: "106"}},
		},
		{
			name:    "event of another GVK",
			opts:    Options{ExpectedGVK: &schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}},
			watches: []watchResult{{w: watcher(false, watch.Event{Type: watch.Added, Object: wrongKind}, watch.Event{Type: watch.Added, Object: rightKind})}},
			wantErr: "/v1, Kind=Secret",
			wantQ:   []qCall{{Op: "add", Key: "ns/a", RV: "106"}},
		},
		{
			name:    "event without an object",
			watches: []watchResult{{w: watcher(false, watch.Event{Type: watch.Added}, added("a", "106"))}},
			wantErr: "without an object",
			wantQ:   []qCall{{Op: "add", Key: "ns/a", RV: "106"}},
		},
		{
			name:    "typed nil object",
			opts:    Options{ExpectedGVK: &schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}},
			watches: []watchResult{{w: watcher(false, watch.Event{Type: watch.Modified, Object: (*corev1.ConfigMap)(nil)}, watch.Event{Type: watch.Added, Object: rightKind})}},
			wantErr: "without an object",
			wantQ:   []qCall{{Op: "add", Key: "ns/a", RV: "106"}},
		},
		{
			name:    "object without metadata",
			watches: []watchResult{{w: watcher(false, watch.Event{Type: watch.Added, Object: &metav1.Status{}}, added("a", "106"))}},
			wantErr: "no object metadata",
			wantQ:   []qCall{{Op: "add", Key: "ns/a", RV: "106"}},
		},
		{
			name:    "unknown event type",
			watches: []watchResult{{w: watcher(false, watch.Event{Type: "SURPRISE", Object: cm("x", "105")}, added("a", "106"))}},
			wantErr: `unknown type "SURPRISE"`,
			wantQ:   []qCall{{Op: "add", Key: "ns/a", RV: "106"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.ResumeFrom = "100"
			h := newHarness(t, tc.opts, []listResult{{obj: cmList("100", "")}}, tc.watches)
			h.start()
			got := h.waitQCalls(len(tc.wantQ))
			if d := cmp.Diff(tc.wantQ, got); d != "" {
				t.Errorf("queue calls (-want +got):\n%s", d)
			}
			errs := h.rec.Errs()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr) || !strings.HasPrefix(errs[0].Error(), "reflector reflector:") {
				t.Errorf("watch error handler got %v, want one error naming the reflector and mentioning %q", errs, tc.wantErr)
			}
		})
	}
}

func TestQueueErrorIsReportedAndWatchGoesOn(t *testing.T) {
	h := newHarness(t, Options{ResumeFrom: "100"}, []listResult{{obj: cmList("100", "")}},
		[]watchResult{{w: watcher(false, added("a", "101"), added("b", "102"))}})
	h.q.err = errors.New("queue is closed")
	h.start()
	h.waitFor("two reported queue errors", func() bool { return len(h.rec.Errs()) == 2 })
	h.settle()
	errs := h.rec.Errs()
	for i, want := range []string{"queue added ns/a at 101: queue is closed", "queue added ns/b at 102: queue is closed"} {
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i], want)
		}
	}
	if rv := h.r.LastSyncResourceVersion(); rv != "102" {
		t.Errorf("LastSyncResourceVersion = %q, want 102", rv)
	}
}

func TestFailuresBackOff(t *testing.T) {
	boom := apierrors.NewInternalError(errors.New("boom"))
	tests := []struct {
		name       string
		resumeFrom string
		lists      []listResult
		watches    []watchResult
		// before is the number of calls made before the backoff.
		before []lwCall
		after  []lwCall
		wantQ  []qCall
	}{
		{
			name:   "failed cold list",
			lists:  []listResult{{err: boom}, {obj: cmList("10", "", cm("a", "5"))}},
			before: []lwCall{fullList},
			after:  []lwCall{fullList, fullList, watchCall("10", "normal")},
			wantQ:  []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
		},
		{
			name:       "failed probe",
			resumeFrom: "100",
			lists:      []listResult{{err: boom}, {obj: cmList("100", "")}},
			before:     []lwCall{probeCall},
			after:      []lwCall{probeCall, probeCall, watchCall("100", "normal")},
		},
		{
			name:       "failed watch request",
			resumeFrom: "100",
			lists:      []listResult{{obj: cmList("100", "")}},
			watches:    []watchResult{{err: boom}},
			before:     []lwCall{probeCall, watchCall("100", "normal")},
			after:      []lwCall{probeCall, watchCall("100", "normal"), watchCall("100", "normal")},
		},
		{
			name:       "error event mid-stream",
			resumeFrom: "100",
			lists:      []listResult{{obj: cmList("100", "")}},
			watches:    []watchResult{{w: watcher(true, added("a", "101"), errEvent(boom))}},
			before:     []lwCall{probeCall, watchCall("100", "normal")},
			after:      []lwCall{probeCall, watchCall("100", "normal"), watchCall("101", "normal")},
			wantQ:      []qCall{{Op: "add", Key: "ns/a", RV: "101"}},
		},
		{
			name:       "probe answer that is not a list",
			resumeFrom: "100",
			lists:      []listResult{{obj: cm("not-a-list", "1")}, {obj: cmList("100", "")}},
			before:     []lwCall{probeCall},
			after:      []lwCall{probeCall, probeCall, watchCall("100", "normal")},
		},
		{
			name:   "nil list and nil error",
			lists:  []listResult{{}, {obj: cmList("7", "")}},
			before: []lwCall{fullList},
			after:  []lwCall{fullList, fullList, watchCall("7", "normal")},
			wantQ:  []qCall{{Op: "replace", RV: "7", Keys: []string{}}},
		},
		{
			name:       "nil watch and nil error",
			resumeFrom: "100",
			lists:      []listResult{{obj: cmList("100", "")}},
			watches:    []watchResult{{}},
			before:     []lwCall{probeCall, watchCall("100", "normal")},
			after:      []lwCall{probeCall, watchCall("100", "normal"), watchCall("100", "normal")},
		},
		{
			name:       "list without resourceVersion",
			resumeFrom: "",
			lists:      []listResult{{obj: cmList("", "")}, {obj: cmList("7", "")}},
			before:     []lwCall{fullList},
			after:      []lwCall{fullList, fullList, watchCall("7", "normal")},
			wantQ:      []qCall{{Op: "replace", RV: "7", Keys: []string{}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: tc.resumeFrom}, tc.lists, tc.watches)
			h.start()
			h.waitFor("a backoff timer", h.clock.HasWaiters)
			// The Reflector is parked on the backoff timer: nothing more
			// happens until the clock moves.
			if d := cmp.Diff(tc.before, h.lw.Calls()); d != "" {
				t.Errorf("calls before the backoff ended (-want +got):\n%s", d)
			}
			if errs := h.rec.Errs(); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "reflector reflector: ") {
				t.Errorf("watch error handler got %v, want one error naming the reflector", errs)
			}
			h.clock.Step(time.Hour)
			if d := cmp.Diff(tc.after, h.waitLWCalls(len(tc.after))); d != "" {
				t.Errorf("calls after the backoff (-want +got):\n%s", d)
			}
			if tc.wantQ != nil {
				if d := cmp.Diff(tc.wantQ, h.waitQCalls(len(tc.wantQ))); d != "" {
					t.Errorf("queue calls (-want +got):\n%s", d)
				}
			}
			listing := 0
			for _, l := range defaultLogs(h) {
				if l == "Listing" {
					listing++
				}
			}
			if tc.resumeFrom == "" && listing != 1 {
				t.Errorf("%d Listing lines at default verbosity, want 1 however many attempts the list takes", listing)
			}
			if s := h.r.Stats(); s.Relists.Expired+s.Relists.TooLarge+s.Relists.TimeTravel != 0 {
				t.Errorf("Stats.Relists = %+v, want no relist for these errors", s.Relists)
			}
		})
	}
}

func TestStreamingList(t *testing.T) {
	rejected := apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", nil)
	tests := []struct {
		name        string
		watchList   *bool // autoWatchList for auto
		unsupported bool
		lists       []listResult
		watches     []watchResult
		wantLW      []lwCall
		wantQ       []qCall
		wantStats   Stats
	}{
		{
			name:      "auto, server streams",
			watchList: autoWatchList,
			watches: []watchResult{{w: watcher(false, added("a", "5"), added("b", "7"),
				watch.Event{Type: watch.Bookmark, Object: initialEventsEnd("10")}, added("c", "11"))}},
			wantLW:    []lwCall{streamCall},
			wantQ:     []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a", "ns/b"}}, {Op: "add", Key: "ns/c", RV: "11"}},
			wantStats: Stats{WatchLists: 1, Events: 1, Relists: RelistStats{Cold: 1}},
		},
		{
			name:      "auto, server rejects the streaming list",
			watchList: autoWatchList,
			watches:   []watchResult{{err: rejected}},
			lists:     []listResult{{obj: cmList("10", "", cm("a", "5"))}},
			wantLW:    []lwCall{streamCall, fullList, watchCall("10", "normal")},
			wantQ:     []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
			wantStats: Stats{WatchLists: 1, Lists: 1, Watches: 1, Relists: RelistStats{Cold: 1}},
		},
		{
			name:      "auto, stream ends before the initial-events-end bookmark",
			watchList: autoWatchList,
			watches:   []watchResult{{w: watcher(true, added("a", "5"), bookmark("6"))}},
			lists:     []listResult{{obj: cmList("10", "", cm("a", "5"))}},
			wantLW:    []lwCall{streamCall, fullList, watchCall("10", "normal")},
			wantQ:     []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
			wantStats: Stats{WatchLists: 1, Lists: 1, Watches: 1, Relists: RelistStats{Cold: 1}},
		},
		{
			name:        "auto, client without watch-list semantics",
			watchList:   autoWatchList,
			unsupported: true,
			lists:       []listResult{{obj: cmList("10", "", cm("a", "5"))}},
			wantLW:      []lwCall{fullList, watchCall("10", "normal")},
			wantQ:       []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a"}}},
			wantStats:   Stats{Lists: 1, Watches: 1, Relists: RelistStats{Cold: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h *harness
			if tc.watchList == autoWatchList {
				h = newAutoHarness(t, Options{}, tc.lists, tc.watches)
			} else {
				h = newHarness(t, Options{WatchList: tc.watchList}, tc.lists, tc.watches)
			}
			h.lw.unsupported = tc.unsupported
			h.start()
			gotQ := h.waitQCalls(len(tc.wantQ))
			gotLW := h.waitLWCalls(len(tc.wantLW))
			h.settle()
			if d := cmp.Diff(tc.wantLW, gotLW); d != "" {
				t.Errorf("list/watch calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantQ, gotQ); d != "" {
				t.Errorf("queue calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantStats, h.r.Stats(), ignoreTimes); d != "" {
				t.Errorf("Stats (-want +got):\n%s", d)
			}
			if rv, ok := h.r.CaughtUpResourceVersion(); rv != "10" || !ok {
				t.Errorf("CaughtUpResourceVersion = %q, %v; want 10, true", rv, ok)
			}
		})
	}
	t.Run("auto, any failure lists at once, and the next relist streams again", func(t *testing.T) {
		// client-go's reflector falls back to a paginated LIST after any
		// streaming-list error (ListAndWatchWithContext), without a
		// backoff and without reporting it; client-go's fake controller
		// source fails this way, on the empty resourceVersion.
		for _, streamErr := range []error{
			apierrors.NewInternalError(errors.New("boom")),
			errors.New(`strconv.Atoi: parsing "": invalid syntax`),
		} {
			t.Run(streamErr.Error(), func(t *testing.T) {
				h := newAutoHarness(t, Options{},
					[]listResult{{obj: cmList("10", "", cm("a", "5"))}},
					[]watchResult{
						{err: streamErr},
						{err: expiredErr()}, // the watch after the list: relist
						{w: watcher(false, added("b", "12"), watch.Event{Type: watch.Bookmark, Object: initialEventsEnd("12")})},
					})
				h.start()
				// The relist follows the first one within Backoff.Reset:
				// it waits a backoff (TestRelistBackoff).
				h.stepWhenWaiting()
				wantLW := []lwCall{streamCall, fullList, watchCall("10", "normal"), streamCall}
				if d := cmp.Diff(wantLW, h.waitLWCalls(len(wantLW))); d != "" {
					t.Errorf("list/watch calls (-want +got):\n%s", d)
				}
				wantQ := []qCall{{Op: "replace", RV: "10", Keys: []string{"ns/a"}}, {Op: "replace", RV: "12", Keys: []string{"ns/b"}}}
				if d := cmp.Diff(wantQ, h.waitQCalls(len(wantQ))); d != "" {
					t.Errorf("queue calls (-want +got):\n%s", d)
				}
				for _, err := range h.rec.Errs() {
					if !isExpired(err) {
						t.Errorf("watch error handler got %v; the streaming list's failure is not one (client-go logs it)", err)
					}
				}
			})
		}
	})
	t.Run("auto, a rejected streaming list is not tried again in the run", func(t *testing.T) {
		// A documented difference: client-go streams again on each relist.
		h := newAutoHarness(t, Options{},
			[]listResult{{obj: cmList("10", "", cm("a", "5"))}, {obj: cmList("20", "", cm("a", "15"))}},
			[]watchResult{{err: rejected}, {err: expiredErr()}})
		h.start()
		h.stepWhenWaiting() // the relist follows the first within Backoff.Reset
		wantLW := []lwCall{streamCall, fullList, watchCall("10", "normal"), fullList, watchCall("20", "normal")}
		if d := cmp.Diff(wantLW, h.waitLWCalls(len(wantLW))); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
	})
	t.Run("forced, no fallback", func(t *testing.T) {
		on := true
		h := newHarness(t, Options{WatchList: &on}, []listResult{{obj: cmList("10", "")}}, []watchResult{{err: rejected}})
		h.start()
		h.stepWhenWaiting()
		got := h.waitLWCalls(2)
		if d := cmp.Diff([]lwCall{streamCall, streamCall}, got); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
		if errs := h.rec.Errs(); len(errs) != 1 || !apierrors.IsInvalid(errs[0]) {
			t.Errorf("watch error handler got %v, want the Invalid error", errs)
		}
	})
}

func TestCancelStopsRunInEveryPhase(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		resumeFrom string
		watchList  *bool
		lists      []listResult
		watches    []watchResult
		parked     func(h *harness) bool
	}{
		{
			name:       "probe backoff",
			resumeFrom: "100",
			lists:      []listResult{{err: boom}},
			parked:     func(h *harness) bool { return h.clock.HasWaiters() },
		},
		{
			name:   "list backoff",
			lists:  []listResult{{err: boom}},
			parked: func(h *harness) bool { return h.clock.HasWaiters() },
		},
		{
			name:       "open watch",
			resumeFrom: "100",
			lists:      []listResult{{obj: cmList("100", "")}},
			parked:     func(h *harness) bool { return len(h.lw.Calls()) == 2 },
		},
		{
			name:      "streaming list before its end bookmark",
			watchList: autoWatchList,
			watches:   []watchResult{{w: watcher(false, added("a", "5"))}},
			parked:    func(h *harness) bool { return len(h.lw.Calls()) == 1 },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h *harness
			if tc.watchList == autoWatchList {
				h = newAutoHarness(t, Options{ResumeFrom: tc.resumeFrom}, tc.lists, tc.watches)
			} else {
				h = newHarness(t, Options{ResumeFrom: tc.resumeFrom}, tc.lists, tc.watches)
			}
			h.start()
			h.waitFor("the reflector to park", func() bool { return tc.parked(h) })
			h.stop() // fails the test unless Run returns nil
			h.lw.mu.Lock()
			defer h.lw.mu.Unlock()
			for i, w := range h.lw.opened {
				if fw, ok := w.(*watch.RaceFreeFakeWatcher); ok && !fw.IsStopped() {
					t.Errorf("watch %d was not stopped", i)
				}
			}
		})
	}
}

func TestCatchUpDeadline(t *testing.T) {
	opts := Options{ResumeFrom: "100", CatchUpDeadline: 2 * time.Minute, CatchUpWatchTimeout: -1}
	t.Run("not reached: the resume is given up for a relist", func(t *testing.T) {
		h := newHarness(t, opts, []listResult{{obj: cmList("200", "")}, {obj: cmList("210", "", cm("a", "205"))}}, nil)
		h.start()
		h.waitLWCalls(2)
		h.waitFor("the deadline timer", h.clock.HasWaiters)
		h.clock.Step(2 * time.Minute)
		got := h.waitLWCalls(4)
		if d := cmp.Diff([]lwCall{probeCall, watchCall("100", "normal"), fullList, watchCall("210", "normal")}, got); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]qCall{{Op: "replace", RV: "210", Keys: []string{"ns/a"}}}, h.q.Calls()); d != "" {
			t.Errorf("queue calls (-want +got):\n%s", d)
		}
		if d := cmp.Diff(RelistStats{CatchUp: 1}, h.r.Stats().Relists); d != "" {
			t.Errorf("Stats.Relists (-want +got):\n%s", d)
		}
		if rv, ok := h.r.CaughtUpResourceVersion(); rv != "210" || !ok {
			t.Errorf("CaughtUpResourceVersion = %q, %v; want 210, true", rv, ok)
		}
		logs := h.rec.Logs()
		if len(logs) != 2 || !containsAll(logs[1], "Listing", ReasonCatchUp, `"syncTarget"="200"`) {
			t.Errorf("default-verbosity logs = %q, want the resume line and one Listing line with reason %q", logs, ReasonCatchUp)
		}
	})
	t.Run("reached in time: the deadline does nothing", func(t *testing.T) {
		w := watcher(false, bookmark("200"))
		h := newHarness(t, opts, []listResult{{obj: cmList("200", "")}}, []watchResult{{w: w}})
		h.start()
		waitClosed(t, h.r.CaughtUp(), "CaughtUp")
		h.waitFor("the deadline timer", h.clock.HasWaiters)
		h.clock.Step(2 * time.Minute)
		w.Add(cm("b", "220"))
		h.waitQCalls(2)
		if d := cmp.Diff([]lwCall{probeCall, watchCall("100", "normal")}, h.lw.Calls()); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
		if s := h.r.Stats(); s.Relists != (RelistStats{}) {
			t.Errorf("Stats.Relists = %+v, want none", s.Relists)
		}
	})
	t.Run("passed during a backoff", func(t *testing.T) {
		h := newHarness(t, opts, []listResult{{obj: cmList("200", "")}, {obj: cmList("210", "")}},
			[]watchResult{{err: apierrors.NewInternalError(errors.New("boom"))}})
		h.start()
		h.waitLWCalls(2)
		h.waitFor("the backoff timer", h.clock.HasWaiters)
		h.clock.Step(time.Hour)
		got := h.waitLWCalls(4)
		if d := cmp.Diff([]lwCall{probeCall, watchCall("100", "normal"), fullList, watchCall("210", "normal")}, got); d != "" {
			t.Errorf("list/watch calls (-want +got):\n%s", d)
		}
		if d := cmp.Diff(RelistStats{CatchUp: 1}, h.r.Stats().Relists); d != "" {
			t.Errorf("Stats.Relists (-want +got):\n%s", d)
		}
	})
}
