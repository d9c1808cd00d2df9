package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestRunRejectsBadFlags checks that bad flags fail before anything is
// started, with an error naming the flag. The demo itself runs in
// test/bench's TestRun.
func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		help    bool
	}{
		{name: "zero objects", args: []string{"-n", "0"}, wantErr: "-n 0"},
		{name: "negative objects", args: []string{"-n", "-5"}, wantErr: "-n -5"},
		{name: "unknown backend", args: []string{"-backend", "sqlite"}, wantErr: `backend "sqlite": unknown`},
		{name: "non-persistent backend", args: []string{"-backend", "memory"}, wantErr: `backend "memory": unknown`},
		{name: "extra argument", args: []string{"now"}, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"-fast"}, wantErr: "flag provided but not defined"},
		{name: "unknown shape", args: []string{"-shape", "fleet"}, wantErr: `-shape "fleet": unknown`},
		{name: "shape on a read-only cluster", args: []string{"-shape", "crcache", "-kubeconfig", "/nonexistent"}, wantErr: "not with -kubeconfig"},
		{name: "state with a factory", args: []string{"-shape", "factory", "-state"}, wantErr: "-state is measured with"},
		{name: "help", args: []string{"-h"}, help: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tc.args, &stdout, &stderr)
			if err == nil {
				t.Fatalf("run(%q) succeeded, want an error", tc.args)
			}
			if tc.help {
				if !errors.Is(err, flag.ErrHelp) {
					t.Errorf("run(%q) = %v, want flag.ErrHelp", tc.args, err)
				}
				if !strings.Contains(stderr.String(), "-kubeconfig") {
					t.Errorf("help does not describe -kubeconfig:\n%s", stderr.String())
				}
				return
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("run(%q) printed %q before failing; nothing should have started", tc.args, stdout.String())
			}
		})
	}
}
