//go:build unix

package store_test

import "syscall"

func umask(m int) int { return syscall.Umask(m) }
