//go:build linux

package e2e

import (
	"strings"
	"testing"
)

// TestVersion checks that the binary is the one make build stamped from this tree.
func TestVersion(t *testing.T) {
	u := newUser(t)
	r := u.expect(exitOK, "version", "-o", "json")
	type version struct {
		Version, Commit string
	}
	v := decode[version](t, r, "Version")
	if v.Commit != builtCommit || v.Version == "" {
		t.Errorf("version %q commit %q, want the commit %s that make build stamped:\n%s", v.Version, v.Commit, builtCommit, r)
	}

	r = u.expect(exitUsage, "leeses")
	mustContain(t, r, r.stderr, `unknown command "leeses"`, "leases")
	u.expect(exitUsage, "leases", "--no-such-flag")

	// The same binary is the kubectl plugin, under the name make build links.
	r = u.runBinary(binary("kubectl-nodekeeper"), "--help")
	if r.code != exitOK || !strings.Contains(r.stdout, "kubectl nodekeeper") {
		t.Errorf("kubectl-nodekeeper --help does not read as a kubectl plugin:\n%s", r)
	}
}
