package controlplane

import (
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

// BinDir finds the directory holding etcd, kube-apiserver and kube-controller-manager. It looks,
// in order, at:
//
//   - explicit, when not empty (`nodekeeper sandbox --controlplane-dir`): only there;
//   - $NODEKEEPER_CONTROLPLANE_DIR: only there;
//   - controlplane/ beside the running executable, through symlinks too: where the release's
//     nodekeeper-controlplane archive unpacks when it is unpacked beside the binary, and where
//     `make build` and `make controlplane` put them in a checkout (bin/nodekeeper, bin/controlplane);
//   - $XDG_DATA_HOME/nodekeeper/controlplane (default ~/.local/share/nodekeeper/controlplane): for
//     a binary installed on the PATH with the control plane kept in the user's data directory;
//   - bin/controlplane in the nearest enclosing checkout of the working directory (go test runs
//     test binaries from a temporary directory, with the package's directory as working directory).
func BinDir(explicit string) (string, error) {
	for _, pinned := range []struct{ dir, what string }{{explicit, "--controlplane-dir"}, {os.Getenv(binDirEnv), binDirEnv}} {
		if pinned.dir == "" {
			continue
		}
		if err := checkBins(pinned.dir); err != nil {
			return "", fmt.Errorf("%s=%s: %w", pinned.what, pinned.dir, err)
		}
		return pinned.dir, nil
	}
	candidates := binDirCandidates()
	for _, dir := range candidates {
		if checkBins(dir) == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("control plane binaries (etcd, kube-apiserver, kube-controller-manager) not found in %s: "+
		"unpack the release's nodekeeper-controlplane_<version>_linux_<arch>.tar.gz beside the nodekeeper binary (it holds controlplane/), "+
		"or pass --controlplane-dir (or set %s) to a directory that holds them, or run `make controlplane` in a nodekeeper checkout",
		strings.Join(candidates, ", "), binDirEnv)
}

// binDirCandidates lists the places BinDir searches after the pinned ones, without repeats.
func binDirCandidates() []string {
	var out []string
	seen := map[string]bool{}
	add := func(dir string) {
		if dir != "" && !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	if exe, err := os.Executable(); err == nil {
		add(filepath.Join(filepath.Dir(exe), "controlplane"))
		// Installed as a symlink (kubectl-nodekeeper, or /usr/local/bin/nodekeeper pointing into
		// an unpacked release): the archive's controlplane/ sits beside the real file.
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			add(filepath.Join(filepath.Dir(real), "controlplane"))
		}
	}
	if data := xdgDataHome(); data != "" {
		add(filepath.Join(data, "nodekeeper", "controlplane"))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			add(filepath.Join(dir, "bin", "controlplane"))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return out
}

// xdgDataHome is $XDG_DATA_HOME, else ~/.local/share as the XDG base directory specification
// says; "" when neither can be known.
func xdgDataHome() string {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share")
	}
	return ""
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
