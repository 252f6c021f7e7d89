//go:build !linux

package motoserver

import (
	"os"
	"syscall"
)

// ownGroup: elsewhere than Linux moto is one process killed by killGroup (the tests that start
// it run on Linux; this keeps the package building for the other platforms' type-check).
func ownGroup() *syscall.SysProcAttr { return nil }

// killGroup kills moto.
func killGroup(p *os.Process) { _ = p.Kill() }
