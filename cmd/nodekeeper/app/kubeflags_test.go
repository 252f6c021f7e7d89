package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectionFlagsOnlyWhereTheyAct: the kubectl connection flags appear on the commands that
// talk to a cluster and on no other; --eks-cluster, the EKS cluster, on the commands that act on
// a cluster's AWS side (audit keeps --cluster for it, deprecated and so hidden; the controller's
// EC2 loop, --aws, takes it too).
func TestConnectionFlagsOnlyWhereTheyAct(t *testing.T) {
	connection := []string{"--kubeconfig", "--context", "--cluster", "--namespace", "--server", "--token", "--as", "--request-timeout"}
	for _, tc := range []struct {
		command string
		talks   bool
		eks     bool // has --eks-cluster
	}{
		{"controller", true, true}, // with --aws, its EC2 loop
		{"gc", true, false},
		{"leases", true, true},
		{"doctor", true, true},
		{"audit", false, true},
		{"bundle", false, false},
		{"maxpods", false, false},
		{"plan", true, false},
		{"sandbox", false, false},
		{"version", false, false},
	} {
		t.Run(tc.command, func(t *testing.T) {
			out, errOut, code := execute(t, false, tc.command, "--help")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			// The usage lines only: examples may mention a flag of another command.
			flags := out[strings.Index(out, "Flags:"):]
			for _, f := range connection {
				if has := strings.Contains(flags, f+" "); has != tc.talks {
					t.Errorf("%s in the flags: %v, want %v", f, has, tc.talks)
				}
			}
			if has := strings.Contains(flags, "--eks-cluster "); has != tc.eks {
				t.Errorf("--eks-cluster in the flags: %v, want %v", has, tc.eks)
			}
			_, errOut, code = execute(t, false, tc.command, "--kubeconfig", "x", "--help")
			if wantCode := map[bool]int{true: 0, false: 2}[tc.talks]; code != wantCode {
				t.Errorf("with --kubeconfig: exit %d, want %d: %s", code, wantCode, errOut)
			}
		})
	}
}

// TestClientFlagsOnEveryClusterCommand: --qps and --burst (and --chunk-size where the command
// pages through LISTs itself) are on every command that talks to a cluster, say in --help that
// 0 means no client-side limit, refuse bad values with exit 2, and accept --qps 0 (the run then
// gets as far as the kubeconfig).
func TestClientFlagsOnEveryClusterCommand(t *testing.T) {
	useBrokenKubeconfig(t)
	for _, tc := range []struct {
		command string
		chunked bool     // has --chunk-size
		chunk   string   // its default: 5000 where the command reads every lease and Node
		run     []string // flags that let it reach the kubeconfig
	}{
		{command: "gc", chunked: true, chunk: "5000"},
		{command: "leases", chunked: true, chunk: "5000"},
		{command: "doctor", chunked: true, chunk: "500"},
		{command: "plan", chunked: true, chunk: "500", run: []string{"--add", "3", "--instance-type", "m5.large"}},
		{command: "controller", run: []string{"--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			out, errOut, code := execute(t, false, tc.command, "--help")
			if code != 0 {
				t.Fatalf("--help: exit %d: %s", code, errOut)
			}
			flags := out[strings.Index(out, "Flags:"):]
			for _, want := range []string{"--qps float32", "0: no client-side limit", "--burst int"} {
				if !strings.Contains(flags, want) {
					t.Errorf("--help does not show %q:\n%s", want, flags)
				}
			}
			if has := strings.Contains(flags, "--chunk-size int"); has != tc.chunked {
				t.Errorf("--chunk-size in --help: %v, want %v", has, tc.chunked)
			}
			if want := "objects per LIST page (default " + tc.chunk + ")"; tc.chunked && !strings.Contains(flags, want) {
				t.Errorf("--help does not show %q:\n%s", want, flags)
			}

			type badFlag struct {
				args []string
				msg  string
			}
			bad := []badFlag{
				{[]string{"--qps", "-1"}, "must not be negative"},
				{[]string{"--burst", "-1"}, "must not be negative"},
				{[]string{"--qps", "fast"}, `invalid argument "fast"`},
			}
			if tc.chunked {
				bad = append(bad, badFlag{[]string{"--chunk-size", "0"}, "--chunk-size must be positive"})
			}
			for _, b := range bad {
				_, errOut, code := execute(t, false, append([]string{tc.command}, b.args...)...)
				if code != 2 || !strings.Contains(errOut, b.msg) {
					t.Errorf("%v: exit %d, want 2 with %q: %s", b.args, code, b.msg, errOut)
				}
			}

			_, errOut, code = execute(t, false, append([]string{tc.command, "--qps", "0"}, tc.run...)...)
			if code != 1 || !strings.Contains(errOut, "broken.kubeconfig") {
				t.Errorf("--qps 0: exit %d, want 1 from the kubeconfig: %s", code, errOut)
			}
		})
	}
}

// useBrokenKubeconfig points KUBECONFIG at a kubeconfig that does not parse, so that a command
// that gets past its flags fails at once with exit 1, naming the file.
func useBrokenKubeconfig(t *testing.T) {
	t.Helper()
	broken := filepath.Join(t.TempDir(), "broken.kubeconfig")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nkind: Config\nclusters: [ {\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", broken)
}
