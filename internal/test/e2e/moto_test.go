//go:build linux

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
	"github.com/nodekeeper/nodekeeper/internal/test/motoserver"
)

// The AWS tests run the binary against moto (internal/test/motoserver), the model of AWS
// the AWS ecosystem tests against, reached ONLY through AWS_ENDPOINT_URL and the SDK's default
// chain (dummy credentials, empty shared files, no instance metadata). Their state is set up
// through moto's own API with the AWS SDK for Go. Were the endpoint overridden inside
// nodekeeper, the requests would go elsewhere and fail, and the front before moto would record
// nothing: every test asserts on the calls it recorded. An operation moto cannot answer is
// routed to awsserver (over awsfake's state) by the front, each with a comment naming what
// moto lacks.

// account is moto's AWS account as a test sets it up: the SDK clients against moto's own
// address, and the VPCs made so far.
type account struct {
	t       *testing.T
	srv     *motoserver.Server
	ec2     *ec2.Client
	eks     *eks.Client
	asg     *autoscaling.Client
	logs    *cloudwatchlogs.Client
	subnets map[string]string // 10.A.B.0/24 → subnet ID
	vpcs    map[string]string // 10.A.0.0/16 → VPC ID
}

// newAccount starts moto for the test and returns its account. CloudWatch's GetMetricData goes
// to awsserver over an empty account (a test with metrics routes it to its own): the SDK's
// CloudWatch client speaks Smithy RPC v2 CBOR, a protocol moto 5.2.1 does not serve (its
// CloudWatch answers the Query and JSON protocols only: moto/cloudwatch/responses.py).
func newAccount(t *testing.T) *account {
	t.Helper()
	srv := motoserver.Start(t)
	srv.Route("cloudwatch:GetMetricData", awsserver.New(awsfake.New()))
	cfg := srv.Config(t, eksRegion)
	return &account{t: t, srv: srv, ec2: ec2.NewFromConfig(cfg), eks: eks.NewFromConfig(cfg), asg: autoscaling.NewFromConfig(cfg),
		logs: cloudwatchlogs.NewFromConfig(cfg), subnets: map[string]string{}, vpcs: map[string]string{}}
}

// user is an eksUser (kubeconfig named by the cluster's ARN, in moto's account) whose
// environment points the AWS SDK at moto's front.
func (a *account) user() *user {
	u, _ := eksUser(a.t)
	u.vars = append(u.vars, a.srv.Env(a.t, eksRegion)...)
	return u
}

func (a *account) must(err error) {
	a.t.Helper()
	if err != nil {
		a.t.Fatalf("setting moto up: %v", err)
	}
}

// cluster creates the EKS cluster demo, with the API server's audit log shipped to CloudWatch
// Logs, as `eksctl` or the console make it.
func (a *account) cluster() {
	a.t.Helper()
	_, err := a.eks.CreateCluster(context.Background(), &eks.CreateClusterInput{
		Name: awssdk.String(eksClusterName), Version: awssdk.String("1.33"),
		RoleArn:            awssdk.String("arn:aws:iam::" + motoserver.Account + ":role/eks-cluster"),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{a.subnet("10.42.0.0")}},
		Logging: &ekstypes.Logging{ClusterLogging: []ekstypes.LogSetup{{
			Types: []ekstypes.LogType{ekstypes.LogTypeAudit}, Enabled: awssdk.Bool(true)}}},
	})
	a.must(err)
}

// subnet returns the subnet 10.A.B.0/24 of ip's first three octets (made, with its VPC 10.A.0.0/16,
// on first use).
func (a *account) subnet(ip string) string {
	a.t.Helper()
	o := strings.Split(ip, ".")
	cidr := o[0] + "." + o[1] + "." + o[2] + ".0/24"
	if id := a.subnets[cidr]; id != "" {
		return id
	}
	vcidr := o[0] + "." + o[1] + ".0.0/16"
	vpc := a.vpcs[vcidr]
	if vpc == "" {
		out, err := a.ec2.CreateVpc(context.Background(), &ec2.CreateVpcInput{CidrBlock: awssdk.String(vcidr)})
		a.must(err)
		vpc = *out.Vpc.VpcId
		a.vpcs[vcidr] = vpc
	}
	out, err := a.ec2.CreateSubnet(context.Background(), &ec2.CreateSubnetInput{VpcId: &vpc, CidrBlock: &cidr, AvailabilityZone: awssdk.String(eksRegion + "a")})
	a.must(err)
	a.subnets[cidr] = *out.Subnet.SubnetId
	return *out.Subnet.SubnetId
}

// motoNodeName is a node name no other test uses whose address EC2 can give: a subnet's first
// four addresses are AWS's (the Amazon VPC User Guide, "Subnet CIDR blocks").
func motoNodeName() string {
	for {
		name := nodeName()
		if last, _ := strconv.Atoi(strings.Split(ipOf(name), ".")[3]); last >= 4 {
			return name
		}
	}
}

// ipOf is the private address of an EC2 private DNS name (ip-10-42-0-7.REGION.compute.internal).
func ipOf(name string) string {
	host, _, _ := strings.Cut(name, ".")
	return strings.ReplaceAll(strings.TrimPrefix(host, "ip-"), "-", ".")
}

// tags makes EC2 tags from key, value pairs.
func tags(kv ...string) []ec2types.Tag {
	var out []ec2types.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, ec2types.Tag{Key: awssdk.String(kv[i]), Value: awssdk.String(kv[i+1])})
	}
	return out
}

// clusterTags are the tags EKS puts on a managed node group's instances.
var clusterTags = []string{"kubernetes.io/cluster/" + eksClusterName, "owned", "eks:cluster-name", eksClusterName}

// instance runs one instance (a reservation of its own) whose private DNS name is name, with
// tags, and returns it as RunInstances described it. edit may set more of the request.
func (a *account) instance(name string, kv []string, edit ...func(*ec2.RunInstancesInput)) ec2types.Instance {
	a.t.Helper()
	inst, err := a.runInstance(name, a.subnet(ipOf(name)), kv, edit...)
	a.must(err)
	return inst
}

// runInstance is instance without the test: safe to call from several goroutines once the
// subnet exists.
func (a *account) runInstance(name, subnet string, kv []string, edit ...func(*ec2.RunInstancesInput)) (ec2types.Instance, error) {
	ip := ipOf(name)
	in := &ec2.RunInstancesInput{ImageId: awssdk.String("ami-12c6146b"), InstanceType: ec2types.InstanceTypeM5Large,
		MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1), SubnetId: &subnet, PrivateIpAddress: &ip}
	if len(kv) > 0 {
		in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags(kv...)}}
	}
	for _, e := range edit {
		e(in)
	}
	out, err := a.ec2.RunInstances(context.Background(), in)
	if err != nil {
		return ec2types.Instance{}, err
	}
	inst := out.Instances[0]
	if got := awssdk.ToString(inst.PrivateDnsName); got != name {
		return inst, fmt.Errorf("moto named the instance %q, want %q", got, name)
	}
	return inst, nil
}

// template creates a launch template whose versions have the given user data scripts (version
// 1 the first, the default; "" is no user data) and returns its ID.
func (a *account) template(name string, scripts ...string) string {
	a.t.Helper()
	ctx := context.Background()
	data := func(script string) *ec2types.RequestLaunchTemplateData {
		d := &ec2types.RequestLaunchTemplateData{ImageId: awssdk.String("ami-12c6146b"), InstanceType: ec2types.InstanceTypeM5Large,
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags(clusterTags...)}}}
		if script != "" {
			d.UserData = awssdk.String(base64.StdEncoding.EncodeToString([]byte(script)))
		}
		return d
	}
	out, err := a.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: &name, LaunchTemplateData: data(scripts[0])})
	a.must(err)
	for _, s := range scripts[1:] {
		_, err := a.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: out.LaunchTemplate.LaunchTemplateId, LaunchTemplateData: data(s)})
		a.must(err)
	}
	return *out.LaunchTemplate.LaunchTemplateId
}

// providerID is the providerID the AWS cloud provider gives inst's Node.
func providerID(inst ec2types.Instance) string {
	return fmt.Sprintf("aws:///%s/%s", awssdk.ToString(inst.Placement.AvailabilityZone), awssdk.ToString(inst.InstanceId))
}

// createNode creates a Node named name for the instance, with labels, deleted when the test ends.
func createNode(t *testing.T, name string, inst ec2types.Instance, labels map[string]string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID(inst)}}
	if _, err := env.AdminClient().CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.AdminClient().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// calls returns the calls the front recorded since the first `from`, failing the test when there
// is none (the binary did not use AWS_ENDPOINT_URL) or one was signed for another region or
// answered with an error.
func (a *account) calls(t *testing.T, from int, r result) []motoserver.Call {
	t.Helper()
	calls := a.srv.Calls()[from:]
	if len(calls) == 0 {
		t.Fatalf("the AWS server received no request: the binary did not use AWS_ENDPOINT_URL\n%s", r)
	}
	for _, c := range calls {
		if c.Region != eksRegion {
			t.Errorf("%s:%s signed for region %q, want %s", c.Service, c.Operation, c.Region, eksRegion)
		}
		if c.Status != http.StatusOK {
			t.Errorf("%s:%s answered HTTP %d", c.Service, c.Operation, c.Status)
		}
	}
	return calls
}

// filtersOf returns the filters of every call of operation among calls.
func filtersOf(calls []motoserver.Call, operation string) []string {
	var out []string
	for _, c := range calls {
		if c.Operation == operation {
			out = append(out, c.Filters()...)
		}
	}
	return out
}

// noARNAsName fails when a request named the cluster by its ARN where AWS wants its name.
func noARNAsName(t *testing.T, calls []motoserver.Call) {
	t.Helper()
	for _, c := range calls {
		if strings.Contains(c.Path+c.Form.Encode()+fmt.Sprint(c.JSON), "arn:aws:eks") {
			t.Errorf("%s:%s was sent the cluster's ARN as a name: %v %v", c.Service, c.Operation, c.Form, c.JSON)
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

// countOf is the number of calls of operation.
func countOf(calls []motoserver.Call, operation string) int {
	n := 0
	for _, c := range calls {
		if c.Operation == operation {
			n++
		}
	}
	return n
}
