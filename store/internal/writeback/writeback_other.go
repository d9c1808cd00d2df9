//go:build !linux

package writeback

import "syscall"

// Supported says whether Start does anything on this system:
// sync_file_range is Linux's.
const Supported = false

// Start does nothing here.
func Start(syscall.RawConn) {}
