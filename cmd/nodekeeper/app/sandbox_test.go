package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxHintsAndAuditLog runs `nodekeeper sandbox` in process on the real control plane with
// a one-kubelet mix: the hints name the binary as it was invoked (bin/nodekeeper from make, here
// the test binary's path), "Press Ctrl-C" is said once, and with --keep-audit-log the audit log
// the hints advertise is copied there when the sandbox stops, as the hint says; without it the
// hint says it is deleted.
func TestSandboxHintsAndAuditLog(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "audit.log")
	out, errOut, code := execute(t, false, "sandbox", "--for", "1s", "--healthy", "1", "--stopped", "0", "--legacy-zombies", "0",
		"--modern-zombies", "0", "--leaked", "0", "--write-kubeconfig", filepath.Join(dir, "kubeconfig"), "--keep-audit-log", kept)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if n := strings.Count(out, "Press Ctrl-C"); n != 1 {
		t.Errorf("Press Ctrl-C said %d times:\n%s", n, out)
	}
	for _, want := range []string{"  " + os.Args[0] + " leases -A\n", "  " + os.Args[0] + " doctor\n", "the audit log is copied to " + kept + " when the sandbox stops"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "audit log kept as "+kept) {
		t.Errorf("stderr does not say the audit log was kept:\n%s", errOut)
	}
	data, err := os.ReadFile(kept)
	if err != nil || !strings.Contains(string(data), `"kind":"Event"`) {
		t.Errorf("kept audit log: %v, %d bytes", err, len(data))
	}
	if fate := auditLogFate("/x/audit.log", ""); !strings.Contains(fate, "deleted when the sandbox stops; --keep-audit-log FILE keeps a copy") {
		t.Errorf("without --keep-audit-log: %q", fate)
	}
}
