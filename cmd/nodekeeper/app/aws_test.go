package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// fakeAWS is the AWS client loader of the tests: the in-memory AWS, counting how often it is
// loaded (which is when credentials would be read). A nil cloud fails every load.
type fakeAWS struct {
	cloud  *awsfake.Cloud
	loads  int
	region string // of the last load
}

func (f *fakeAWS) load(_ context.Context, o nkaws.LoadOptions) (*allclients.Clients, error) {
	f.loads++
	f.region = o.Region
	if f.cloud == nil {
		return nil, fmt.Errorf("AWS must not be called on this path")
	}
	return &allclients.Clients{EC2: f.cloud, Logs: f.cloud, EKS: f.cloud, LaunchTemplates: f.cloud, Nodegroups: f.cloud, AutoScaling: f.cloud, CloudWatch: f.cloud, Region: o.Region}, nil
}

// runCmd runs the command tree in-process with args, AWS from aws (nil: no AWS at all) and an
// empty standard input that is not a terminal.
func runCmd(t *testing.T, aws *fakeAWS, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if aws == nil {
		aws = &fakeAWS{}
	}
	var out, errb bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}
	root := newRootCommand(streams, aws.load)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

const zombieNode, zombieInstance = "ip-10-0-1-12.ec2.internal", "i-0598c7d356eba48d7"

var auditT0 = time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)

func auditEvent(id string, at time.Time, verb, user, extra, resource, ns, name string, code int) string {
	ts := at.UTC().Format(time.RFC3339Nano)
	nsPart := ""
	if ns != "" {
		nsPart = fmt.Sprintf(`"namespace":%q,`, ns)
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete","requestURI":"/x","verb":%q,"user":{"username":%q%s},"sourceIPs":["10.0.1.12"],"userAgent":"kubelet/v1.31.0 (linux/amd64) kubernetes/abc","objectRef":{"resource":%q,%s"name":%q,"apiVersion":"v1"},"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		id, verb, user, extra, resource, nsPart, name, code, ts, ts)
}

// zombieTrail is a kubelet >= 1.29 polling for its deleted Node for ten minutes.
func zombieTrail() []string {
	evs := []string{
		auditEvent("del", auditT0, "delete", "kubernetes-admin", "", "nodes", "", zombieNode, 200),
		auditEvent("gc", auditT0.Add(30*time.Millisecond), "delete", "system:serviceaccount:kube-system:generic-garbage-collector", "", "leases", "kube-node-lease", zombieNode, 200),
	}
	extra := fmt.Sprintf(`,"extra":{"sessionName":[%q]}`, zombieInstance)
	for i := 0; i < 60; i++ {
		at := auditT0.Add(time.Duration(i+1) * 10 * time.Second)
		evs = append(evs,
			auditEvent(fmt.Sprintf("l%d", i), at, "get", "system:node:"+zombieNode, extra, "leases", "kube-node-lease", zombieNode, 404),
			auditEvent(fmt.Sprintf("n%d", i), at.Add(time.Millisecond), "get", "system:node:"+zombieNode, extra, "nodes", "", zombieNode, 404))
	}
	return evs
}

// TestAuditWithoutCloudWatchNeverLoadsAWS: reading files never loads AWS clients (nor so
// credentials), and the AWS flags alone are refused.
func TestAuditWithoutCloudWatchNeverLoadsAWS(t *testing.T) {
	aws := &fakeAWS{}
	file := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(file, []byte(strings.Join(zombieTrail(), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, aws, "audit", file)
	if err != nil || !strings.Contains(out, zombieInstance) {
		t.Fatalf("audit of a file: err %v\n%s", err, out)
	}
	if _, _, err := runCmd(t, aws, "audit", file, "--region", "eu-west-1"); err == nil || !strings.Contains(err.Error(), "--region needs --cloudwatch") {
		t.Errorf("--region without --cloudwatch: %v", err)
	}
	if aws.loads != 0 {
		t.Errorf("AWS clients loaded %d times without --cloudwatch", aws.loads)
	}
}

// TestAuditCloudWatch: `audit --cloudwatch` names the zombie and its instance in every output
// format, reads the log group named after --eks-cluster (an EKS ARN gives the region), and says on
// stderr what CloudWatch scanned.
func TestAuditCloudWatch(t *testing.T) {
	cloud := awsfake.New()
	cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
	cloud.Filters[cwaudit.FilterPattern] = cwaudit.Matches
	for i, m := range zombieTrail() {
		cloud.AddLogEvents("/aws/eks/prod/cluster", awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b2c", Timestamp: auditT0.Add(time.Duration(i) * 5 * time.Second).UnixMilli(), Message: m})
	}
	aws := &fakeAWS{cloud: cloud}

	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	base := []string{"audit", "--cloudwatch", "--eks-cluster", "arn:aws:eks:ap-northeast-2:111122223333:cluster/prod",
		"--since", "2024-04-05 05:00", "--until", "2024-04-05 07:00"}
	for _, format := range []string{"text", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			out, stderr, err := runCmd(t, aws, append(base, "-o", format)...)
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, stderr)
			}
			if !strings.Contains(out, zombieNode) || !strings.Contains(out, zombieInstance) {
				t.Errorf("the zombie and its instance are not named:\n%s", out)
			}
			if format == "json" {
				var rep struct {
					Zombies []struct{ Node string } `json:"zombies"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Zombies) != 1 {
					t.Errorf("json: %v, zombies %+v", err, rep.Zombies)
				}
			}
			if !strings.Contains(stderr, "CloudWatch scanned") {
				t.Errorf("stderr does not say what CloudWatch scanned:\n%s", stderr)
			}
			if aws.region != "ap-northeast-2" {
				t.Errorf("region %q, want the ARN's", aws.region)
			}
		})
	}
	if _, _, err := runCmd(t, aws, "audit", "--cloudwatch"); err == nil || !strings.Contains(err.Error(), "--eks-cluster") {
		t.Errorf("--cloudwatch without a cluster or log group: %v", err)
	}
	cloud.Deny[nkaws.PermStartQuery] = true
	cloud.Deny[nkaws.PermFilterLogEvents] = true
	_, _, err := runCmd(t, aws, append(base, "-o", "json")...)
	if err == nil || !strings.Contains(err.Error(), nkaws.PermFilterLogEvents) {
		t.Errorf("denied: %v", err)
	}
}

func TestEKSClusterName(t *testing.T) {
	for _, tc := range []struct{ in, name, region string }{
		{"arn:aws:eks:ap-northeast-2:111122223333:cluster/prod", "prod", "ap-northeast-2"},
		{"arn:aws-cn:eks:cn-north-1:111122223333:cluster/a.b", "a.b", "cn-north-1"},
		{"prod.us-west-2.eksctl.io", "prod", "us-west-2"},
		{"prod", "prod", ""},
		{"arn:aws:iam::111122223333:role/x", "arn:aws:iam::111122223333:role/x", ""},
	} {
		if n, r := eksClusterName(tc.in); n != tc.name || r != tc.region {
			t.Errorf("%s: %q %q, want %q %q", tc.in, n, r, tc.name, tc.region)
		}
	}
}

// TestAWSFlagsNeedAWS: doctor, leases and maxpods without --aws never load AWS (not even maxpods
// for a type the table does not know, which is an error that suggests --aws); AWS-only flags
// need --aws; doctor --aws without a cluster says what to pass.
func TestAWSFlagsNeedAWS(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "": any error
	}{
		{"doctor --region without --aws", []string{"doctor", "--region", "eu-west-1"}, "--region needs --aws"},
		{"doctor --aws without a cluster", []string{"doctor", "--aws"}, "--eks-cluster"},
		// Without --aws the run fails on the missing kubeconfig, before and without AWS.
		{"doctor without a cluster", []string{"doctor"}, ""},
		{"leases --profile without --aws", []string{"leases", "--profile", "x"}, "--profile needs --aws"},
		{"leases without a cluster", []string{"leases"}, ""},
		{"maxpods of an unknown type without --aws", []string{"maxpods", "m9z.large"}, "pass --aws"},
		{"maxpods --region without --aws", []string{"maxpods", "m5.large", "--region", "us-east-1"}, "--region needs --aws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aws := &fakeAWS{}
			_, _, err := runCmd(t, aws, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one mentioning %q", err, tc.wantErr)
			}
			if aws.loads != 0 {
				t.Errorf("AWS clients loaded %d times", aws.loads)
			}
		})
	}
}

// TestMaxPodsAWS: maxpods knows a type of its table without --aws; with --aws it asks EC2 about a
// type the table does not know and says the figure came from EC2 (the refusals without --aws:
// TestAWSFlagsNeedAWS).
func TestMaxPodsAWS(t *testing.T) {
	_, _, err := runCmd(t, nil, "maxpods", "M5.Large", "-o", "value")
	if err != nil {
		t.Fatalf("M5.Large without --aws: %v", err)
	}
	cloud := awsfake.New()
	cloud.InstanceTypes = []ec2types.InstanceTypeInfo{{InstanceType: "m9z.large", Hypervisor: ec2types.InstanceTypeHypervisorNitro,
		VCpuInfo:    &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(2)},
		NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: awssdk.Int32(3), Ipv4AddressesPerInterface: awssdk.Int32(10)}}}
	aws := &fakeAWS{cloud: cloud}
	out, _, err := runCmd(t, aws, "maxpods", "m9z.large", "--aws", "--region", "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "m9z.large: max pods 29") || !strings.Contains(out, "data:        EC2 DescribeInstanceTypes") || aws.loads != 1 || aws.region != "us-east-1" {
		t.Errorf("with --aws (%d loads, region %q):\n%s", aws.loads, aws.region, out)
	}
}
