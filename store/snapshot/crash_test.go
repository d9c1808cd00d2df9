package snapshot_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/informerdb/informerdb/store/snapshot"
)

// crashChild is the child of TestRestoreKilled: it restores the file into
// the database and, once 8192 records have gone to the backend, says so and
// waits to be killed.
func crashChild(arg string) {
	file, dst, _ := strings.Cut(arg, "|")
	_, err := snapshot.Restore(context.Background(), file, dst, &snapshot.RestoreOptions{Force: true, Progress: func(p snapshot.Progress) {
		if p.Op == "restore" && p.Done == 8192 {
			os.Stdout.WriteString("ready\n")
			select {}
		}
	}})
	os.Stdout.WriteString("restore returned: " + errString(err) + "\n")
	os.Exit(1)
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// A restore killed (SIGKILL) half-way leaves the target store as it was,
// and the next restore completes.
func TestRestoreKilled(t *testing.T) {
	src := boltURL(t)
	fill(t, src, 10000, 0, "77")
	file := snapPath(t)
	saved, err := snapshot.SaveURL(t.Context(), file, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range rawBackends {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			dst := be.url(t)
			fill(t, dst, 10, 0, "5")
			before, err := snapshot.Status(ctx, dst, nil)
			if err != nil {
				t.Fatal(err)
			}
			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), "SNAPSHOT_TEST_CRASH="+file+"|"+dst)
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if line != "ready\n" {
				// The test fails below either way; kill and reap so no child
				// outlives it. Their errors would only repeat the failure.
				_ = child.Process.Kill()
				_ = child.Wait()
				t.Fatalf("child: %q, %v", line, err)
			}
			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			// The child must have died of the kill, not finished (or failed) on
			// its own, or the checks below test no interrupted restore.
			var exitErr *exec.ExitError
			if err := child.Wait(); !errors.As(err, &exitErr) || exitErr.ExitCode() != -1 {
				t.Fatalf("child after SIGKILL: %v, want killed by the signal", err)
			}

			after, err := snapshot.Verify(ctx, dst, &snapshot.VerifyOptions{Entries: entries})
			if err != nil {
				t.Fatalf("after the kill: %v", err)
			}
			if diff := cmp.Diff(before.Stores, after.Stores); diff != "" {
				t.Errorf("a killed restore changed the store (-before +after):\n%s", diff)
			}
			if _, err := snapshot.Restore(ctx, file, dst, &snapshot.RestoreOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			got, err := snapshot.Verify(ctx, dst, &snapshot.VerifyOptions{Entries: entries})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := got.Store(podsName), saved.Store(podsName); g.ContentHash != w.ContentHash || g.Info.ResourceVersion != "77" {
				t.Errorf("after the next restore: %+v, want hash %s, resume point 77", g, w.ContentHash)
			}
		})
	}
}
