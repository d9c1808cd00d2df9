package reflector

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestColdReason checks that a cold start's list is logged once at default
// verbosity with the reason it was given, and counted under that reason.
func TestColdReason(t *testing.T) {
	tests := []struct {
		reason string
		want   RelistStats
	}{
		{"", RelistStats{Cold: 1}},
		{ReasonCold, RelistStats{Cold: 1}},
		{ReasonScopeChange, RelistStats{ScopeChange: 1}},
		{ReasonCorrupt, RelistStats{Corrupt: 1}},
	}
	for _, tc := range tests {
		t.Run("reason="+tc.reason, func(t *testing.T) {
			h := newHarness(t, Options{ColdReason: tc.reason}, []listResult{{obj: cmList("5", "", cm("a", "2"))}}, nil)
			h.start()
			h.waitQCalls(1)
			h.waitLWCalls(2) // the list and the watch after it
			if d := cmp.Diff(tc.want, h.r.Stats().Relists); d != "" {
				t.Errorf("Relists (-want +got):\n%s", d)
			}
			logs := h.rec.Logs()
			if d := cmp.Diff([]string{"Listing"}, defaultLogs(h)); d != "" {
				t.Fatalf("default-verbosity log lines (-want +got):\n%s", d)
			}
			want := tc.reason
			if want == "" {
				want = ReasonCold
			}
			if !strings.Contains(logs[0], `"reason"="`+want+`"`) {
				t.Errorf("log line %s does not name reason %q", logs[0], want)
			}
		})
	}
}

func TestColdReasonInvalid(t *testing.T) {
	_, err := New(&fakeLW{n: newNotifier()}, &fakeQueue{n: newNotifier()}, &Options{ColdReason: ReasonExpired})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `ColdReason "expired"`) {
		t.Errorf("New with ColdReason expired: %v, want ErrInvalid naming it", err)
	}
}

func TestRelistStatsByReason(t *testing.T) {
	s := RelistStats{Cold: 1, Expired: 2, TooLarge: 3, TimeTravel: 4, CatchUp: 5, ScopeChange: 6, Corrupt: 7, Gone: 8}
	got := s.ByReason()
	if len(got) != len(Reasons) {
		t.Fatalf("ByReason has %d reasons, Reasons %d", len(got), len(Reasons))
	}
	for i, r := range Reasons {
		if got[r] != int64(i+1) {
			t.Errorf("ByReason()[%q] = %d, want %d", r, got[r], i+1)
		}
		var one RelistStats
		one.add(r)
		if one.ByReason()[r] != 1 {
			t.Errorf("add(%q) did not count under %q: %+v", r, r, one)
		}
	}
}
