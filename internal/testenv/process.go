package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// process is one control-plane binary run in its own process group, so that stopping it also
// stops anything it spawned. Pdeathsig makes the kernel kill it if the test binary dies first
// (a panic, a timeout kill, or Ctrl-C), which is what keeps interrupted test runs from leaking.
// Both are Linux facilities (process_linux.go); the control plane runs on Linux only, and on other
// platforms Start says so (process_other.go), so that the rest of the binary builds everywhere.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

func (p *process) start() error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = groupAndParentDeath()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return nil
}

func (p *process) exited() bool {
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// stop sends SIGTERM to the process group, then SIGKILL if it has not exited in time.
func (p *process) stop(grace time.Duration) {
	if p.cmd == nil || p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	terminateGroup(pgid)
	select {
	case <-p.done:
	case <-time.After(grace):
		killGroup(pgid)
		<-p.done
	}
	// Anything left in the group (there should be nothing) goes too.
	killGroup(pgid)
}

// logTail returns the last lines of the process log, for error messages.
func (p *process) logTail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func (p *process) exitError() error {
	if !p.exited() {
		return nil
	}
	msg := fmt.Sprintf("%s exited", p.name)
	if p.err != nil {
		msg += ": " + p.err.Error()
	}
	return fmt.Errorf("%s; last log lines (%s):\n%s", msg, filepath.Base(p.logPath), p.logTail(20))
}

// binDirEnv names the variable that points at prebuilt control-plane binaries.
const binDirEnv = "NODEKEEPER_CONTROLPLANE_DIR"

// BinDir finds the directory holding etcd, kube-apiserver and kube-controller-manager:
// $NODEKEEPER_CONTROLPLANE_DIR, else bin/controlplane in the nearest enclosing checkout, else
// controlplane/ beside the running executable (how a release of the sandbox ships them).
func BinDir() (string, error) {
	if dir := os.Getenv(binDirEnv); dir != "" {
		if err := checkBins(dir); err != nil {
			return "", fmt.Errorf("%s=%s: %w", binDirEnv, dir, err)
		}
		return dir, nil
	}
	var candidates []string
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			candidates = append(candidates, filepath.Join(dir, "bin", "controlplane"))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), "controlplane"))
	}
	for _, dir := range candidates {
		if checkBins(dir) == nil {
			return dir, nil
		}
	}
	return "", errors.New("control plane binaries (etcd, kube-apiserver, kube-controller-manager) not found: " +
		"run `make controlplane` in the nodekeeper checkout, or set " + binDirEnv + " to a directory that holds them")
}

func checkBins(dir string) error {
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("missing %s", name)
		}
		if info.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", name)
		}
	}
	return nil
}
