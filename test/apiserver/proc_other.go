//go:build !unix

package apiserver

import (
	"os"
	"syscall"
)

// sysProcAttr: no process groups here; the binaries do not fork.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(p *os.Process) { _ = p.Kill() }
