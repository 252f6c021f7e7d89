package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cleanJournal is a kubelet journal with nothing to report: bundle reads it and exits 0.
const cleanJournal = `Mar 04 09:15:01 ip-10-0-1-12 kubelet[2101]: I0304 09:15:01.000000    2101 kubelet.go:100] "Started kubelet"` + "\n"

// zombieAuditLog is zombieTrail as an audit log file holds it, one event a line.
func zombieAuditLog() string { return strings.Join(zombieTrail(), "\n") + "\n" }

// writeInput writes content as dir/name (0600), failing the test on error, and returns the path.
func writeInput(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
