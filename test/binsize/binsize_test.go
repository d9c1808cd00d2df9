package binsize

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxRatio is the most the informerdb binary may weigh, as a multiple of
// client-go's.
const maxRatio = 1.10

// TestFactoryBinarySize builds both commands as BENCHMARKS.md does (`go
// build -ldflags='-s -w'`) and fails if informerdb's is more than maxRatio
// times client-go's. Sizes are deterministic for one toolchain and module
// graph, so the ratio is too. It builds two binaries: not in -short runs.
func TestFactoryBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	size := func(pkg string) int64 {
		t.Helper()
		out := filepath.Join(t.TempDir(), filepath.Base(pkg))
		cmd := exec.Command(goCmd, "build", "-ldflags=-s -w", "-o", out, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	clientgo := size("./cmd/factory-controller-clientgo")
	informerdb := size("./cmd/factory-controller")
	ratio := float64(informerdb) / float64(clientgo)
	msg := fmt.Sprintf("factory-controller %d bytes, factory-controller-clientgo %d bytes: %.3fx", informerdb, clientgo, ratio)
	if ratio > maxRatio {
		t.Errorf("%s; want at most %.2fx", msg, maxRatio)
	} else {
		t.Log(msg)
	}
}
