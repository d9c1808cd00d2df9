package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/informerdb/informerdb/store/snapshot"
)

// progress prints snapshot.Progress reports on one line of stderr, with
// the rate and, when the total is known, the time left. It prints nothing
// unless stderr is a terminal and --quiet is off. It is not safe for
// concurrent use (reports come from the goroutine running the command).
type progress struct {
	w       io.Writer // nil when silent
	op      string
	start   time.Time
	now     func() time.Time
	printed bool
}

func newProgress(cmd *cobra.Command, g *globals, op string) *progress {
	p := &progress{op: op, now: time.Now}
	p.start = p.now()
	if g.quiet {
		return p
	}
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.w = f
	}
	return p
}

// report is a snapshot Progress callback.
func (p *progress) report(r snapshot.Progress) {
	if p.w == nil {
		return
	}
	fmt.Fprint(p.w, "\r"+p.line(r)+"\033[K")
	p.printed = true
}

// line formats one report.
func (p *progress) line(r snapshot.Progress) string {
	el := p.now().Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(r.Done) / el
	}
	op := p.op
	if r.Op != "" && r.Op != p.op {
		op += " (" + r.Op + ")"
	}
	s := fmt.Sprintf("%s: %d objects", op, r.Done)
	if r.Total > 0 {
		s = fmt.Sprintf("%s: %d/%d objects", op, r.Done, r.Total)
	}
	s += fmt.Sprintf(", %.0f/s", rate)
	if r.Total > 0 && rate > 0 && r.Done < r.Total {
		s += fmt.Sprintf(", ETA %s", time.Duration(float64(r.Total-r.Done)/rate*float64(time.Second)).Round(time.Second))
	}
	if r.Store != "" {
		s += " (" + r.Store + ")"
	}
	return s
}

// done ends the progress line.
func (p *progress) done() {
	if p.w != nil && p.printed {
		fmt.Fprintln(p.w)
	}
}
