package motoserver

import (
	"os"
	"syscall"
)

// ownGroup starts moto in a process group of its own, killed by the kernel if the test binary
// dies first (moto's server may start workers of its own).
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills moto's process group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
