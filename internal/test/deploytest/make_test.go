package deploytest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// makeDryRun prints the commands `make target` would run (make -n), without running them, from
// the repository root and with the caller's make flags left out.
func makeDryRun(t *testing.T, target string, vars ...string) string {
	t.Helper()
	trackInputs(t, "Makefile")
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed (hack/install-deps.sh installs it): %v", err)
	}
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory", target}, vars...)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = withoutEnv(os.Environ(), "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return string(out)
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// `make run` against a cluster that answers costs a `go build`: the Makefile's run target depends
// on build alone, and hack/run.sh builds the control plane only on its sandbox path.
func TestMakeRunNeedsNoControlPlane(t *testing.T) {
	trackInputs(t, "hack/run.sh")
	plan := makeDryRun(t, "run")
	for _, forbidden := range []string{"controlplane", "build-helm", "install-deps"} {
		if strings.Contains(plan, forbidden) {
			t.Errorf("make -n run mentions %q:\n%s", forbidden, plan)
		}
	}
	for _, want := range []string{"go build", "bash hack/run.sh"} {
		if !strings.Contains(plan, want) {
			t.Errorf("make -n run does not run %q:\n%s", want, plan)
		}
	}

	// In hack/run.sh the control-plane build comes after the branch that reports on a cluster that
	// answers and exits.
	script := string(readRepoFile(t, "hack/run.sh"))
	exitAfterReport := regexp.MustCompile(`(?m)^if cluster_answers; then\n(?:  .*\n)*?  exit 0\nfi\n`).FindStringIndex(script)
	build := strings.Index(script, "bash hack/build-controlplane.sh")
	switch {
	case exitAfterReport == nil:
		t.Fatal("hack/run.sh has no `if cluster_answers; then ... exit 0; fi` branch for a cluster that answers")
	case build < 0:
		t.Error("hack/run.sh does not build the control plane for the sandbox (bash hack/build-controlplane.sh)")
	case build < exitAfterReport[1]:
		t.Error("hack/run.sh builds the control plane before it knows whether a cluster answers")
	}
}

// TestMakeBuildSaysWhatItBuilds: a cold `make build` compiles for minutes; a line before the first
// go build says what is being built, so the terminal is not silent all that time.
func TestMakeBuildSaysWhatItBuilds(t *testing.T) {
	plan := makeDryRun(t, "build")
	say, build := strings.Index(plan, "echo \"building bin/nodekeeper"), strings.Index(plan, "go build")
	if say < 0 || build < 0 || say > build {
		t.Errorf("make -n build says nothing before its first go build:\n%s", plan)
	}
}
