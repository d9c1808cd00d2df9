//go:build !linux

package bolt

import "syscall"

// writebackSupported says whether startWriteback does anything here:
// sync_file_range is Linux's.
const writebackSupported = false

func startWriteback(syscall.RawConn) {}
