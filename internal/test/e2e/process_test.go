//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/syncbuf"
)

// daemon is a long-running nodekeeper process (the controller, the sandbox) started in its own
// process group, killed with its group if the test ends early, and with the kernel's help if
// the test binary dies first.
type daemon struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout syncbuf.Buffer
	stderr syncbuf.Buffer
	done   chan struct{}
	code   int // valid once done is closed
	err    error
}

// start starts bin with args for the user and returns at once.
func (u *user) start(bin string, args ...string) *daemon {
	u.t.Helper()
	d := &daemon{t: u.t, name: strings.Join(append([]string{bin}, args...), " "), done: make(chan struct{})}
	d.cmd = u.command(context.Background(), bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = &d.stdout, &d.stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		u.t.Fatalf("start %s: %v", d.name, err)
	}
	go func() {
		err := d.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			d.code = ee.ExitCode() // -1 when a signal ended it
			d.err = err
		case err != nil:
			d.code, d.err = -1, err
		}
		close(d.done)
	}()
	u.t.Cleanup(func() {
		if !d.exited() {
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	})
	return d
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *daemon) String() string {
	state := "running"
	if d.exited() {
		state = fmt.Sprintf("exit %d (%v)", d.code, d.err)
	}
	return fmt.Sprintf("%s: %s\n--- stdout:\n%s\n--- stderr:\n%s", d.name, state, clip(d.stdout.String()), clip(d.stderr.String()))
}

// waitFor polls cond every interval until it holds; it fails the test when the process exits
// first or timeout passes. The timeout only catches a hang: it is minutes, not a measurement.
func (d *daemon) waitFor(timeout time.Duration, what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if d.exited() {
			d.t.Fatalf("exited while waiting for %s:\n%s", what, d)
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("waited %s for %s:\n%s", timeout, what, d)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// signal sends sig to the process itself (not its group), as kill(1) or a terminal would to a
// foreground process, and waits for it to exit; it returns the exit code.
func (d *daemon) signal(sig syscall.Signal, timeout time.Duration) int {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("send %v: %v\n%s", sig, err, d)
	}
	select {
	case <-d.done:
		return d.code
	case <-time.After(timeout):
		d.t.Fatalf("still running %s after %v:\n%s", timeout, sig, d)
		return -1
	}
}

// proc is what /proc/PID/stat says about a process.
type proc struct {
	pid, ppid, pgid int
	comm            string
	state           byte
	start           uint64 // start time in clock ticks since boot: a PID is reused, this pair is not
}

func (p proc) String() string { return fmt.Sprintf("%d (%s, state %c)", p.pid, p.comm, p.state) }

// readProc reads /proc/PID/stat; ok is false when there is no such process.
func readProc(pid int) (p proc, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(data)
	open, closeIdx := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closeIdx < open {
		return proc{}, false
	}
	fields := strings.Fields(s[closeIdx+1:]) // state ppid pgrp session tty tpgid flags minflt ... starttime (22nd of the line)
	if len(fields) < 20 {
		return proc{}, false
	}
	p = proc{pid: pid, comm: s[open+1 : closeIdx], state: fields[0][0]}
	// The kernel's name is cut at 15 bytes ("kube-controller"): the program's own is whole.
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); argv0 != "" {
			p.comm = filepath.Base(argv0)
		}
	}
	p.ppid, _ = strconv.Atoi(fields[1])
	p.pgid, _ = strconv.Atoi(fields[2])
	p.start, _ = strconv.ParseUint(fields[19], 10, 64)
	return p, true
}

// allProcs lists every process of the machine.
func allProcs(t *testing.T) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// descendants lists the processes below pid (children, grandchildren, ...).
func descendants(t *testing.T, pid int) []proc {
	t.Helper()
	all := allProcs(t)
	children := map[int][]proc{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// alive reports whether p still runs: the same PID with the same start time, not a zombie.
func alive(p proc) bool {
	now, ok := readProc(p.pid)
	return ok && now.start == p.start && now.state != 'Z' && now.state != 'X'
}
