//go:build !linux

package controlplane

import (
	"errors"
	"syscall"
)

// ErrLinuxOnly is what Start returns off Linux: the control plane relies on process groups and
// parent-death signals (and kube-apiserver, etcd and the simulated kubelets' network namespaces
// are Linux programs), so the sandbox and the control-plane tests run on Linux only. Every other
// nodekeeper command works on every platform.
var ErrLinuxOnly = errors.New("the sandbox runs on Linux only (it starts etcd and kube-apiserver as local Linux processes); " +
	"every other nodekeeper command works on this platform")

// Supported reports whether the local control plane can run here: never, off Linux.
func Supported() error { return ErrLinuxOnly }

func groupAndParentDeath() *syscall.SysProcAttr { return nil }

func terminateGroup(int) {}

func killGroup(int) {}
