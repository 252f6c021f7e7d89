package deploytest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeNodekeeper stands in for bin/nodekeeper in a copy of hack/run.sh's tree: no cluster answers
// (leases with --request-timeout fails), and `sandbox` writes its kubeconfig, says "Press Ctrl-C"
// once, as the real one does, and stops cleanly on SIGINT.
const fakeNodekeeper = `#!/usr/bin/env bash
case "$1" in
leases) [[ " $* " == *" --request-timeout=5s "* ]] && exit 1; echo "leases report" ;;
gc) echo "gc report" ;;
sandbox)
  while [[ $# -gt 0 ]]; do [[ $1 == --write-kubeconfig ]] && kc=$2; shift; done
  # Python, not bash: bash cannot trap SIGINT in a job started with &, which Go's signal.Notify
  # (the real sandbox's) and Python's signal.signal can.
  exec python3 -c '
import signal, sys, time
def stop(*_):
    sys.stderr.write("sandbox: stopping\n"); sys.exit(130)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
print("Press Ctrl-C to stop it (everything it started is removed).", flush=True)
open(sys.argv[1], "w").write("apiVersion: v1\n")
while True: time.sleep(0.1)
' "$kc" ;;
esac
`

// TestRunScriptCtrlC: `make run` on the sandbox path ends with Ctrl-C, which reaches the whole
// process group; hack/run.sh then stops the sandbox and exits 0, so make reports no "Error 1", and
// "Press Ctrl-C" is said once (the sandbox's own line), not again by the script.
func TestRunScriptCtrlC(t *testing.T) {
	trackInputs(t, "hack/run.sh")
	root := t.TempDir()
	for _, d := range []string{"hack", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, content string) {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("hack/run.sh", string(readRepoFile(t, "hack/run.sh")))
	write("hack/build-controlplane.sh", "exit 0\n")
	write("bin/nodekeeper", fakeNodekeeper)

	cmd := exec.Command("bash", "hack/run.sh")
	cmd.Dir = root
	// No kubectl: the script probes with bin/nodekeeper, which finds no cluster.
	cmd.Env = append(withoutEnv(os.Environ(), "PATH", "KUBECONFIG"), "PATH=/usr/bin:/bin", "KUBECONFIG="+filepath.Join(root, "none"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	interrupted := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !interrupted && strings.HasPrefix(sc.Text(), "The sandbox keeps running") {
			// Ctrl-C in a terminal signals the foreground process group.
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			interrupted = true
		}
	}
	err = cmd.Wait()
	if !interrupted {
		t.Fatalf("the script never said the sandbox keeps running:\n%s\n%s", out.String(), stderr.String())
	}
	if err != nil {
		t.Errorf("hack/run.sh after Ctrl-C: %v (make would print Error), stdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
	}
	if n := strings.Count(out.String(), "Press Ctrl-C"); n != 1 {
		t.Errorf("Press Ctrl-C said %d times:\n%s", n, out.String())
	}
	if !strings.Contains(stderr.String(), "sandbox: stopping") {
		t.Errorf("the sandbox was not stopped:\n%s", stderr.String())
	}
}
