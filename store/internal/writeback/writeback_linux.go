//go:build linux

package writeback

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported says whether Start does anything on this system.
const Supported = true

// Start asks the kernel to start writing every dirty page of the file rc to
// the disk, and returns at once (sync_file_range with SYNC_FILE_RANGE_WRITE
// only): a hint that makes a later sync shorter, never a promise that
// anything is durable. Its errors are ignored: a page that cannot be written
// is the sync's to report, and a closed file has no dirty pages.
func Start(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	})
}
