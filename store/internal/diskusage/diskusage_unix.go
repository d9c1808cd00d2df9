//go:build unix

package diskusage

import (
	"io/fs"
	"syscall"
)

// allocated returns the bytes of the blocks allocated to fi's file (st_blocks
// counts 512-byte units on every Unix).
func allocated(fi fs.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Blocks * 512, true
}
