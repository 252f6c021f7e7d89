package app

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoClusterSaysSo: with no API server at the address (a port nothing listens on, or no
// kubeconfig at all, where client-go falls back to http://localhost:8080), every cluster command
// says in one line that no cluster answered and how to point at one, not the raw
// `Get "http://...": dial tcp ...: connection refused`; plan's error names no aws-node
// DaemonSet, which is merely the first thing it reads.
func TestNoClusterSaysSo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"leases", []string{"leases", "--server", closed}},
		{"gc", []string{"gc", "--dry-run", "--server", closed}},
		{"doctor", []string{"doctor", "--server", closed}},
		{"plan", []string{"plan", "--add", "10", "--instance-type", "m5.large", "--server", closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := execute(t, false, tc.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			want := "error: no cluster answered at " + closed + " (connection refused): point nodekeeper at one with --kubeconfig FILE (or $KUBECONFIG), --context NAME or --server URL\n"
			if !strings.HasSuffix(errOut, want) {
				t.Errorf("stderr:\n%s\nwant it to end with:\n%s", errOut, want)
			}
			for _, not := range []string{`Get "`, "dial tcp", "aws-node"} {
				if strings.Contains(errOut, not) {
					t.Errorf("stderr has %q:\n%s", not, errOut)
				}
			}
		})
	}
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
		t.Setenv("HOME", t.TempDir())
		_, errOut, _ := execute(t, false, "leases")
		if !strings.Contains(errOut, "no cluster answered at http://localhost:8080") || !strings.Contains(errOut, "no kubeconfig names a cluster") {
			t.Errorf("stderr:\n%s", errOut)
		}
	})
}
