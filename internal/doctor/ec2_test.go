package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
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

	rep, err := runAWS(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none", EC2: &EC2Options{Cluster: "prod"}}, Deps{EC2: cloud})
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
	if z := got["instance/"+zombieID]; len(z) == 1 && !strings.Contains(z[0], "running 3h with no Node") {
		t.Errorf("zombie finding does not say how long it has run without a Node: %s", z[0])
	}
	if len(got) != len(want) {
		t.Errorf("EC2 findings %v, want only %v", got, want)
	}
	// The listing's 5 pages (three tag filters, two instances a page), then one page for the two
	// Nodes whose instances it did not hold (terminated, unknown): the running ones are not
	// asked for again.
	if n := cloud.Calls(nkaws.PermDescribeInstances); n != 6 {
		t.Errorf("%d DescribeInstances calls, want 6", n)
	}

	cloud.Deny[nkaws.PermDescribeInstances] = true
	rep, err = runAWS(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none", EC2: &EC2Options{Cluster: "prod"}}, Deps{EC2: cloud})
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

// TestAddressNeed: what a node holds when full of pods follows the aws-node warm pool, bounded by
// the ENIs its instance type has for pods; the test fails if the need falls back to max pods + 1.
func TestAddressNeed(t *testing.T) {
	m5 := &eni.InstanceType{Name: "m5.large", ENIs: 3, IPv4PerENI: 10} // 9 pod addresses per ENI
	c5 := &eni.InstanceType{Name: "c5.4xlarge", ENIs: 8, IPv4PerENI: 30}
	m5nitro := &eni.InstanceType{Name: "m5.large", ENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro"}
	env := func(kv ...string) eni.Settings {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return eni.ParseSettings(m)
	}
	for _, tc := range []struct {
		name             string
		pods             int64
		it               *eni.InstanceType
		s                eni.Settings
		wantAddrs, wantE int64
		wantWhy          string
	}{
		{"default WARM_ENI_TARGET 1, capped by the type", 29, m5, env(), 27, 3, "WARM_ENI_TARGET 1"},
		{"WARM_ENI_TARGET 1 on a big type: the pods' ENIs and one more", 58, c5, env(), 3 * 29, 3, "3 ENIs of 30 addresses"},
		{"WARM_ENI_TARGET 0", 58, c5, env(eni.EnvWarmENITarget, "0"), 2 * 29, 2, "WARM_ENI_TARGET 0"},
		{"WARM_IP_TARGET adds to the pods", 58, c5, env(eni.EnvWarmIPTarget, "5"), 63, 3, "max pods 58 + WARM_IP_TARGET 5"},
		{"MINIMUM_IP_TARGET above pods + warm", 20, c5, env(eni.EnvWarmIPTarget, "2", eni.EnvMinimumIPTarget, "100"), 100, 4, "raised to MINIMUM_IP_TARGET 100"},
		{"warm IP capped by the ENIs, custom networking takes one", 40, m5, env(eni.EnvWarmIPTarget, "5", eni.EnvCustomNetworking, "true"), 18, 2, "on 2 ENIs"},
		{"MAX_ENI caps", 58, c5, env(eni.EnvMaxENI, "2"), 58, 2, "2 ENIs"},
		{"unknown type: the pods", 29, nil, env(), 29, 1, "instance type unknown"},
		{"prefixes: pods' and WARM_PREFIX_TARGET's default 1", 110, m5nitro, env(eni.EnvPrefixDelegation, "true"), 8 * 16, 1, "8 /28 prefixes of 16 addresses: max pods 110 + WARM_PREFIX_TARGET 1"},
		{"prefixes: WARM_PREFIX_TARGET 0", 110, m5nitro, env(eni.EnvPrefixDelegation, "true", eni.EnvWarmPrefixTarget, "0"), 7 * 16, 1, "7 /28 prefixes"},
		{"prefixes: WARM_IP_TARGET wins", 110, m5nitro, env(eni.EnvPrefixDelegation, "true", eni.EnvWarmIPTarget, "10"), 8 * 16, 1, "120 addresses"},
		{"prefixes only on Nitro", 29, m5, env(eni.EnvPrefixDelegation, "true"), 27, 3, "WARM_ENI_TARGET 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs, enis, why := addressNeed(tc.pods, tc.it, tc.s)
			if addrs != tc.wantAddrs || enis != tc.wantE || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("got %d addresses on %d ENIs (%s), want %d on %d (%q)", addrs, enis, why, tc.wantAddrs, tc.wantE, tc.wantWhy)
			}
		})
	}
}

// TestDoctorEC2CapacityAndPodSubnets, on a real control plane with the in-memory EC2: a node of
// an instance type the built-in table does not know gets its capacity checked from EC2's data
// (one DescribeInstanceTypes call naming only that type) instead of "unknown type"; with custom
// networking the subnet of the ENIConfig the node selects is checked against the node's warm
// pool, and its node subnet against its own address only; AccessDenied on
// DescribeInstanceTypes is said with the permission's name.
func TestDoctorEC2CapacityAndPodSubnets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	env.InstallCRD(t, "testdata/eniconfig-crd.yaml", clusterread.GVRENIConfig)
	env.CreateENIConfig(t, "us-east-1a", "subnet-pods-a", "sg-0123")
	env.CreateAWSNode(t, "aws-node-ec2", "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1", map[string]string{
		eni.EnvCustomNetworking: "true", eni.EnvWarmIPTarget: "5", "ENI_CONFIG_LABEL_DEF": corev1.LabelTopologyZone,
	})
	const future, known = "ip-10-90-1-10.ec2.internal", "ip-10-90-1-11.ec2.internal"
	node := func(name, typ, instance string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: typ, corev1.LabelTopologyZone: "us-east-1a"}},
			Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + instance},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
				corev1.ResourcePods: *resource.NewQuantity(40, resource.DecimalSI), corev1.ResourceCPU: *resource.NewQuantity(2, resource.DecimalSI)}},
		}
	}
	createNode(ctx, t, admin, node(future, "m9z.large", "i-0future000000001"))
	createNode(ctx, t, admin, node(known, "m5.large", "i-0known0000000001"))

	cloud := awsfake.New()
	cloud.InstanceTypes = []ec2types.InstanceTypeInfo{{InstanceType: "m9z.large", Hypervisor: ec2types.InstanceTypeHypervisorNitro,
		VCpuInfo:    &ec2types.VCpuInfo{DefaultVCpus: awssdk.Int32(2)},
		NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: awssdk.Int32(3), Ipv4AddressesPerInterface: awssdk.Int32(10)}}}
	old := time.Now().Add(-time.Hour)
	cloud.Instances = []ec2types.Instance{
		ec2Instance("i-0future000000001", "running", "m9z.large", "subnet-nodes-a", future, old, nil),
		ec2Instance("i-0known0000000001", "running", "m5.large", "subnet-nodes-a", known, old, nil),
	}
	cloud.Subnets = []ec2types.Subnet{
		{SubnetId: strp("subnet-nodes-a"), CidrBlock: strp("10.90.1.0/24"), AvailabilityZone: strp("us-east-1a"), AvailableIpAddressCount: awssdk.Int32(3)},
		{SubnetId: strp("subnet-pods-a"), CidrBlock: strp("100.64.0.0/24"), AvailabilityZone: strp("us-east-1a"), AvailableIpAddressCount: awssdk.Int32(15)},
	}
	run := func(ec2 *EC2Options) map[string][]string {
		t.Helper()
		var aws Deps
		if ec2 != nil {
			aws.EC2 = cloud
		}
		rep, err := runAWS(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-ec2", SkipPodNetworking: true, EC2: ec2}, aws)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, f := range rep.Findings() {
			capacity := f.Resource == "node/"+future && f.Section == SectionNodes // not the lease or readiness checks
			if capacity || strings.HasPrefix(f.Resource, "subnet/") || f.Resource == "ec2" {
				got[f.Resource] = append(got[f.Resource], f.Code+":"+f.Severity.String()+" "+f.Message)
			}
		}
		return got
	}

	// Without --aws the new type is unknown, and nothing calls AWS.
	got := run(nil)
	if f := got["node/"+future]; len(f) != 1 || !strings.HasPrefix(f[0], "NK103:info") || !strings.Contains(f[0], `"m9z.large"`) {
		t.Errorf("without --aws: %q, want NK103 for m9z.large", f)
	}
	if n := cloud.Calls(nkaws.PermDescribeInstanceTypes) + cloud.Calls(nkaws.PermDescribeInstances); n != 0 {
		t.Errorf("%d AWS calls without --aws", n)
	}

	got = run(&EC2Options{Cluster: "prod"})
	// m9z.large with custom networking: (3 - 1) ENIs x 9 + 2 = 20 pod addresses < 40.
	if f := got["node/"+future]; len(f) != 1 || !strings.HasPrefix(f[0], "NK101:error kubelet allows 40 pods but m9z.large") || !strings.Contains(f[0], "gives addresses for 20") {
		t.Errorf("with --aws: node findings %q, want NK101 from EC2's data", f)
	}
	if asked := cloud.InstanceTypesAsked(); strings.Join(asked, ",") != "m9z.large" {
		t.Errorf("asked EC2 about %q, want only the type the table does not know", asked)
	}
	// Pod subnet: max pods 40 + WARM_IP_TARGET 5 = 45, capped at 2 ENIs x 9 = 18, + 2 primaries.
	wantPods := "NK803:warning 100.64.0.0/24 in us-east-1a: 15 free addresses, a node like " + future + " needs 20 (max pods 40 + WARM_IP_TARGET 5 addresses on 2 ENIs"
	if f := got["subnet/subnet-pods-a"]; len(f) != 1 || !strings.HasPrefix(f[0], wantPods) || !strings.Contains(f[0], "ENIConfig's subnet") {
		t.Errorf("pod subnet: %q, want one finding starting %q", f, wantPods)
	}
	if f := got["subnet/subnet-nodes-a"]; len(f) != 0 {
		t.Errorf("node subnet with 3 free addresses holds only the nodes' own with custom networking: %q", f)
	}

	cloud.Deny[nkaws.PermDescribeInstanceTypes] = true
	got = run(&EC2Options{Cluster: "prod"})
	if f := got["ec2"]; len(f) != 1 || !strings.HasPrefix(f[0], "NK103:skipped") || !strings.Contains(f[0], "ec2:DescribeInstanceTypes") {
		t.Errorf("denied: %q, want a skipped NK103 naming ec2:DescribeInstanceTypes", f)
	}
	if f := got["node/"+future]; len(f) != 1 || !strings.HasPrefix(f[0], "NK103:info") {
		t.Errorf("denied: node findings %q, want the type unknown", f)
	}
}

// TestCheckSubnetsPrefixDelegation: with prefix delegation a subnet with fewer free addresses
// than a node's prefixes need is NK803; one with enough for the prefixes but under 64 free is
// the fragmentation warning NK804; one with plenty is neither.
func TestCheckSubnetsPrefixDelegation(t *testing.T) {
	node := func(name, instance string, pods int64) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.large"}},
			Spec:   corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + instance},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}}}
	}
	now := time.Now()
	in := EC2Inputs{
		Nodes: []corev1.Node{node("full", "i-1", 110), node("fits", "i-2", 110), node("small", "i-3", 10)},
		ByID: map[string]ec2types.Instance{
			"i-1": ec2Instance("i-1", "running", "m5.large", "subnet-full", "full", now, nil),
			"i-2": ec2Instance("i-2", "running", "m5.large", "subnet-fits", "fits", now, nil),
			"i-3": ec2Instance("i-3", "running", "m5.large", "subnet-small", "small", now, nil),
		},
		Subnets: []ec2types.Subnet{
			{SubnetId: strp("subnet-full"), AvailableIpAddressCount: awssdk.Int32(100)},
			{SubnetId: strp("subnet-fits"), AvailableIpAddressCount: awssdk.Int32(500)},
			{SubnetId: strp("subnet-small"), AvailableIpAddressCount: awssdk.Int32(40)},
		},
		Settings: eni.ParseSettings(map[string]string{eni.EnvPrefixDelegation: "true"}),
		Now:      now,
	}
	got := map[string]string{}
	for _, f := range CheckEC2(in) {
		got[f.Resource] = f.Code + " " + f.Message
	}
	want := map[string]string{
		"subnet/subnet-full":  "NK803 ", // 8 prefixes (128) + 1 ENI primary = 129 > 100
		"subnet/subnet-small": "NK804 ", // 2 prefixes (32) + 1 = 33 <= 40 < 64
	}
	for res, prefix := range want {
		if !strings.HasPrefix(got[res], prefix) {
			t.Errorf("%s: %q, want %s", res, got[res], prefix)
		}
	}
	if !strings.Contains(got["subnet/subnet-full"], "needs 129 (8 /28 prefixes") {
		t.Errorf("subnet-full: %q does not explain the need in prefixes", got["subnet/subnet-full"])
	}
	if len(got) != len(want) {
		t.Errorf("findings %v, want only %v", got, want)
	}
}
