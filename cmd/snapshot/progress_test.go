package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store/snapshot"
)

func TestProgressLine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	p := &progress{op: "restore", start: t0, now: func() time.Time { return now }}
	for _, tc := range []struct {
		after time.Duration
		r     snapshot.Progress
		want  string
	}{
		{0, snapshot.Progress{Done: 0, Total: 100}, "restore: 0/100 objects, 0/s"},
		{2 * time.Second, snapshot.Progress{Done: 50, Total: 100, Store: "v1/pods"}, "restore: 50/100 objects, 25/s, ETA 2s (v1/pods)"},
		{4 * time.Second, snapshot.Progress{Done: 100, Total: 100}, "restore: 100/100 objects, 25/s"},
		{4 * time.Second, snapshot.Progress{Done: 40}, "restore: 40 objects, 10/s"},
		{4 * time.Second, snapshot.Progress{Op: "verify", Done: 40}, "restore (verify): 40 objects, 10/s"},
	} {
		now = t0.Add(tc.after)
		if got := p.line(tc.r); got != tc.want {
			t.Errorf("after %v, %+v: %q, want %q", tc.after, tc.r, got, tc.want)
		}
	}
}

// Progress goes to stderr only when it is a terminal: a buffer gets none.
func TestProgressSilentWhenNotATerminal(t *testing.T) {
	_, file := savedFile(t, 3)
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"status", file}, &out, &errOut); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr %q, want nothing", errOut.String())
	}
}
