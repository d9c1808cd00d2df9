// Command report is the benchmark harness behind `make bench`: restarts of
// N ConfigMaps on a real kube-apiserver (informerdb resume on bolt vs
// client-go's cold start) and the memory of every backend vs client-go's
// indexer, each in a fresh process. It prints the tables, rewrites the
// generated sections of BENCHMARKS.md and writes the SVG plots.
//
//	go run ./test/bench/report [-n 10000,50000] [-mem-n 100000] [-doc BENCHMARKS.md] [-plots docs/bench]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/informerdb/informerdb/test/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if len(os.Args) > 1 && os.Args[1] == bench.ProbeArg {
		err = bench.ProbeMain(ctx, os.Args[2:])
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("n", "10000,50000", "comma-separated numbers of ConfigMaps for the restart benchmark; empty skips it")
	changes := fs.Float64("changes", 0.1, "percent of the objects changed while the informer is down")
	memN := fs.Int("mem-n", 100000, "ConfigMaps held for the memory benchmark; 0 skips it")
	memImpls := fs.String("mem-impls", strings.Join(bench.MemImpls, ","), "implementations for the memory benchmark")
	doc := fs.String("doc", "BENCHMARKS.md", "Markdown file whose generated sections are rewritten; empty writes none")
	plots := fs.String("plots", "docs/bench", "directory for the SVG plots; empty writes none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)

	sections := map[string]string{}
	machine := bench.ThisMachine()
	sections["machine"] = machine.Markdown()
	fmt.Fprint(stdout, machine.Markdown())

	if *sizes != "" {
		var rs []*bench.Result
		for _, f := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("-n %q: want positive numbers", f)
			}
			fmt.Fprintf(stdout, "\n== restart, %d ConfigMaps ==\n", n)
			r, err := restart(ctx, n, *changes, stdout)
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
		table := bench.RestartMarkdown(rs)
		fmt.Fprintf(stdout, "\n%s", table)
		sections["restart"] = table
		if err := writeChart(*plots, "time-to-synced.svg", bench.TimeChart(rs)); err != nil {
			return err
		}
		if err := writeChart(*plots, "api-bytes.svg", bench.BytesChart(rs)); err != nil {
			return err
		}
	}

	if *memN > 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		var ms []bench.MemResult
		for _, impl := range strings.Split(*memImpls, ",") {
			fmt.Fprintf(stdout, "memory: %s holding %d ConfigMaps...\n", impl, *memN)
			m, err := bench.MeasureMemory(ctx, exe, impl, *memN)
			if err != nil {
				return err
			}
			ms = append(ms, m)
		}
		table := bench.MemMarkdown(ms)
		fmt.Fprintf(stdout, "\n%s", table)
		sections["memory"] = table
		if err := writeChart(*plots, "memory.svg", bench.MemChart(ms)); err != nil {
			return err
		}
	}

	if *doc == "" {
		return nil
	}
	data, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	text := string(data)
	for _, name := range []string{"machine", "restart", "memory"} {
		body, ok := sections[name]
		if !ok {
			continue
		}
		if text, err = bench.ReplaceSection(text, name, body); err != nil {
			return err
		}
	}
	return os.WriteFile(*doc, []byte(text), 0o644)
}

// restart runs the restart scenario on a fresh loopback API server.
func restart(ctx context.Context, n int, changes float64, log io.Writer) (*bench.Result, error) {
	cl, err := bench.LaunchCluster(ctx)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	r, err := bench.Run(ctx, cl, bench.Config{N: n, Backend: "bolt", ChangePercent: changes, Log: log})
	if err != nil {
		return nil, err
	}
	if err := r.WriteTable(log); err != nil {
		return nil, err
	}
	return r, nil
}

func writeChart(dir, name string, c bench.Chart) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := c.WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
