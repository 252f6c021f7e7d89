package releasecheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// controlPlaneBinaries are what the control-plane archive holds, under controlplane/.
var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

func controlPlaneArchiveName(version, goarch string) string {
	return fmt.Sprintf("nodekeeper-controlplane_%s_linux_%s.tar.gz", version, goarch)
}

// Each Linux platform has its control-plane archive, in the checksums file, holding exactly
// controlplane/ with the three binaries and the LICENSE.
func TestControlPlaneArchives(t *testing.T) {
	r := loadRelease(t)
	sums := checksums(t, r)
	for _, goarch := range []string{"amd64", "arm64"} {
		name := controlPlaneArchiveName(r.version, goarch)
		archive := filepath.Join(r.dist, name)
		fi, err := os.Stat(archive)
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("%-55s %6.1f MiB", name, float64(fi.Size())/(1<<20))
		if got := fileSHA256(t, archive); sums[name] != got {
			t.Errorf("%s: checksums file says %q, the file hashes to %s", name, sums[name], got)
		}
		names := extract(t, archive, t.TempDir(), controlPlaneName)
		slices.Sort(names)
		want := []string{"controlplane/LICENSE"}
		for _, b := range controlPlaneBinaries {
			want = append(want, "controlplane/"+b)
		}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s holds %v, want %v", name, names, want)
		}
	}
}

// The sandbox starts from the release alone: the host's nodekeeper archive and its control-plane
// archive unpacked side by side into an empty directory outside any checkout, run from an empty
// working directory with a bare environment (no NODEKEEPER_CONTROLPLANE_DIR, a fresh HOME), as a
// user who downloaded the two archives would. It becomes ready (writes its kubeconfig, answers
// `nodekeeper leases`), runs the archive's control plane, and a Ctrl-C (SIGINT) stops it with
// exit code 0, leaving no process, kubeconfig or temporary directory behind.
func TestSandboxFromArchives(t *testing.T) {
	r := loadRelease(t)
	if runtime.GOOS != "linux" {
		t.Skipf("the sandbox runs on Linux only; this is %s", runtime.GOOS)
	}
	install := t.TempDir()
	extract(t, filepath.Join(r.dist, archiveName(r.version, runtime.GOOS, runtime.GOARCH)), install, flatName)
	extract(t, filepath.Join(r.dist, controlPlaneArchiveName(r.version, runtime.GOARCH)), install, controlPlaneName)
	bin := filepath.Join(install, "nodekeeper")

	work, home, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	kubeconfig := filepath.Join(work, "sandbox.kubeconfig")
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "sandbox", "--write-kubeconfig", kubeconfig, "--healthy", "3", "--leaked", "2")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, &stdout, &stderr
	// Its own process group, so that a failing test can still stop everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("sandbox stdout:\n%s\nsandbox stderr:\n%s", stdout.String(), stderr.String())
		}
	})

	// Ready: the kubeconfig is written last. A cold start on a busy machine takes a while.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if _, err := os.Stat(kubeconfig); err == nil {
			break
		}
		select {
		case err := <-done:
			exited = true
			t.Fatalf("the sandbox exited before it was ready: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox wrote no kubeconfig within 5 minutes")
		}
	}
	running := processesUnder(t, install)
	for _, b := range controlPlaneBinaries {
		if !slices.Contains(running, filepath.Join(install, "controlplane", b)) {
			t.Errorf("no running %s from the unpacked archive; processes from %s: %v", b, install, running)
		}
	}
	leases := exec.Command(bin, "leases", "-A", "--kubeconfig", kubeconfig)
	leases.Dir, leases.Env = work, env
	out, err := leases.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kube-node-lease") {
		t.Errorf("nodekeeper leases -A against the sandbox: %v\n%s", err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("after Ctrl-C the sandbox exited with %v, want 0", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the sandbox did not stop within 2 minutes of SIGINT")
	}
	// Its processes are gone (the kernel may take a moment to reap the last of them).
	deadline = time.Now().Add(time.Minute)
	for left := processesUnder(t, install); len(left) > 0; left = processesUnder(t, install) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left running after the sandbox stopped: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the sandbox's kubeconfig %s is still there after it stopped (%v)", kubeconfig, err)
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) > 0 {
		t.Errorf("the sandbox left %v in its TMPDIR (%v)", entries, err)
	}
}

// processesUnder lists the executables under dir that running processes were started from.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue // gone, or a kernel thread
		}
		if strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			out = append(out, exe)
		}
	}
	return out
}
