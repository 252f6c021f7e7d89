//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Generous bounds for a loaded machine (the sandbox starts its own etcd, kube-apiserver and
// kube-controller-manager); each only catches a hang.
const (
	sandboxStartTimeout = 8 * time.Minute
	// The sandbox gives kube-apiserver 90 s to finish its requests on SIGTERM; on a quiet
	// machine it stops in seconds.
	sandboxStopTimeout = 4 * time.Minute
)

// TestSandbox starts `nodekeeper sandbox` as a user would, uses it through the kubeconfig it
// writes, stops it with Ctrl-C (SIGINT) and checks that it leaves nothing behind: no process
// it started, no temporary directory, no kubeconfig.
func TestSandbox(t *testing.T) {
	t.Parallel() // its own control plane: it shares nothing with the other tests
	u := newUser(t)
	kubeconfig := filepath.Join(u.dir, "sandbox.kubeconfig")
	const leaked = 3
	d := u.start(binary("nodekeeper"), "sandbox", "--write-kubeconfig", kubeconfig,
		"--healthy", "2", "--stopped", "0", "--legacy-zombies", "1", "--modern-zombies", "0", "--leaked", "3")

	// The kubeconfig is written last, once the sandbox is ready; it must then answer through
	// the binary itself.
	var rep leaseReport
	d.waitFor(sandboxStartTimeout, "the sandbox's kubeconfig to list its leases", func() bool {
		if _, err := os.Stat(kubeconfig); err != nil {
			return false
		}
		r := u.run("leases", "--kubeconfig", kubeconfig, "-n", "kube-node-lease", "-o", "json")
		if r.code != exitOK {
			t.Logf("not yet: %s", r)
			return false
		}
		rep = leasesJSON(t, r)
		n := 0
		for _, class := range rep.classes() {
			if class == "leaked" {
				n++
			}
		}
		return n == leaked
	})
	if info, err := os.Stat(kubeconfig); err != nil {
		t.Error(err)
	} else if info.Mode().Perm() != 0o600 {
		t.Errorf("the kubeconfig has mode %v, want 0600", info.Mode().Perm())
	}
	mustContain(t, result{args: []string{"sandbox"}, stdout: d.stdout.String(), stderr: d.stderr.String()}, d.stdout.String(),
		"export KUBECONFIG="+kubeconfig, "Ctrl-C")
	// What it tells the user to run works as told: export KUBECONFIG, gc --dry-run, audit.
	follower := newUser(t)
	follower.dir = u.dir
	follower.setenv("KUBECONFIG", kubeconfig)
	r := follower.expect(exitOK, "gc", "--dry-run", "-o", "json")
	if res := decode[gcResult](t, r, "GCResult"); len(res.Results) != leaked {
		t.Errorf("gc --dry-run in the sandbox would act on %d leases, want its %d leaked:\n%s", len(res.Results), leaked, r)
	}
	var auditLog string
	for _, line := range strings.Split(d.stdout.String(), "\n") {
		// The hints name the binary as it was run (bin/nodekeeper, or a path to it).
		if f := strings.Fields(line); len(f) == 3 && filepath.Base(f[0]) == "nodekeeper" && f[1] == "audit" {
			auditLog = f[2]
		}
	}
	if auditLog == "" {
		t.Errorf("the sandbox does not say which audit log to read:\n%s", d)
	} else {
		r = follower.expect(exitOK, "audit", auditLog, "-o", "json")
		if rep := decode[auditReport](t, r, "AuditReport"); len(rep.Inputs) != 1 || rep.Inputs[0].Events == 0 {
			t.Errorf("the sandbox's audit log holds no event: %+v\n%s", rep.Inputs, r)
		}
	}

	// What it started: the control plane, each in a process group of its own.
	children := descendants(t, d.pid())
	started := map[string]bool{}
	for _, p := range children {
		started[p.comm] = true
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if !started[name] {
			t.Errorf("no %s among the sandbox's processes %v", name, children)
		}
	}
	t.Cleanup(func() { // a failed test must not leave them running
		for _, p := range children {
			if alive(p) {
				_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	tmp, err := os.ReadDir(u.tmp)
	if err != nil || len(tmp) == 0 {
		t.Errorf("the sandbox keeps nothing in $TMPDIR (%v)? want its control plane's directory there", err)
	}

	// Ctrl-C: it stops everything and exits 0.
	if code := d.signal(syscall.SIGINT, sandboxStopTimeout); code != exitOK {
		t.Errorf("exit code %d after SIGINT, want 0:\n%s", code, d)
	}
	mustContain(t, result{args: []string{"sandbox"}, stdout: d.stdout.String(), stderr: d.stderr.String()}, d.stderr.String(), "sandbox: stopping")

	// Nothing it started outlives it. Its processes were stopped and reaped before it exited;
	// the poll only gives the kernel time to finish a SIGKILL delivered by the parent-death
	// signal.
	var left []string
	deadline := time.Now().Add(time.Minute)
	for {
		left = nil
		for _, p := range children {
			if alive(p) {
				left = append(left, p.String())
			}
		}
		groups := map[int]bool{d.pid(): true}
		for _, p := range children {
			groups[p.pgid] = true
		}
		for _, p := range allProcs(t) {
			if groups[p.pgid] && p.state != 'Z' {
				left = append(left, "group member "+p.String())
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("processes left after the sandbox exited: %s", strings.Join(left, ", "))
	}
	if entries, _ := os.ReadDir(u.tmp); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the sandbox left %v in $TMPDIR", names)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig it wrote is still there (%v)", err)
	}
}
