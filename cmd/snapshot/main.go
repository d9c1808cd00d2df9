// Command snapshot saves informerdb databases to portable snapshot files,
// restores them into any backend, and inspects and verifies files and
// databases. The work is done by package store/snapshot; this is the thin
// command layer.
//
//	snapshot save <store-url> <file> [--store name]...
//	snapshot restore <file> <store-url> [--force] [--drop-resume-point] [--store name]...
//	snapshot status <file|store-url> [-w simple|json|table]
//	snapshot verify <file|store-url> [-w simple|json|table]
//	snapshot ls <file|store-url> [--store name] [-o yaml|json]
//	snapshot get <file|store-url> <key> [--store name] [-o yaml|json]
//	snapshot by-index <file|store-url> <index> <value> [--store name] [-o yaml|json]
//	snapshot compact <bolt-file>
//	snapshot rekey <store-url> --key FILE [--old-key FILE]... [--store name]...
//	snapshot drop <store-url> --store name [--store name]...
//
// Store URLs are those of store.Open: bolt:///abs/file.db,
// badger:///abs/dir, memory:///abs/file.snap, memdb:///abs/file.snap. Bolt
// and badger databases are locked by the process that has them open: the
// command reads and writes offline databases (a running process snapshots
// itself with snapshot.SaveURL or snapshot.SaveStores).
//
// Exit codes: 0 success, 1 other errors, 2 usage, 3 corrupt or
// incompatible data (checksum, truncation, failed verification), 4 restore
// target not empty, 5 database locked or in use.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal cancels ctx and the command winds down (a restore
	// rolls back its store); stop then restores the default handling, so
	// that a second Ctrl-C kills a command that does not end.
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code. Errors are
// printed to stderr.
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
