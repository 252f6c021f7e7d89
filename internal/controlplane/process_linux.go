package controlplane

import "syscall"

// Supported reports whether the local control plane can run here (nil on Linux).
func Supported() error { return nil }

// groupAndParentDeath puts a child in its own process group and has the kernel kill it when the
// process that started it dies.
func groupAndParentDeath() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminateGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGTERM) }

func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
