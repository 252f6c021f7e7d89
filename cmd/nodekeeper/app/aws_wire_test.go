package app

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
)

// runShipped runs the command tree as main builds it (NewRootCommand: the real AWS loader,
// reading the SDK's default configuration chain) in-process.
func runShipped(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// TestAWSOverTheWire: with AWS_ENDPOINT_URL pointing at a local AWS, the commands reach it
// through the real SDK clients, signed for the region of the EKS cluster's ARN or --region, and
// ask for what they should.
func TestAWSOverTheWire(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	cloud := awsfake.New()
	cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
	cloud.Filters[cwaudit.FilterPattern] = cwaudit.Matches
	for i, m := range zombieTrail() {
		cloud.AddLogEvents("/aws/eks/prod/cluster", awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b2c", Timestamp: auditT0.Add(time.Duration(i) * 5 * time.Second).UnixMilli(), Message: m})
	}
	cloud.InstanceTypes = []ec2types.InstanceTypeInfo{{InstanceType: "m9z.large", Hypervisor: ec2types.InstanceTypeHypervisorNitro,
		VCpuInfo:    &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(2)},
		NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: awssdk.Int32(3), Ipv4AddressesPerInterface: awssdk.Int32(10)}}}
	cloud.Clusters["prod"] = ekstypes.Cluster{Name: awssdk.String("prod"), Logging: &ekstypes.Logging{ClusterLogging: []ekstypes.LogSetup{
		{Types: []ekstypes.LogType{ekstypes.LogTypeAudit}, Enabled: awssdk.Bool(true)}}}}
	srv := awsserver.Start(t, cloud)
	srv.Setenv(t, "us-west-2") // the environment's region, overridden below

	out, stderr, err := runShipped(t, "audit", "--cloudwatch", "--eks-cluster", "arn:aws:eks:ap-northeast-2:111122223333:cluster/prod",
		"--since", "2024-04-05 05:00", "--until", "2024-04-05 07:00")
	if err != nil || !strings.Contains(out, zombieNode) || !strings.Contains(out, zombieInstance) {
		t.Fatalf("audit --cloudwatch: %v\n%s\nstderr:\n%s", err, out, stderr)
	}
	calls := srv.Calls()
	if len(calls) < 2 || calls[0].Operation != "DescribeCluster" || calls[0].Region != "ap-northeast-2" || calls[1].Operation != "StartQuery" {
		t.Fatalf("calls %v, want the cluster's logging checked in the ARN's region, then Logs Insights", srv.Operations())
	}
	if strings.Contains(stderr, "audit logging") {
		t.Errorf("audit logging is on, stderr says otherwise:\n%s", stderr)
	}
	for _, c := range calls[1:] {
		if c.Service != awsserver.Logs || c.Region != "ap-northeast-2" || c.ErrorCode != "" {
			t.Errorf("audit call %+v: want CloudWatch Logs in the ARN's region, answered", c)
		}
	}

	n := len(calls)
	out, _, err = runShipped(t, "maxpods", "m9z.large", "--aws", "--region", "eu-central-1")
	if err != nil || !strings.Contains(out, "m9z.large: max pods 29") {
		t.Fatalf("maxpods --aws: %v\n%s", err, out)
	}
	calls = srv.Calls()[n:]
	if len(calls) != 1 || calls[0].Operation != "DescribeInstanceTypes" || calls[0].Region != "eu-central-1" {
		t.Errorf("maxpods calls %+v, want one DescribeInstanceTypes in eu-central-1", calls)
	}
}
