package app

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// TestAuditCloudWatchChecksAuditLogging: before `audit --cloudwatch` reads, DescribeCluster says
// whether the cluster sends its audit log; stderr says so clearly when it is off (with the
// command that turns it on), and says when it could not be checked; the read goes on.
func TestAuditCloudWatchChecksAuditLogging(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	logging := func(types []ekstypes.LogType, enabled bool) *ekstypes.Logging {
		return &ekstypes.Logging{ClusterLogging: []ekstypes.LogSetup{{Types: types, Enabled: awssdk.Bool(enabled)}}}
	}
	off := "audit logging is OFF for the EKS cluster prod"
	for _, tc := range []struct {
		name     string
		cluster  *ekstypes.Logging // nil: no such cluster
		deny     bool
		args     []string
		want     []string
		dontWant []string
	}{
		{name: "on", cluster: logging([]ekstypes.LogType{ekstypes.LogTypeApi, ekstypes.LogTypeAudit}, true), dontWant: []string{"audit logging", "could not check"}},
		{name: "off: only other types", cluster: logging([]ekstypes.LogType{ekstypes.LogTypeApi, ekstypes.LogTypeAuthenticator}, true),
			want: []string{off, `aws eks update-cluster-config --name prod --logging '{"clusterLogging":[{"types":["audit"],"enabled":true}]}'`}},
		{name: "off: audit listed as disabled", cluster: logging([]ekstypes.LogType{ekstypes.LogTypeAudit}, false), want: []string{off}},
		{name: "off: no logging at all", cluster: &ekstypes.Logging{}, want: []string{off}},
		{name: "denied", cluster: logging([]ekstypes.LogType{ekstypes.LogTypeAudit}, true), deny: true,
			want: []string{"could not check that audit logging is on", nkaws.PermDescribeCluster}},
		{name: "unknown cluster", want: []string{"could not check that audit logging is on", "ResourceNotFoundException"}},
		{name: "log group of another shape", cluster: logging(nil, false), args: []string{"--log-group", "/custom/audit"},
			want: []string{"/custom/audit is not an EKS control plane log group"}, dontWant: []string{off}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := awsfake.New()
			cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
			cloud.Filters[cwaudit.FilterPattern] = cwaudit.Matches
			for _, group := range []string{"/aws/eks/prod/cluster", "/custom/audit"} {
				for i, m := range zombieTrail() {
					cloud.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b2c", Timestamp: auditT0.Add(time.Duration(i) * 5 * time.Second).UnixMilli(), Message: m})
				}
			}
			if tc.cluster != nil {
				cloud.Clusters["prod"] = ekstypes.Cluster{Name: awssdk.String("prod"), Logging: tc.cluster}
			}
			cloud.Deny[nkaws.PermDescribeCluster] = tc.deny
			args := append([]string{"audit", "--cloudwatch", "--eks-cluster", "arn:aws:eks:ap-northeast-2:111122223333:cluster/prod",
				"--since", "2024-04-05 05:00", "--until", "2024-04-05 07:00"}, tc.args...)
			out, stderr, err := runCmd(t, &fakeAWS{cloud: cloud}, args...)
			if err != nil || !strings.Contains(out, zombieNode) {
				t.Fatalf("the read did not go on: %v\n%s\nstderr:\n%s", err, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr says %q:\n%s", w, stderr)
				}
			}
			if n := cloud.Calls(nkaws.PermDescribeCluster); (n == 1) != (tc.args == nil) {
				t.Errorf("%d DescribeCluster calls", n)
			}
		})
	}
}
