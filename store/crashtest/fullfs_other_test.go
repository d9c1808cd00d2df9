//go:build !linux

package crashtest

import (
	"fmt"
	"os"
)

// envFullFS names the child of TestFullFileSystem, which runs on Linux only
// (it mounts a tmpfs in a mount namespace of its own).
const envFullFS = "INFORMERDB_CRASHTEST_FULLFS"

func fullFSChild(string) int {
	fmt.Fprintln(os.Stderr, "the full file system child runs on Linux only")
	return 3
}
