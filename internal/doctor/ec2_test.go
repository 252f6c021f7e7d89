package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

func ec2Instance(id, state, typ, subnet, dns string, launched time.Time, tags map[string]string) ec2types.Instance {
	inst := ec2types.Instance{InstanceId: &id, InstanceType: ec2types.InstanceType(typ), LaunchTime: &launched,
		State: &ec2types.InstanceState{Name: ec2types.InstanceStateName(state)}, SubnetId: &subnet, PrivateDnsName: &dns}
	for k, v := range tags {
		inst.Tags = append(inst.Tags, ec2types.Tag{Key: strp(k), Value: strp(v)})
	}
	return inst
}

// TestDoctorEC2: on a real control plane with the in-memory EC2, doctor --aws names the running
// instance of the cluster that has no Node (with its instance ID, type and launch time), the
// Nodes whose instance is terminated or unknown, and the subnet short of addresses; it does not
// name a normal node, an instance still registering, another cluster's instance, or a Karpenter
// node. AccessDenied skips the section with the missing permission named.
func TestDoctorEC2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	now := time.Now()
	node := func(name, instance string, pods int64) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node.kubernetes.io/instance-type": "m5.large"}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + instance}}
		created, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		created.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const (
		normal, gone, unknown, karp = "ip-10-80-1-10.ec2.internal", "ip-10-80-1-11.ec2.internal", "ip-10-80-2-12.ec2.internal", "ip-10-80-2-13.ec2.internal"
		zombieID                    = "i-0598c7d356eba48d7"
	)
	node(normal, "i-0normal000000001", 29)
	node(gone, "i-0gone00000000001", 29)
	node(unknown, "i-0unknown00000001", 29)
	node(karp, "i-0karpenter000001", 58)

	cloud := awsfake.New()
	cloud.PageSize = 2 // every list takes several pages
	prod := map[string]string{"eks:cluster-name": "prod", "kubernetes.io/cluster/prod": "owned"}
	cloud.Instances = []ec2types.Instance{
		ec2Instance("i-0normal000000001", "running", "m5.large", "subnet-a", normal, now.Add(-48*time.Hour), prod),
		ec2Instance("i-0gone00000000001", "terminated", "m5.large", "subnet-a", gone, now.Add(-30*time.Hour), prod),
		ec2Instance("i-0karpenter000001", "running", "m5.xlarge", "subnet-b", karp, now.Add(-5*time.Hour),
			map[string]string{"karpenter.sh/nodepool": "default", "eks:eks-cluster-name": "prod"}),
		ec2Instance(zombieID, "running", "c6i.2xlarge", "subnet-b", "ip-10-80-2-99.ec2.internal", now.Add(-3*time.Hour), prod),
		ec2Instance("i-0registering0001", "running", "m5.large", "subnet-b", "ip-10-80-2-98.ec2.internal", now.Add(-2*time.Minute), prod),
		ec2Instance("i-0othercluster001", "running", "m5.large", "subnet-b", "ip-10-80-2-97.ec2.internal", now.Add(-9*time.Hour), map[string]string{"eks:cluster-name": "staging"}),
		ec2Instance("i-0karpzombie00001", "running", "m6g.large", "subnet-b", "ip-10-80-2-96.ec2.internal", now.Add(-time.Hour),
			map[string]string{"karpenter.sh/nodepool": "batch", "eks:eks-cluster-name": "prod"}),
	}
	free := func(n int32) *int32 { return &n }
	cloud.Subnets = []ec2types.Subnet{
		{SubnetId: strp("subnet-a"), CidrBlock: strp("10.80.1.0/24"), AvailabilityZone: strp("us-east-1a"), AvailableIpAddressCount: free(12)},
		{SubnetId: strp("subnet-b"), CidrBlock: strp("10.80.2.0/24"), AvailabilityZone: strp("us-east-1b"), AvailableIpAddressCount: free(200)},
	}

	rep, err := Run(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none", EC2: &EC2Options{API: cloud, Cluster: "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range rep.Findings() {
		if f.Section == SectionEC2 {
			got[f.Resource] = append(got[f.Resource], f.Code+":"+f.Severity.String()+" "+f.Message)
		}
	}
	want := map[string]string{
		"instance/" + zombieID:        "NK801:warning c6i.2xlarge launched ",
		"instance/i-0karpzombie00001": "NK801:warning m6g.large launched ",
		"node/" + gone:                "NK802:warning instance i-0gone00000000001 is terminated",
		"node/" + unknown:             "NK802:warning instance i-0unknown00000001 is not known to EC2",
		"subnet/subnet-a":             "NK803:warning 10.80.1.0/24 in us-east-1a: 12 free addresses, a node like " + normal + " needs 30",
	}
	for res, prefix := range want {
		if len(got[res]) != 1 || !strings.HasPrefix(got[res][0], prefix) {
			t.Errorf("%s: got %q, want one finding starting %q", res, got[res], prefix)
		}
	}
	if z := got["instance/"+zombieID]; len(z) == 1 && !strings.Contains(z[0], "running 3h0m0s with no Node") {
		t.Errorf("zombie finding does not say how long it has run without a Node: %s", z[0])
	}
	if len(got) != len(want) {
		t.Errorf("EC2 findings %v, want only %v", got, want)
	}
	if cloud.Calls(nkaws.PermDescribeInstances) < 4 {
		t.Errorf("%d DescribeInstances calls: the pages were not all read", cloud.Calls(nkaws.PermDescribeInstances))
	}

	cloud.Deny[nkaws.PermDescribeInstances] = true
	rep, err = Run(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none", EC2: &EC2Options{API: cloud, Cluster: "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, f := range rep.Findings() {
		if f.Section == SectionEC2 {
			skipped = append(skipped, f.Severity.String()+" "+f.Message)
		}
	}
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0], findings.Skipped.String()) || !strings.Contains(skipped[0], "ec2:DescribeInstances") {
		t.Errorf("denied: %v", skipped)
	}
}
