package apiserver

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in its own process group, so that killing the
// group also kills anything it forked, and asks the kernel to kill it if the
// test binary dies without running its cleanups (a -timeout panic, SIGKILL):
// a leaked etcd or kube-apiserver would hold ports and CPU on shared machines.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(p *os.Process) {
	// Negative pid: the whole process group, whose id is the child's pid.
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}
