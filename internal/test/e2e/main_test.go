//go:build linux

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// env is the control plane the tests share (the sandbox test starts its own through the binary).
var env *testenv.Env

// repoRoot is the checkout the binary is built from; binDir is its bin/.
var repoRoot, binDir string

// builtCommit is the checkout's HEAD when make build ran: the commit the binaries must report
// (read then, not when a test runs, so that a commit made meanwhile does not fail the check).
var builtCommit string

// buildTimeout bounds `make build`: cached it takes seconds, cold on two busy cores many minutes.
const buildTimeout = 30 * time.Minute

func TestMain(m *testing.M) {
	flag.Parse()
	if flagSet("test.list") {
		os.Exit(m.Run())
	}
	if err := build(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	testenv.RunMain(m, testenv.MainOptions{
		Options: testenv.Options{
			// The audit test reads the control plane's own audit log, as a user would read the
			// one of their cluster: leases and Nodes at Metadata level, like the seeds' EKS events.
			AuditPolicy:  testenv.AuditLeasesAndNodes,
			StartTimeout: 5 * time.Minute,
		},
		QuietKlog: true,
	}, &env)
}

func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != ""
}

// build runs `make build` in the repository root, so that the binary under test is the one
// this tree builds, never one left over from an earlier checkout.
func build() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			repoRoot = dir
			break
		}
		if filepath.Dir(dir) == dir {
			return fmt.Errorf("no go.mod above %s", wd)
		}
	}
	binDir = filepath.Join(repoRoot, "bin")
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse HEAD: %v", err)
	}
	builtCommit = strings.TrimSpace(string(head))
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "build")
	cmd.Dir = repoRoot
	// A make that runs these tests must not hand its job server or flags to this one.
	cmd.Env = withoutVars(os.Environ(), "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("make build in the repository root failed after %s: %v\n%s", time.Since(start).Round(time.Second), err, out)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "e2e: make build done in %s\n", time.Since(start).Round(time.Millisecond))
	}
	for _, name := range []string{"nodekeeper", "kubectl-nodekeeper", "nodekeeper-controller"} {
		if info, err := os.Stat(filepath.Join(binDir, name)); err != nil || info.Mode()&0o111 == 0 {
			return fmt.Errorf("make build succeeded but bin/%s is not an executable (%v)", name, err)
		}
	}
	return nil
}

func withoutVars(environ []string, names ...string) []string {
	var out []string
next:
	for _, kv := range environ {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
