package reflector

import (
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/watch"
)

// TestSynced checks the sync rule (Synced) after a resume, against what
// the informer has applied.
func TestSynced(t *testing.T) {
	tests := []struct {
		name    string
		resume  string
		probe   string
		watch   []watch.Event
		applied Applied
		want    bool
	}{
		{name: "applied the reaching event", resume: "100", probe: "150", watch: []watch.Event{added("a", "150")}, applied: Applied{ResourceVersion: "150"}, want: true},
		{name: "applied past it", resume: "100", probe: "150", watch: []watch.Event{bookmark("160")}, applied: Applied{ResourceVersion: "170"}, want: true},
		// The target is the probe's 150, not the 160 that reached it:
		// everything up to the consistent read taken at start is applied.
		{name: "applied past the target, short of the reaching bookmark", resume: "100", probe: "150", watch: []watch.Event{bookmark("160")}, applied: Applied{ResourceVersion: "155"}, want: true},
		{name: "applied short of the target", resume: "100", probe: "150", watch: []watch.Event{bookmark("160")}, applied: Applied{ResourceVersion: "145"}, want: false},
		{name: "applied what was handed, short of the target", resume: "100", probe: "150", watch: []watch.Event{added("a", "120")}, applied: Applied{ResourceVersion: "120"}, want: false},
		{name: "nothing applied", resume: "100", probe: "150", watch: []watch.Event{added("a", "150")}, applied: Applied{}, want: false},
		{name: "a relist applied", resume: "100", probe: "150", watch: []watch.Event{added("a", "120")}, applied: Applied{ResourceVersion: "120", Relist: true}, want: true},
		{name: "opaque, exact", resume: "x1", probe: "x2", watch: []watch.Event{bookmark("x3")}, applied: Applied{ResourceVersion: "x3"}, want: true},
		{name: "opaque, other", resume: "x1", probe: "x2", watch: []watch.Event{bookmark("x3")}, applied: Applied{ResourceVersion: "x4"}, want: false},
		{name: "opaque, the bookmark's backlog applied", resume: "x1", probe: "x2", watch: []watch.Event{bookmark("x3")}, applied: Applied{ResourceVersion: "x4", CatchUpApplied: true}, want: true},
		{name: "opaque, not caught up", resume: "x1", probe: "x2", watch: []watch.Event{added("a", "x3")}, applied: Applied{ResourceVersion: "x3", CatchUpApplied: true}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ResumeFrom: tc.resume}, []listResult{{obj: cmList(tc.probe, "")}},
				[]watchResult{{w: watcher(false, tc.watch...)}})
			h.start()
			h.waitQCalls(len(tc.watch))
			h.settle()
			if got := h.r.Synced(logr.Discard(), tc.applied); (got != "") != tc.want {
				rv, ok := h.r.CaughtUpResourceVersion()
				t.Errorf("Synced(%+v) = %q, want synced %v (caught up: %q, %v)", tc.applied, got, tc.want, rv, ok)
			}
		})
	}
}

// TestSyncedColdStart checks that a cold start syncs with its relist only,
// whatever resourceVersion was applied.
func TestSyncedColdStart(t *testing.T) {
	h := newHarness(t, Options{}, []listResult{{obj: cmList("150", "", cm("a", "140"))}}, nil)
	h.start()
	h.waitQCalls(1)
	if why := h.r.Synced(logr.Discard(), Applied{ResourceVersion: "150"}); why != "" {
		t.Errorf("Synced without the relist applied = %q, want not synced", why)
	}
	if why := h.r.Synced(logr.Discard(), Applied{ResourceVersion: "150", Relist: true}); why == "" {
		t.Errorf("Synced with the relist applied = not synced")
	}
}

// TestStartFrom checks the start rule.
func TestStartFrom(t *testing.T) {
	empty := func() bool { return true }
	holds := func() bool { return false }
	tests := []struct {
		name       string
		cold       string
		p          Persisted
		wantResume string
		wantCold   string
		wantUnused string
	}{
		{name: "resume point and objects: resume", p: Persisted{ResourceVersion: "10", Empty: holds}, wantResume: "10"},
		{name: "no resume point: list", p: Persisted{Empty: holds}},
		{name: "resume point, no object: list", p: Persisted{ResourceVersion: "10", Empty: empty}, wantUnused: "10"},
		{name: "reset: list for the scope change", p: Persisted{Reset: true, Empty: empty}, wantCold: ReasonScopeChange},
		{name: "reset with a given reason keeps it", cold: ReasonCorrupt, p: Persisted{Reset: true}, wantCold: ReasonCorrupt},
		{name: "reset store with a resume point and objects resumes", p: Persisted{ResourceVersion: "10", Empty: holds, Reset: true}, wantResume: "10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{ColdReason: tc.cold}
			unused := o.StartFrom(tc.p)
			if o.ResumeFrom != tc.wantResume || o.ColdReason != tc.wantCold || unused != tc.wantUnused {
				t.Errorf("StartFrom(%+v): ResumeFrom %q, ColdReason %q, unused %q; want %q, %q, %q",
					tc.p, o.ResumeFrom, o.ColdReason, unused, tc.wantResume, tc.wantCold, tc.wantUnused)
			}
		})
	}
}
