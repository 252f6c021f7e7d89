package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// TestDoctorBootAndAuditFlags: --boot-window and --audit-log need --aws, the window must be
// positive, and an audit log that cannot be read fails the run naming the flag, before any
// cluster is contacted.
func TestDoctorBootAndAuditFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	notAudit := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(notAudit, []byte("{\"kind\":\"Event\""), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"boot window without --aws", []string{"--boot-window", "2h"}, "--boot-window needs --aws"},
		{"audit log without --aws", []string{"--audit-log", notAudit}, "--audit-log needs --aws"},
		{"zero boot window", []string{"--aws", "--eks-cluster", "prod", "--boot-window", "0s"}, "--boot-window must be positive"},
		{"audit log without an event", []string{"--aws", "--eks-cluster", "prod", "--region", "eu-west-1", "--audit-log", notAudit},
			"--audit-log: no kube-apiserver audit event in 1 lines; first unusable: " + notAudit + " line 1"},
		{"missing audit log", []string{"--aws", "--eks-cluster", "prod", "--region", "eu-west-1", "--audit-log", filepath.Join(t.TempDir(), "gone.log")}, "--audit-log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(t, &fakeAWS{cloud: awsfake.New()}, append([]string{"doctor"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
