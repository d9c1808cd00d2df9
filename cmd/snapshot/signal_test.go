package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/driver"
)

// envStallMain makes the test binary run the command (runMain, with its
// signal handling) with a "stall" backend registered whose Export writes
// one record and then waits: for its context ("ctx"), or for ever ("stuck":
// a database that does not close, as a damaged badger value log once made
// every Close hang).
const envStallMain = "SNAPSHOT_TEST_STALL_MAIN"

func stallMain(mode string) int {
	d := stallDriver{stuck: mode == "stuck"}
	store.Register("stall", d)
	return runMain(os.Args[1:], os.Stdout, os.Stderr)
}

type stallDriver struct{ stuck bool }

func (stallDriver) Open(context.Context, *url.URL, store.Options) (store.Store, error) {
	return nil, fmt.Errorf("stall: no stores: %w", store.ErrInvalid)
}

func (stallDriver) Stores(context.Context, *url.URL) ([]store.Info, error) {
	return []store.Info{{Backend: "stall", Name: "s", FormatVersion: 1, Codec: "json", Type: "t"}}, nil
}

func (d stallDriver) ListStores(ctx context.Context, u *url.URL) ([]store.StoreEntry, error) {
	infos, err := d.Stores(ctx, u)
	return driver.EntriesOf(infos), err
}

func (stallDriver) Drop(context.Context, *url.URL, string) error {
	return fmt.Errorf("stall: read-only: %w", store.ErrInvalid)
}

func (d stallDriver) Export(ctx context.Context, _ *url.URL, name string, fn func(store.Record) error) (store.Info, error) {
	if err := fn(store.Record{Key: "a", Data: []byte(`{}`)}); err != nil {
		return store.Info{}, err
	}
	if d.stuck {
		select {}
	}
	<-ctx.Done()
	return store.Info{}, ctx.Err()
}

func (stallDriver) Import(context.Context, *url.URL, store.Info, func() (store.Record, error)) error {
	return fmt.Errorf("stall: read-only: %w", store.ErrInvalid)
}

// TestSignalStopsSave runs save in a process of its own, sends it one
// SIGTERM or SIGINT while it writes its temporary file, and checks that it
// stops with the signal's exit code, leaving neither the temporary file
// nor the snapshot: whether the save winds down on its own (its context
// cancelled) or is stuck where the context does not reach.
func TestSignalStopsSave(t *testing.T) {
	for _, tc := range []struct {
		mode string
		sig  syscall.Signal
	}{
		{"ctx", syscall.SIGTERM},
		{"ctx", syscall.SIGINT},
		{"stuck", syscall.SIGTERM},
		{"stuck", syscall.SIGINT},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.mode, tc.sig), func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.idb")
			// A bound on the whole run, so that a command that ignores
			// the signal fails the test instead of hanging it.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-q", "save", "stall://x", file)
			cmd.Env = append(os.Environ(), envStallMain+"="+tc.mode)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			part := ""
			for part == "" {
				parts, err := filepath.Glob(file + ".part-*")
				if err != nil {
					t.Fatal(err)
				}
				if len(parts) > 0 {
					part = parts[0]
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("no temporary file appeared: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("save did not stop after one %v: %s", tc.sig, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(tc.sig) {
				t.Errorf("save stopped by %v: %v (%s); want exit code %d", tc.sig, err, stderr.String(), 128+int(tc.sig))
			}
			if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("temporary file %s after the stop: %v; want it removed", part, err)
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("snapshot %s after the stop: %v; want none", file, err)
			}
		})
	}
}
