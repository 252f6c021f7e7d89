package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// hostileName carries what a terminal acts on: ESC (a CSI clear), an OSC title sequence ended
// by BEL, a right-to-left override, the C1 CSI (U+009B) and, to check that ordinary text stays
// readable, a space.
const hostileName = "evil\x1b[2J\x1b]0;pwned\a name\u202etxt\u009b2J"

// assertSafeStderr fails when any line of stderr holds a character a terminal could act on,
// and when the escaped hostile name is missing (the error must still say which file).
func assertSafeStderr(t *testing.T, stderr string) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !textsafe.Safe(line) {
			t.Errorf("stderr line %d is not terminal-safe: %q", i+1, line)
		}
	}
	if want := textsafe.Escape(hostileName); !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks the escaped name %q:\n%s", want, stderr)
	}
}

// TestErrorsEscapeHostileNames: every command that takes a path reports a bad one through
// Execute, which escapes the message: the OS error repeats the name raw, and so do the
// commands' own prefixes. stderr must hold the name, escaped, and no raw control character.
func TestErrorsEscapeHostileNames(t *testing.T) {
	dir := t.TempDir()
	clean := writeInput(t, dir, "clean journal", cleanJournal)
	zombieLog := writeInput(t, dir, "zombie.log", zombieAuditLog())
	missing := filepath.Join(dir, hostileName)
	// A collector directory with a hostile name holding a member it refuses (a FIFO) whose name
	// is hostile too.
	bundleDir := filepath.Join(dir, hostileName+" bundle")
	if err := os.MkdirAll(filepath.Join(bundleDir, "var_log"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(bundleDir, "var_log", hostileName), 0o600); err != nil {
		t.Fatal(err)
	}
	existing := writeInput(t, dir, hostileName+".kubeconfig", "apiVersion: v1\nkind: Config\n")
	t.Setenv("KUBECONFIG", "")

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"bundle FILE", []string{"bundle", missing + ".tar.gz"}},
		{"bundle DIR", []string{"bundle", bundleDir}},
		{"bundle --user-data", []string{"bundle", clean, "--user-data", missing}},
		{"audit FILE", []string{"audit", missing}},
		{"audit --html", []string{"audit", zombieLog, "--html", filepath.Join(missing, "report.html")}},
		{"sandbox --write-kubeconfig", []string{"sandbox", "--write-kubeconfig", existing, "--controlplane-dir", dir}},
		{"leases --kubeconfig", []string{"leases", "--kubeconfig", missing}},
		{"doctor --kubeconfig", []string{"doctor", "--kubeconfig", missing}},
		{"gc --kubeconfig", []string{"gc", "--kubeconfig", missing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := execute(t, false, tc.args...)
			if code == 0 {
				t.Fatalf("exit 0 on a missing or refused input\nstderr: %q", stderr)
			}
			assertSafeStderr(t, stderr)
		})
	}
}

// TestNegativeFlagsAreUsageErrors: a negative size, count or duration is refused (exit 2)
// naming the flag, instead of being replaced by the default without a word.
func TestNegativeFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	clean := writeInput(t, dir, "clean.journal", cleanJournal)
	zombieLog := writeInput(t, dir, "zombie.log", zombieAuditLog())
	// doctor would fail on this kubeconfig (exit 1) if it got past Validate.
	useBrokenKubeconfig(t)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"bundle", clean, "--io-delay-threshold", "-1s"}, "--io-delay-threshold"},
		{[]string{"bundle", clean, "--max-members", "-1"}, "--max-members"},
		{[]string{"bundle", clean, "--max-member-size", "-1"}, "--max-member-size"},
		{[]string{"bundle", clean, "--max-total-size", "-1"}, "--max-total-size"},
		{[]string{"doctor", "--configz-timeout", "-5s"}, "--configz-timeout"},
		{[]string{"audit", zombieLog, "--max-line-size", "-1"}, "--max-line-size"},
		{[]string{"audit", zombieLog, "--events-per-lease", "-3"}, "--events-per-lease"},
		{[]string{"audit", zombieLog, "--top", "-1"}, "--top"},
		{[]string{"audit", zombieLog, "--workers", "-2"}, "--workers"},
		{[]string{"audit", zombieLog, "--zombie-min-duration", "-1m"}, "--zombie-min-duration"},
		{[]string{"audit", zombieLog, "--reorder-window", "-1s"}, "--reorder-window"},
	} {
		t.Run(tc.args[0]+" "+tc.flag, func(t *testing.T) {
			_, stderr, code := execute(t, false, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad usage)\nstderr: %s", code, stderr)
			}
			if want := "error: " + tc.flag + " must not be negative"; !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		})
	}
	// 0 keeps meaning "the default".
	if _, stderr, code := execute(t, false, "audit", zombieLog, "--max-line-size", "0", "--events-per-lease", "0"); code != 0 {
		t.Errorf("audit with 0 limits: exit %d\n%s", code, stderr)
	}
}

// TestSandboxRefusesExistingKubeconfigFirst: an existing --write-kubeconfig is refused as bad
// usage before any control plane is looked for or started (the control-plane directory given
// here is empty: reaching it would fail differently, with exit 1); with --force the run goes on
// to the control plane.
func TestSandboxRefusesExistingKubeconfigFirst(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "config")
	if err := os.WriteFile(existing, []byte("users' config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	_, stderr, code := execute(t, false, "sandbox", "--write-kubeconfig", existing, "--controlplane-dir", empty)
	if code != 2 || !strings.Contains(stderr, "already exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, want 2 with \"already exists\" and --force named\nstderr: %s", code, stderr)
	}
	if strings.Contains(stderr, "sandbox:") {
		t.Errorf("the sandbox started before the kubeconfig was refused:\n%s", stderr)
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "users' config\n" {
		t.Errorf("the existing file changed: %q, %v", b, err)
	}
	_, stderr, code = execute(t, false, "sandbox", "--write-kubeconfig", existing, "--force", "--controlplane-dir", empty)
	if code == 2 || strings.Contains(stderr, "already exists") {
		t.Errorf("--force: exit %d, refused as existing\nstderr: %s", code, stderr)
	}
}

// TestAuditJSONEscapesTerminalControls: `audit -o json` writes the C1 and bidi characters of a
// name taken from the log as \u escapes (encoding/json leaves them raw), and the document decodes
// back to the name as the log had it.
func TestAuditJSONEscapesTerminalControls(t *testing.T) {
	const hostileNode = "ip-10-0-1-12\u009b2J\u0085\u202eevil"
	var lines []string
	for _, l := range zombieTrail() {
		// The trail's JSON holds the name as JSON text: \u escapes decode to the raw runes.
		lines = append(lines, strings.ReplaceAll(l, zombieNode, `ip-10-0-1-12\u009b2J\u0085\u202eevil`))
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := execute(t, false, "audit", log, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for i, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if !textsafe.Safe(line) {
			t.Errorf("line %d holds a raw control: %q", i+1, line)
		}
	}
	if !strings.Contains(stdout, `ip-10-0-1-12\u009b2J\u0085\u202eevil`) {
		t.Errorf("the report lacks the escaped node name:\n%.2000s", stdout)
	}
	var doc struct {
		Zombies []struct {
			Node string `json:"node"`
		} `json:"zombies"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Zombies) != 1 || doc.Zombies[0].Node != hostileNode {
		t.Errorf("decoded zombies %+v, want the node %q", doc.Zombies, hostileNode)
	}
}
