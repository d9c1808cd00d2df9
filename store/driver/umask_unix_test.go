//go:build unix

package driver_test

import "syscall"

func umask(m int) int { return syscall.Umask(m) }
