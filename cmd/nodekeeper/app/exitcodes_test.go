package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestExitCodes: every documented exit code of every command (docs/exit-codes.md) that needs no
// cluster: 0 fine, 1 the run failed, 2 bad usage (cobra's own flag and argument errors
// included), 3 findings at or above --fail-on. The codes that need a cluster are proven against
// the real control plane (gc's in internal/gc, doctor's findings through the same reportFlags as
// bundle's).
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return writeInput(t, dir, name, content) }
	zombieLog := write("zombie.log", zombieAuditLog())
	garbage := write("garbage.log", "hello\nworld\n")
	empty := write("empty.log", "")
	clean := write("clean.journal", cleanJournal)
	qps := write("qps.journal", strings.Repeat(`Mar 04 09:15:01 ip-10-0-1-12 kubelet[2101]: E0304 09:15:01.000000    2101 pod_workers.go:1298] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"app\" with ErrImagePull: \"pull QPS exceeded\"" pod="default/app-1"`+"\n", 5))
	// The commands that need a cluster fail to configure a client (exit 1): a kubeconfig that
	// does not parse fails at once, where a missing one would send them to localhost:8080 (and
	// the controller would keep retrying its permission check, as it should in a pod).
	useBrokenKubeconfig(t)

	for _, tc := range []struct {
		args    []string
		code    int
		message string // in stderr
	}{
		{[]string{}, 0, ""},
		{[]string{"nosuch"}, 2, `unknown command "nosuch"`},
		{[]string{"leeses"}, 2, `unknown command "leeses" for "nodekeeper"; did you mean leases?`},
		{[]string{"--bogus"}, 2, "unknown flag: --bogus"},

		{[]string{"version"}, 0, ""},
		{[]string{"version", "-o", "xml"}, 2, `unknown output format "xml"`},
		{[]string{"version", "extra"}, 2, `unknown command "extra"`},

		{[]string{"maxpods", "m5.large"}, 0, ""},
		{[]string{"maxpods"}, 2, "nodekeeper maxpods takes TYPE [TYPE...], got no argument; see nodekeeper maxpods --help"},
		{[]string{"maxpods", "m5.large", "--vcpus", "x"}, 2, `invalid argument "x" for "--vcpus"`},
		{[]string{"maxpods", "m5.large", "--vcpus", "-1"}, 2, "--vcpus must not be negative"},
		{[]string{"maxpods", "m5.large", "--reserved-enis", "-1"}, 2, "--reserved-enis must not be negative"},
		{[]string{"maxpods", "m5.large", "--max-eni", "-1"}, 2, "--max-eni must not be negative"},
		{[]string{"maxpods", "m5.large", "-o", "xml"}, 2, `unknown output format "xml"`},
		{[]string{"maxpods", "m5.large", "--kubeconfig", "x"}, 2, "unknown flag: --kubeconfig"},
		{[]string{"maxpods", "no-such.type"}, 1, "no-such.type"},

		{[]string{"bundle", clean}, 0, ""},
		{[]string{"bundle", qps}, 3, "findings at --fail-on warning or above"},
		{[]string{"bundle", qps, "--fail-on", "error"}, 0, ""},
		{[]string{"bundle", qps, "--fail-on", "none"}, 0, ""},
		{[]string{"bundle", qps, "--fail-on", "warn"}, 2, `unknown --fail-on "warn"`},
		{[]string{"bundle"}, 2, "nodekeeper bundle takes FILE.tar.gz|DIR|KUBELET-JOURNAL, got no argument; see nodekeeper bundle --help"},
		{[]string{"bundle", clean, "--ignore", "NK000000"}, 2, "no such check code or name"},
		{[]string{"bundle", filepath.Join(dir, "missing.tar.gz")}, 1, "missing.tar.gz"},

		{[]string{"audit", zombieLog}, 0, ""},
		{[]string{"audit", zombieLog, "--fail-on", "error"}, 3, "1 zombie kubelets"},
		{[]string{"audit", zombieLog, "--fail-on", "bad"}, 2, `unknown --fail-on "bad"`},
		{[]string{"audit", zombieLog, "--since", "yesterday"}, 2, "--since"},
		{[]string{"audit", zombieLog, "--region", "eu-west-1"}, 2, "--region needs --cloudwatch"},
		{[]string{"audit", zombieLog, "--query-timeout", "1m"}, 2, "--query-timeout needs --cloudwatch"},
		{[]string{"audit", "--cloudwatch", "--log-group", "g", "--query-timeout", "-1m"}, 2, "--query-timeout must be positive"},
		{[]string{"audit", garbage}, 1, "no audit event to analyse: none of the 2 lines read is a kube-apiserver audit event"},
		{[]string{"audit", empty}, 1, "no audit event to analyse: the input is empty"},
		{[]string{"audit", zombieLog, "--until", "2000-01-01"}, 1, "outside --since/--until"},
		{[]string{"audit", filepath.Join(dir, "missing.log")}, 1, "missing.log"},

		{[]string{"doctor", "--fail-on", "warn"}, 2, `unknown --fail-on "warn"`},
		{[]string{"doctor", "--region", "eu-west-1"}, 2, "--region needs --aws"},
		{[]string{"doctor", "--concurrency", "0"}, 2, "--workers must be at least 1"},
		{[]string{"doctor", "extra"}, 2, `unknown command "extra"`},
		{[]string{"doctor"}, 1, "broken.kubeconfig"},

		{[]string{"leases", "-o", "xml"}, 2, `unknown output format "xml"`},
		{[]string{"leases", "--class", "nosuch"}, 2, "nosuch"},
		{[]string{"leases", "--chunk-size", "x"}, 2, `invalid argument "x"`},
		{[]string{"leases"}, 1, "broken.kubeconfig"},

		{[]string{"gc", "--grace-period", "0s"}, 2, "--grace-period must be positive"},
		{[]string{"gc", "--progress", "sometimes"}, 2, "unknown --progress"},
		{[]string{"gc", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"gc"}, 1, "broken.kubeconfig"},

		{[]string{"controller", "--grace-period", "0s"}, 2, "--grace-period must be positive"},
		{[]string{"controller", "--qps", "-1"}, 2, "must not be negative"},
		{[]string{"controller", "extra"}, 2, `unknown command "extra"`},
		{[]string{"controller", "--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, 1, "broken.kubeconfig"},

		{[]string{"sandbox", "--healthy", "many"}, 2, `invalid argument "many"`},
		{[]string{"sandbox", "extra"}, 2, `unknown command "extra"`},
	} {
		name := strings.Join(tc.args, " ")
		if dir != "" {
			name = strings.ReplaceAll(name, dir+string(filepath.Separator), "")
		}
		t.Run(name, func(t *testing.T) {
			_, stderr, code := execute(t, false, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.message) {
				t.Errorf("stderr lacks %q:\n%s", tc.message, stderr)
			}
		})
	}
}

// TestGCAnswer: at the prompt only y or yes deletes; anything else is a no (exit 6, gc.go).
func TestGCAnswer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"y\n", true}, {"YES\n", true}, {" yes ", true},
		{"\n", false}, {"n\n", false}, {"", false}, {"yess\n", false},
	} {
		var out strings.Builder
		got, err := readAnswer(strings.NewReader(tc.in), &out, 3)
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if !strings.Contains(out.String(), "Delete 3 leaked leases? [y/N]") {
			t.Errorf("question: %q", out.String())
		}
	}
}
