package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// TestCompletion runs cobra's __complete in-process, as the shell scripts do.
func TestCompletion(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: prod-cluster
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: admin
  user: {token: x}
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin}
- name: staging
  context: {cluster: prod-cluster, user: admin}
current-context: prod
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"maxpods", "m5.l"}, []string{"m5.large\n"}, []string{"m5.xlarge", "c5.large"}},
		{[]string{"maxpods", "M5.L"}, []string{"m5.large\n"}, nil},
		{[]string{"maxpods", "m5.large", "-o", ""}, []string{"text\n", "json\n", "value\n"}, nil},
		{[]string{"bundle", "x", "--instance-type", "c6i.32"}, []string{"c6i.32xlarge\n"}, nil},
		{[]string{"doctor", "--ignore", "NK10"}, []string{"NK101\tmax-pods-above-ip-capacity\n"}, []string{"NK201"}},
		{[]string{"doctor", "--ignore", "NK101,max-pods-b"}, []string{"NK101,max-pods-below-recommendation\tNK102\n"}, nil},
		{[]string{"doctor", "--fail-on", ""}, []string{"info\n", "warning\n", "error\n", "none\n"}, nil},
		{[]string{"audit", "--fail-on", ""}, []string{"error\n", "none\n"}, nil},
		{[]string{"doctor", "-o", ""}, []string{"text\n", "json\n", "junit\n"}, nil},
		{[]string{"leases", "--class", "leaked,z"}, []string{"leaked,zombie\n"}, nil},
		{[]string{"leases", "-o", ""}, []string{"wide\n", "json\n", "yaml\n"}, nil},
		{[]string{"leases", "--node-s"}, []string{"--node-selector\t"}, nil},
		{[]string{"leases", "-l", ""}, []string{":4\n"}, nil},
		{[]string{"leases", "--node-selector", ""}, []string{":4\n"}, nil},
		{[]string{"gc", "-o", ""}, []string{"table\n", "json\n", "yaml\n"}, nil},
		{[]string{"leases", "--context", ""}, []string{"prod\n", "staging\n"}, nil},
		{[]string{"gc", "--context", "st"}, []string{"staging\n"}, []string{"prod\n"}},
		{[]string{"doctor", "--cluster", ""}, []string{"prod-cluster\n"}, nil},
		// The cluster does not answer: no namespace, no error, no hang past the timeout.
		{[]string{"leases", "-n", ""}, []string{":4\n"}, []string{"default"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := execute(t, false, append([]string{"__complete"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			textcheck.Contains(t, "completions", out, tc.want, tc.not)
		})
	}
}
