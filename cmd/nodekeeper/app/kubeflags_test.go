package app

import (
	"strings"
	"testing"
)

// TestConnectionFlagsOnlyWhereTheyAct: the kubectl connection flags appear on the commands that
// talk to a cluster and on no other; audit keeps only --cluster, for CloudWatch's log group.
func TestConnectionFlagsOnlyWhereTheyAct(t *testing.T) {
	connection := []string{"--kubeconfig", "--context", "--namespace", "--server", "--token", "--as", "--request-timeout"}
	for _, tc := range []struct {
		command string
		talks   bool
		cluster bool // has --cluster even without the other connection flags
	}{
		{"controller", true, true},
		{"gc", true, true},
		{"leases", true, true},
		{"doctor", true, true},
		{"audit", false, true},
		{"bundle", false, false},
		{"maxpods", false, false},
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
			if has := strings.Contains(flags, "--cluster "); has != tc.cluster {
				t.Errorf("--cluster in the flags: %v, want %v", has, tc.cluster)
			}
			_, errOut, code = execute(t, false, tc.command, "--kubeconfig", "x", "--help")
			if wantCode := map[bool]int{true: 0, false: 2}[tc.talks]; code != wantCode {
				t.Errorf("with --kubeconfig: exit %d, want %d: %s", code, wantCode, errOut)
			}
		})
	}
}
