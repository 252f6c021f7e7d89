package gather

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/render"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// cniImage is the aws-node image of the tests' DaemonSets.
const cniImage = "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2"

// The plan reads the cluster only; no controller runs.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// installENIConfigs installs the ENIConfig CRD and one ENIConfig per zone naming its pod subnet.
func installENIConfigs(t *testing.T, podSubnets map[string]string) {
	t.Helper()
	env.InstallCRD(t, filepath.Join("testdata", "eniconfig-crd.yaml"), clusterread.GVRENIConfig)
	for zone, subnet := range podSubnets {
		env.CreateENIConfig(t, zone, subnet, "sg-0123")
	}
}

// createGroup creates two nodes of a managed node group on m5.large with pod capacity 29 (the
// EKS AMI's value), Amazon Linux 2023, one per zone, and their instances in the fake EC2 (in
// subnet-GROUP-a and subnet-GROUP-b). The nodes are not Ready, so no kubelet is asked.
func createGroup(ctx context.Context, t *testing.T, c kubernetes.Interface, cloud *awsfake.Cloud, group string) {
	t.Helper()
	for i, zone := range []string{"us-east-1a", "us-east-1b"} {
		name := fmt.Sprintf("ip-10-0-%d-%d.%s.ec2.internal", i, len(group), group)
		id := fmt.Sprintf("i-%s%d", group, i)
		subnet := fmt.Sprintf("subnet-%s-%c", group, 'a'+i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			rules.LabelEKSNodegroup: group, "node.kubernetes.io/instance-type": "m5.large", corev1.LabelTopologyZone: zone}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + id}}
		n, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		n.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")}
		n.Status.NodeInfo.OSImage = "Amazon Linux 2023.6.20250115"
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cloud.Instances = append(cloud.Instances, ec2types.Instance{InstanceId: aws.String(id), InstanceType: "m5.large", SubnetId: aws.String(subnet),
			Placement: &ec2types.Placement{AvailabilityZone: aws.String(zone)}, State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}})
	}
}

func subnet(id, zone string, free int32) ec2types.Subnet {
	return ec2types.Subnet{SubnetId: aws.String(id), AvailabilityZone: aws.String(zone), CidrBlock: aws.String("10.0.0.0/16"), AvailableIpAddressCount: aws.Int32(free), VpcId: aws.String("vpc-1")}
}

// nodeHighSeats reads the nominal seats of node-high from the API server's metrics.
func nodeHighSeats(ctx context.Context, t *testing.T, c kubernetes.Interface) int {
	t.Helper()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := clusterread.ParseMetrics(raw, "apiserver_flowcontrol_nominal_limit_seats")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if s.Labels["priority_level"] == "node-high" {
			return int(s.Value)
		}
	}
	t.Fatal("no nominal seats for node-high")
	return 0
}

// Each limit in turn is made the first to break, in a cluster read through the API server and
// an EC2 that awsfake answers: the plan names it, with the node count its formula gives.
func TestPlanNamesTheFirstLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	installENIConfigs(t, map[string]string{"us-east-1a": "subnet-pods-a", "us-east-1b": "subnet-pods-b"})
	huge := plan.EC2Buckets{Mutating: plan.Bucket{Capacity: 1 << 30, Refill: 1 << 20}, Source: "test"}

	for _, tc := range []struct {
		name    string
		awsNode map[string]string
		// free is what each of the group's two node subnets has free; podFree, when set, what
		// the two pod subnets of custom networking (subnet-pods-a and -b) have.
		free    int32
		podFree [2]int32
		reqs    func(group string) []Request
		ec2     *plan.EC2Buckets
		apf     bool // node-high shrunk to its smallest share
		first   string
		// breaksAt is the first new node over the limit; apf cases compute it from the seats.
		breaksAt int
		where    string
		fix      string // the start of the first fix
	}{
		// 10 pods' worth of whole ENIs: an m5.large with maxPods 29 (its nodes' capacity) holds
		// 3 ENIs, 27 + 3 addresses; 300 free addresses per subnet hold 10 nodes each.
		{name: "subnet", first: plan.LimitSubnet, breaksAt: 21,
			free:  300,
			reqs:  func(g string) []Request { return []Request{{Nodegroup: g, Add: 100, PullsPerNode: 5}} },
			where: "subnet-subnet-a",
			fix:   "subnet-subnet-a is 1200 addresses short: add a subnet of at least /21 in us-east-1a; subnet-subnet-b is 1200"},
		// Custom networking: the AMI's 29 (read from the nodes) against 2 ENIs x 9 + 2 = 20.
		{name: "pods per node", first: plan.LimitPods, breaksAt: 1,
			awsNode: map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "ENI_CONFIG_LABEL_DEF": corev1.LabelTopologyZone},
			free:    5000, podFree: [2]int32{60000, 60000},
			reqs:  func(g string) []Request { return []Request{{Nodegroup: g, Add: 50, PullsPerNode: 5}} },
			where: "node group pods-per-node",
			fix:   "give the kubelet max pods 20: managed node group: use a launch template with the AMI ID and this in its user data - Amazon Linux 2023"},
		// Custom networking with maxPods 20: each node takes 1 address from its own subnet and
		// 18 + 2 from the pod subnet of its zone's ENIConfig; zone b's 200 hold 10 nodes, and
		// its 11th, the 22nd node, is short.
		{name: "pod subnet", first: plan.LimitSubnet, breaksAt: 22,
			awsNode: map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "ENI_CONFIG_LABEL_DEF": corev1.LabelTopologyZone},
			free:    5000, podFree: [2]int32{300, 200},
			reqs:  func(g string) []Request { return []Request{{Nodegroup: g, Add: 100, MaxPods: 20, PullsPerNode: 5}} },
			where: "subnet-pods-b",
			fix:   "subnet-pods-a is 700 addresses short: add a subnet of at least /22 in us-east-1a; subnet-pods-b is 800 addresses short: add a subnet of at least /22 in us-east-1b; then point each zone's ENIConfig at its new subnet"},
		// 9 calls a node against 50 + 5/s for 5 minutes: 172 nodes.
		{name: "EC2", first: plan.LimitEC2, breaksAt: 173,
			free:  60000,
			reqs:  func(g string) []Request { return []Request{{Nodegroup: g, Add: 300, PullsPerNode: 5}} },
			where: "",
			fix:   "switch on prefix delegation"},
		// The first 40 nodes pull 5 images each; the next group's 27 (one per pod address)
		// exceed the kubelet's default registryBurst 10 at its first node, the 41st.
		{name: "image pulls", first: plan.LimitPulls, breaksAt: 41, ec2: &huge,
			free: 60000,
			reqs: func(g string) []Request {
				return []Request{{Nodegroup: g, Add: 40, PullsPerNode: 5}, {Name: g + "-batch", Nodegroup: g, Add: 10}}
			},
			where: "node group image-pulls-batch",
			fix:   "give the kubelets registryBurst 27 (the 27 pulls a new node starts at once) and registryPullQPS 50"},
		// node-high at one share; prefix delegation makes addresses cheap and EC2 is huge.
		{name: "priority level", first: plan.LimitAPF, apf: true, ec2: &huge,
			awsNode: map[string]string{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1"},
			free:    1 << 30,
			reqs:    func(g string) []Request { return []Request{{Nodegroup: g, Add: 5000, PullsPerNode: 5}} },
			where:   "priority level node-high",
			fix:     "raise the priority level's nominalConcurrencyShares"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			cloud := awsfake.New()
			createGroup(ctx, t, admin, cloud, group)
			cloud.Subnets = []ec2types.Subnet{subnet("subnet-"+group+"-a", "us-east-1a", tc.free), subnet("subnet-"+group+"-b", "us-east-1b", tc.free)}
			if tc.podFree != [2]int32{} {
				cloud.Subnets = append(cloud.Subnets, subnet("subnet-pods-a", "us-east-1a", tc.podFree[0]), subnet("subnet-pods-b", "us-east-1b", tc.podFree[1]))
			}
			dsName := "aws-node-" + group
			env.CreateAWSNode(t, dsName, cniImage, tc.awsNode)
			breaksAt := tc.breaksAt
			if tc.apf {
				seats := shrinkNodeHigh(ctx, t, admin)
				nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// (0.1 + 1/300) writes/s of 0.05 s each per kubelet.
				breaksAt = int(float64(seats)/((1.0/10+1.0/300)*0.05)) - len(nodes.Items) + 1
				t.Logf("node-high: %d seats, %d nodes: breaks at %d", seats, len(nodes.Items), breaksAt)
			}
			in, err := Gather(ctx, env.AdminConfig(), Options{AWSNodeNamespace: "kube-system", AWSNodeName: dsName, EC2: cloud, ChunkSize: 500}, tc.reqs(group))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ec2 != nil {
				in.EC2 = *tc.ec2
			}
			r, err := plan.Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := render.JSON(r)
			if err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, render.Kind, doc)
			p := r.Today
			if p.Fits || p.FirstToBreak != tc.first {
				t.Fatalf("first to break %q (fits %v), want %s; limits %+v\nnotes %v", p.FirstToBreak, p.Fits, tc.first, p.Limits, r.Notes)
			}
			l := p.Limit(tc.first)
			if l.BreaksAt != breaksAt {
				t.Errorf("%s breaks at %d, want %d: %s", tc.first, l.BreaksAt, breaksAt, l.Detail)
			}
			where := strings.ReplaceAll(tc.where, "subnet-subnet-a", "subnet-"+group+"-a")
			if l.Where != where {
				t.Errorf("where %q, want %q", l.Where, where)
			}
			if l.Fix == nil || !strings.HasPrefix(l.Fix.Text, tc.fix) {
				t.Errorf("fix %+v, want it to start %q", l.Fix, tc.fix)
			}
			if g := p.Groups[0]; g.InstanceType != "m5.large" || (g.MaxPods != 29 && tc.reqs(group)[0].MaxPods == 0) || len(g.Placements) != 2 {
				t.Errorf("group read as %+v", g)
			}
		})
	}
}

// shrinkNodeHigh gives node-high one share (kept from the API server's own updates by the
// autoupdate annotation), waits for its nominal seats to drop and restores it when the test
// ends. It returns the seats.
func shrinkNodeHigh(ctx context.Context, t *testing.T, c kubernetes.Interface) int {
	t.Helper()
	before := nodeHighSeats(ctx, t, c)
	plc, err := c.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "node-high", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig := plc.DeepCopy()
	if plc.Annotations == nil {
		plc.Annotations = map[string]string{}
	}
	plc.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	plc.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](1)
	if _, err := c.FlowcontrolV1().PriorityLevelConfigurations().Update(ctx, plc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur, err := c.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), "node-high", metav1.GetOptions{})
		if err != nil {
			return
		}
		cur.Annotations, cur.Spec = orig.Annotations, orig.Spec
		_, _ = c.FlowcontrolV1().PriorityLevelConfigurations().Update(context.Background(), cur, metav1.UpdateOptions{})
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if seats := nodeHighSeats(ctx, t, c); seats < before {
			return seats
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-high still has %d seats a minute after its shares went to 1", before)
		}
	}
}

// Subnets given by ID learn their zone from EC2; with custom networking selecting ENIConfigs by
// zone, the zone then chooses each placement's pod subnet, whose free addresses are read too.
func TestGivenSubnetsSelectENIConfigsByZone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	installENIConfigs(t, map[string]string{"us-east-1a": "subnet-pods-a", "us-east-1b": "subnet-pods-b"})
	env.CreateAWSNode(t, "aws-node-given", cniImage, map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "ENI_CONFIG_LABEL_DEF": corev1.LabelTopologyZone})
	cloud := awsfake.New()
	cloud.Subnets = []ec2types.Subnet{subnet("subnet-x1", "us-east-1a", 100), subnet("subnet-x2", "us-east-1b", 100),
		subnet("subnet-pods-a", "us-east-1a", 4000), subnet("subnet-pods-b", "us-east-1b", 3000)}
	in, err := Gather(ctx, env.AdminConfig(), Options{AWSNodeNamespace: "kube-system", AWSNodeName: "aws-node-given", EC2: cloud, ChunkSize: 500},
		[]Request{{Name: "new", InstanceType: "m5.large", Add: 4, MaxPods: 20, Subnets: []string{"subnet-x1", "subnet-x2"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.Placement{{Zone: "us-east-1a", NodeSubnet: "subnet-x1", ENIConfig: "us-east-1a", PodSubnet: "subnet-pods-a"},
		{Zone: "us-east-1b", NodeSubnet: "subnet-x2", ENIConfig: "us-east-1b", PodSubnet: "subnet-pods-b"}}
	if got := in.Groups[0].Placements; !slices.Equal(got, want) {
		t.Errorf("placements %+v, want %+v (notes %v)", got, want, in.Notes)
	}
	if in.Subnets["subnet-pods-b"].Free != 3000 || in.Subnets["subnet-x1"].Zone != "us-east-1a" {
		t.Errorf("subnets %+v", in.Subnets)
	}
}

// Karpenter's reservedENIs beyond the one custom networking takes keep ENIs of its nodes from
// pod addresses.
func TestKarpenterReservedENIs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": "karpenter"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "karpenter", Namespace: "karpenter", Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "public.ecr.aws/karpenter/controller:1.0.0",
					Env: []corev1.EnvVar{{Name: "RESERVED_ENIS", Value: "2"}}}}}}}}
	if _, err := admin.AppsV1().Deployments("karpenter").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.AppsV1().Deployments("karpenter").Delete(context.Background(), "karpenter", metav1.DeleteOptions{})
	})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-9-0-1.karpenter.test", Labels: map[string]string{
		rules.LabelKarpenterNodePool: "kp", "node.kubernetes.io/instance-type": "m5.large", corev1.LabelTopologyZone: "us-east-1a"}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	for _, tc := range []struct {
		awsNode  map[string]string
		reserved int
	}{
		{map[string]string{}, 2},
		{map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"}, 1},
	} {
		ds := fmt.Sprintf("aws-node-karpenter-%d", tc.reserved)
		env.CreateAWSNode(t, ds, cniImage, tc.awsNode)
		in, err := Gather(ctx, env.AdminConfig(), Options{AWSNodeNamespace: "kube-system", AWSNodeName: ds, ChunkSize: 500},
			[]Request{{Nodegroup: "kp", Add: 3, Zones: []string{"us-east-1a"}}})
		if err != nil {
			t.Fatal(err)
		}
		if g := in.Groups[0]; g.ReservedENIs != tc.reserved || g.Provisioner != rules.ProvisionerKarpenter {
			t.Errorf("%v: %d reserved ENIs (%s), want %d; notes %v", tc.awsNode, g.ReservedENIs, g.Provisioner, tc.reserved, in.Notes)
		}
	}
}
