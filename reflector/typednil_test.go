package reflector

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestTypedNilAnswersAreErrorsNotPanics checks DESIGN invariant 8 for what a
// ListerWatcher hands back: a typed nil list with a nil error, or an Error
// watch event carrying a typed nil *metav1.Status, is reported and retried
// after a backoff; it does not crash the process (meta.ListAccessor accepts a
// typed nil list, whose GetResourceVersion then dereferences nil, and
// apierrors.FromObject dereferences a nil *metav1.Status).
func TestTypedNilAnswersAreErrorsNotPanics(t *testing.T) {
	nilList := listResult{obj: (*corev1.ConfigMapList)(nil)}
	nilStatus := watch.Event{Type: watch.Error, Object: (*metav1.Status)(nil)}
	tests := []struct {
		name       string
		resumeFrom string
		// stream forces the streaming list (auto mode would fall back
		// to a LIST, and not report the stream's failure).
		stream  bool
		lists   []listResult
		watches []watchResult
		before  []lwCall
		after   []lwCall
		wantErr string
	}{
		{
			name:    "typed nil list",
			lists:   []listResult{nilList, {obj: cmList("7", "")}},
			before:  []lwCall{fullList},
			after:   []lwCall{fullList, fullList, watchCall("7", "normal")},
			wantErr: "list",
		},
		{
			name:       "typed nil probe list",
			resumeFrom: "100",
			lists:      []listResult{nilList, {obj: cmList("100", "")}},
			before:     []lwCall{probeCall},
			after:      []lwCall{probeCall, probeCall, watchCall("100", "normal")},
			wantErr:    "probe list",
		},
		{
			name:       "error event with a typed nil status",
			resumeFrom: "100",
			lists:      []listResult{{obj: cmList("100", "")}},
			watches:    []watchResult{{w: watcher(true, added("a", "101"), nilStatus)}},
			before:     []lwCall{probeCall, watchCall("100", "normal")},
			after:      []lwCall{probeCall, watchCall("100", "normal"), watchCall("101", "normal")},
			wantErr:    "watch from 101",
		},
		{
			name:    "streaming list error event with a typed nil status",
			stream:  true,
			watches: []watchResult{{w: watcher(true, nilStatus)}},
			before:  []lwCall{streamCall},
			after:   []lwCall{streamCall, streamCall},
			wantErr: "streaming list",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{ResumeFrom: tc.resumeFrom}
			if tc.stream {
				on := true
				opts.WatchList = &on
			}
			h := newHarness(t, opts, tc.lists, tc.watches)
			h.start()
			h.waitFor("a backoff timer", h.clock.HasWaiters)
			if d := cmp.Diff(tc.before, h.lw.Calls()); d != "" {
				t.Errorf("calls before the backoff ended (-want +got):\n%s", d)
			}
			errs := h.rec.Errs()
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "reflector reflector: "+tc.wantErr) {
				t.Errorf("watch error handler got %v, want one error starting %q", errs, "reflector reflector: "+tc.wantErr)
			}
			h.clock.Step(time.Hour)
			if d := cmp.Diff(tc.after, h.waitLWCalls(len(tc.after))); d != "" {
				t.Errorf("calls after the backoff (-want +got):\n%s", d)
			}
		})
	}
}
