//go:build unix && !linux

package apiserver

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in its own process group, so that killing the
// group also kills anything it forked.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(p *os.Process) {
	// Negative pid: the whole process group, whose id is the child's pid.
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
