//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/testsupport/awsserver"
)

// The AWS tests run the binary against awsserver, a local AWS on 127.0.0.1, reached ONLY through
// AWS_ENDPOINT_URL and the SDK's default chain (dummy credentials, empty shared files, no
// instance metadata). Were the endpoint overridden inside nodekeeper, the requests would go
// elsewhere and fail, and the server would record nothing: every test asserts on the calls the
// server recorded.

// awsUser is an eksUser whose environment points the AWS SDK at srv.
func awsUser(t *testing.T, srv *awsserver.Server) *user {
	u, _ := eksUser(t)
	u.vars = append(u.vars, srv.Env(t, eksRegion)...)
	return u
}

// orphanInstance is a running instance of the cluster that has no Node: doctor --aws reports it.
const orphanInstance = "i-0e2e0000000000001"

// eksCloud is an AWS account holding the cluster demo: its description, and an instance for
// the zombie lease's name and one without a Node.
func eksCloud(c cluster) *awsfake.Cloud {
	cloud := awsfake.New()
	cloud.Clusters = map[string]ekstypes.Cluster{eksClusterName: {
		Name: awssdk.String(eksClusterName), Arn: awssdk.String(eksARN), Status: ekstypes.ClusterStatusActive, Version: awssdk.String("1.33"),
	}}
	tags := []ec2types.Tag{
		{Key: awssdk.String("kubernetes.io/cluster/" + eksClusterName), Value: awssdk.String("owned")},
		{Key: awssdk.String("eks:cluster-name"), Value: awssdk.String(eksClusterName)},
	}
	launched := time.Now().Add(-2 * time.Hour)
	cloud.Instances = []ec2types.Instance{
		{InstanceId: awssdk.String("i-0e2e0000000000002"), PrivateDnsName: awssdk.String(c.zombie), InstanceType: ec2types.InstanceTypeM5Large,
			State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}, LaunchTime: &launched, Tags: tags},
		{InstanceId: awssdk.String(orphanInstance), PrivateDnsName: awssdk.String(nodeName()), InstanceType: ec2types.InstanceTypeM5Large,
			State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}, LaunchTime: &launched, Tags: tags},
	}
	return cloud
}

// ec2Filters returns the filters of every DescribeInstances call the server answered, as
// "name=v1,v2" strings, and fails the test when the server saw no call at all.
func ec2Filters(t *testing.T, srv *awsserver.Server, r result) []string {
	t.Helper()
	var out []string
	for _, c := range srv.Calls() {
		if c.Region != eksRegion {
			t.Errorf("%s:%s signed for region %q, want %s", c.Service, c.Operation, c.Region, eksRegion)
		}
		in, ok := c.Input.(*ec2.DescribeInstancesInput)
		if !ok {
			continue
		}
		for _, f := range in.Filters {
			out = append(out, awssdk.ToString(f.Name)+"="+strings.Join(f.Values, ","))
		}
	}
	if len(srv.Calls()) == 0 {
		t.Fatalf("the AWS server received no request: the binary did not use AWS_ENDPOINT_URL\n%s", r)
	}
	return out
}

// noARNAsName fails when a request named the cluster by its ARN where AWS wants its name.
func noARNAsName(t *testing.T, srv *awsserver.Server) {
	t.Helper()
	for _, c := range srv.Calls() {
		if in, err := json.Marshal(c.Input); err == nil && strings.Contains(string(in), "arn:aws:eks") {
			t.Errorf("%s:%s was sent the cluster's ARN as a name: %s", c.Service, c.Operation, in)
		}
	}
}

func hasFilter(filters []string, want string) bool {
	for _, f := range filters {
		if f == want {
			return true
		}
	}
	return false
}

func TestDoctorAWS(t *testing.T) {
	c := seedCluster(t, 1)
	for _, tc := range []struct {
		name string
		args []string
	}{
		// The EKS cluster's name comes from the kubeconfig's current context, named by ARN.
		{"cluster from the context", nil},
		// kubectl's --cluster picks the kubeconfig entry; its ARN names the EKS cluster demo,
		// never "arn:...".
		{"--cluster ARN", []string{"--cluster", eksARN}},
		{"--context ARN", []string{"--context", eksARN}},
		// --eks-cluster names it outright, by name or by ARN.
		{"--eks-cluster NAME", []string{"--eks-cluster", eksClusterName}},
		{"--eks-cluster ARN", []string{"--eks-cluster", eksARN}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := awsserver.Start(t, eksCloud(c))
			u := awsUser(t, srv)
			r := u.run(append([]string{"doctor", "--aws", "-o", "json"}, tc.args...)...)
			if r.code != exitFindings {
				t.Fatalf("want exit 3 (an instance without its Node), got:\n%s", r)
			}
			filters := ec2Filters(t, srv, r)
			if !hasFilter(filters, "tag-key=kubernetes.io/cluster/"+eksClusterName) || !hasFilter(filters, "tag:eks:cluster-name="+eksClusterName) {
				t.Errorf("DescribeInstances did not look for the instances of %s: %v", eksClusterName, filters)
			}
			noARNAsName(t, srv)
			rep := decode[doctorReport](t, r, "DoctorReport")
			if rep.findings()["NK801 instance/"+orphanInstance] == "" && !strings.Contains(r.stdout, orphanInstance) {
				t.Errorf("the instance without a Node (%s) is not reported (findings %v):\n%s", orphanInstance, slices.Sorted(maps.Keys(rep.findings())), r)
			}
		})
	}
}

func TestLeasesAWS(t *testing.T) {
	c := seedCluster(t, 1)
	srv := awsserver.Start(t, eksCloud(c))
	u := awsUser(t, srv)
	r := u.expect(exitOK, "leases", "--aws", "-n", "kube-node-lease", "--class", "zombie")
	filters := ec2Filters(t, srv, r)
	found := false
	for _, f := range filters {
		found = found || strings.HasPrefix(f, "private-dns-name=") && strings.Contains(f, c.zombie)
	}
	if !found {
		t.Errorf("DescribeInstances was not asked for the zombie's private DNS name %s: %v", c.zombie, filters)
	}
	mustContain(t, r, r.stdout, c.zombie, "i-0e2e0000000000002")
}

func TestMaxPodsAWS(t *testing.T) {
	cloud := awsfake.New()
	cloud.InstanceTypes = []ec2types.InstanceTypeInfo{{InstanceType: "m9z.large", Hypervisor: ec2types.InstanceTypeHypervisorNitro,
		VCpuInfo:    &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(2)},
		NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: awssdk.Int32(3), Ipv4AddressesPerInterface: awssdk.Int32(10)}}}
	srv := awsserver.Start(t, cloud)
	u := newUser(t)
	u.vars = append(u.vars, srv.Env(t, eksRegion)...)
	r := u.expect(exitOK, "maxpods", "--aws", "m9z.large")
	mustContain(t, r, r.stdout, "m9z.large: max pods 29", "EC2 DescribeInstanceTypes")
	if got := srv.Operations(); len(got) == 0 || got[0] != "ec2:DescribeInstanceTypes" {
		t.Errorf("the server saw %v, want ec2:DescribeInstanceTypes", got)
	}
	// Without --aws nothing is asked of AWS, and the type is unknown.
	n := len(srv.Calls())
	u.expect(exitFailed, "maxpods", "m9z.large")
	if len(srv.Calls()) != n {
		t.Errorf("maxpods without --aws called AWS: %v", srv.Operations()[n:])
	}
}

func TestAuditCloudWatch(t *testing.T) {
	cloud := awsfake.New()
	cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
	cloud.Filters[cwaudit.FilterPattern] = cwaudit.Matches
	group := "/aws/eks/" + eksClusterName + "/cluster"
	// The seed's audit events, as EKS ships them to CloudWatch Logs.
	f, err := os.Open(filepath.Join(repoRoot, "internal", "audit", "testdata", "seed001", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Stage time.Time `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		cloud.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b2c", Timestamp: ev.Stage.UnixMilli(), Message: sc.Text()})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	srv := awsserver.Start(t, cloud)
	u := awsUser(t, srv)
	window := []string{"--since", "2024-04-05 05:00", "--until", "2024-04-08 00:00"}

	for _, tc := range []struct {
		name       string
		args       []string
		deprecated bool
	}{
		{"--eks-cluster ARN", []string{"--eks-cluster", eksARN}, false},
		{"cluster from the context", nil, false},
		// audit reads no cluster: its --cluster is the deprecated spelling of --eks-cluster.
		{"deprecated --cluster ARN", []string{"--cluster", eksARN}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.Calls())
			r := u.expect(exitOK, append(append([]string{"audit", "--cloudwatch", "-o", "json"}, window...), tc.args...)...)
			rep := decode[auditReport](t, r, "AuditReport")
			if tc.deprecated && !strings.Contains(r.stderr, "--eks-cluster") {
				t.Errorf("the deprecated --cluster does not point at --eks-cluster on stderr:\n%s", r)
			}
			if len(rep.Zombies) != 1 || rep.Zombies[0].Node != "ip-10-29-79-205.ap-northeast-2.compute.internal" {
				t.Errorf("zombies %+v:\n%s", rep.Zombies, r)
			}
			calls := srv.Calls()[before:]
			if len(calls) == 0 {
				t.Fatalf("the AWS server received no request: the binary did not use AWS_ENDPOINT_URL\n%s", r)
			}
			for _, c := range calls {
				var g string
				switch in := c.Input.(type) {
				case *cloudwatchlogs.StartQueryInput:
					g = awssdk.ToString(in.LogGroupName) + strings.Join(in.LogGroupNames, ",")
				case *cloudwatchlogs.FilterLogEventsInput:
					g = awssdk.ToString(in.LogGroupName)
				default:
					continue
				}
				if g != group {
					t.Errorf("%s read log group %q, want %s", c.Operation, g, group)
				}
				if c.Region != eksRegion {
					t.Errorf("%s signed for %q, want %s", c.Operation, c.Region, eksRegion)
				}
			}
			noARNAsName(t, srv)
		})
	}
}
