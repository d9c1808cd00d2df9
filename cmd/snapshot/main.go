// Command snapshot saves informerdb databases to portable snapshot files,
// restores them into any backend, and inspects and verifies files and
// databases. The work is done by package store/snapshot; this is the thin
// command layer.
//
//	snapshot save <database> <file> [--store name]...
//	snapshot restore <file> <database> [--force] [--drop-resume-point] [--store name]...
//	snapshot status <file|database> [-w simple|json|table]
//	snapshot verify <file|database> [-w simple|json|table]
//	snapshot ls <file|database> [--store name] [-o name|wide|yaml|json] [-l selector] [-n namespace]
//	snapshot get <file|database> <key> [--store name] [-o yaml|json|name|wide]
//	snapshot by-index <file|database> <index> <value> [--store name] [-o name|wide|yaml|json]
//	snapshot compact <bolt-file>
//	snapshot rekey <database> --key FILE [--old-key FILE]... [--store name]...
//	snapshot drop <database> --store name [--store name]...
//
// "snapshot help" and "snapshot help <command>" tell what each command
// does, what its arguments may be, its output formats and the exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitCorrupt  = 3
	exitNotEmpty = 4
	exitLocked   = 5
)

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// stopGrace is how long the command has, after the first SIGINT or
// SIGTERM cancelled its context, to wind down on its own (a restore rolls
// back its store, a save removes its temporary file) before it is stopped
// anyway, its temporary files removed.
const stopGrace = 3 * time.Second

// runMain runs the command line args as main does, with signal handling:
// the first SIGINT or SIGTERM cancels the command's context, and the
// command stops, by itself or after stopGrace, with the signal's exit code
// unless it had succeeded; a second signal stops it at once, its temporary
// files removed.
func runMain(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel()
	code := signalExit(sig)
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case c := <-done:
		if c == exitOK {
			return exitOK
		}
		return code
	case <-grace.C:
		fmt.Fprintf(stderr, "Error: %v: the command did not stop within %v; stopping it\n", sig, stopGrace)
	case sig = <-sigs:
		fmt.Fprintf(stderr, "Error: %v again: stopping the command\n", sig)
		code = signalExit(sig)
	}
	if err := temps.removeAll(); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
	}
	return code
}

// signalExit is the exit code of a command a signal stopped, as shells
// report it.
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitError
}

// tempFiles are the temporary files the running command writes, which
// runMain removes when it stops the command.
type tempFiles struct {
	mu    sync.Mutex // guards paths
	paths map[string]bool
}

var temps tempFiles

func (t *tempFiles) add(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paths == nil {
		t.paths = map[string]bool{}
	}
	t.paths[path] = true
}

// track returns a snapshot.SaveOptions.TempFile that registers the
// temporary file, and forget, which drops it once renamed or removed.
func (t *tempFiles) track() (add func(path string), forget func()) {
	var part string
	return func(path string) { part = path; t.add(path) }, func() {
		if part != "" {
			t.forget(part)
		}
	}
}

// forget drops path, which its command renamed or removed.
func (t *tempFiles) forget(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.paths, path)
}

// removeAll removes every registered file, keeping the lock so that none
// is registered meanwhile.
func (t *tempFiles) removeAll() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for p := range t.paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the temporary file: %w", err))
		}
		delete(t.paths, p)
	}
	return errors.Join(errs...)
}

// run executes the command line args, printing errors to stderr, and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "Error:", err)
	if hint := liveHint(args, err); hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	return exitCode(err)
}

// usageError marks errors in the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, snapshot.ErrNotEmpty):
		return exitNotEmpty
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrIncompatible):
		return exitCorrupt
	case errors.Is(err, store.ErrLocked), errors.Is(err, store.ErrInUse):
		return exitLocked
	}
	return exitError
}
