package explain

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/golden"
	"github.com/nodekeeper/nodekeeper/internal/test/kubeletstub"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

// subnetExhaustedIPAMD is ipamd's /metrics (Prometheus text format, the series and labels ipamd
// declares in utils/prometheusmetrics/prometheusmetrics.go of aws/amazon-vpc-cni-k8s) on a node
// whose pool is short because EC2 refused addresses for the subnet
// (InsufficientFreeAddressesInSubnet, passed through awsAPIErrInc in pkg/awsutils/awsutils.go).
const subnetExhaustedIPAMD = `# HELP awscni_total_ip_addresses The total number of IP addresses
# TYPE awscni_total_ip_addresses gauge
awscni_total_ip_addresses 3
# HELP awscni_assigned_ip_addresses The number of IP addresses assigned to pods
# TYPE awscni_assigned_ip_addresses gauge
awscni_assigned_ip_addresses 3
# HELP awscni_ip_max The maximum number of IP addresses that can be allocated to the instance
# TYPE awscni_ip_max gauge
awscni_ip_max 9
# HELP awscni_eni_allocated The number of ENIs allocated
# TYPE awscni_eni_allocated gauge
awscni_eni_allocated 1
# HELP awscni_eni_max The maximum number of ENIs that can be attached to the instance, accounting for unmanaged ENIs
# TYPE awscni_eni_max gauge
awscni_eni_max 3
# HELP awscni_no_available_ip_addresses The number of pod IP assignments that fail due to no available IP addresses
# TYPE awscni_no_available_ip_addresses counter
awscni_no_available_ip_addresses 5
# HELP awscni_aws_api_error_count The number of times AWS API returns an error
# TYPE awscni_aws_api_error_count counter
awscni_aws_api_error_count{api="CreateNetworkInterface",error="InsufficientFreeAddressesInSubnet"} 6
`

// msgSubnet is the kubelet's FailedCreatePodSandBox message when EC2 has no address left in the
// subnet (the CNI plugin's error, cmd/routed-eni-cni-plugin/cni.go, quoting the SDK's).
const msgSubnet = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "14bffa7734d01abd808dead23744386135518961ab240ba48b88a9e269398126": plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container: operation error EC2: AssignPrivateIpAddresses, https response error StatusCode: 400, RequestID: 6a1f0e4e-2b7c-4c1e-9d1e-0c9f3c1d2e3f, api error InsufficientFreeAddressesInSubnet: The specified subnet does not have enough free addresses to satisfy the request.`

// stuckNode is a node whose pods wait in ContainerCreating because its subnet is out of
// addresses, with its aws-node pod's ipamd (kubeletstub, reached through the real pod proxy).
type stuckNode struct {
	name, team string
	ds         *appsv1.DaemonSet
	base       time.Time
	pods       []string
}

func startStuckNode(ctx context.Context, t *testing.T, name string) *stuckNode {
	t.Helper()
	admin := env.AdminClient()
	s := &stuckNode{name: name, team: "explain-stuck-" + strings.Split(name, ".")[0], base: time.Now().Add(time.Hour).Truncate(time.Second)}
	s.ds = env.CreateAWSNode(t, "aws-node-explain", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.1-eksbuild.1",
		map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1"})
	ns, err := kubeletstub.New()
	if err != nil {
		t.Fatalf("the pod proxy test needs a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	srv, err := kubeletstub.StartIPAMD(ns, []int{0}, func(int) []byte { return []byte(subnetExhaustedIPAMD) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// The Node as an EKS node registers it (not Ready: its kubelet is not asked for configz).
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: "t3.small", "kubernetes.io/os": "linux"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-0fedcba9876543210"}}
	_, err = admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// kube-controller-manager's node lifecycle controller writes the new Node too (its taint):
	// the status is written on the latest version.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = corev1.NodeStatus{
			Capacity:  corev1.ResourceList{corev1.ResourcePods: resource.MustParse("11"), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ns.NSIP}},
			NodeInfo:  corev1.NodeSystemInfo{OSImage: "Amazon Linux 2", KubeletVersion: kubeletsim.ModernKubeletVersion, OperatingSystem: "linux"},
		}
		_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	createAWSNodePod(ctx, t, admin, s.ds, name, ns.NSIP, srv.Endpoints()[0].Port)
	if err := kubeletsim.EnsureNamespace(ctx, admin, s.team); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Events(s.team).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	for i := range 2 {
		ago := time.Duration(12-i) * time.Minute
		p, err := kubeletsim.CreateStuckPod(ctx, admin, kubeletsim.PodSpec{Namespace: s.team, Name: fmt.Sprintf("api-%d", i), Node: name, ScheduledAt: s.base.Add(-ago)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoreV1().Pods(s.team).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
		if _, err := kubeletsim.RecordSandboxFailure(ctx, admin, p, msgSubnet, 5, s.base.Add(-ago), s.base.Add(-ago+time.Minute)); err != nil {
			t.Fatal(err)
		}
		s.pods = append(s.pods, s.team+"/"+p.Name)
	}
	return s
}

// createAWSNodePod does what the DaemonSet controller and the kubelet would for ds on node:
// the pod from its template, owned by it, bound to node, Running and Ready at ip (aws-node is
// hostNetwork), its "metrics" port the stub's.
func createAWSNodePod(ctx context.Context, t *testing.T, c kubernetes.Interface, ds *appsv1.DaemonSet, node, ip string, port int) {
	t.Helper()
	tmpl := ds.Spec.Template.DeepCopy()
	p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	p.Name, p.Namespace = ds.Name+"-"+strings.ReplaceAll(node, ".", "-"), ds.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	p.Spec.NodeName, p.Spec.HostNetwork = node, true
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(port)}}
	if err := kubeletsim.EnsureNamespace(ctx, c, p.Namespace); err != nil {
		t.Fatal(err)
	}
	created, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	now := metav1.Now()
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: ip, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestStuckPodsStory: a node whose pods wait because the subnet is out of addresses shows the
// cause ipamd measured (NK744, through the real pod proxy) on the timeline, with the pods and
// the fix. Then, for a user who may not list Events, and with EC2 refusing DescribeInstances,
// both reads are named gaps (verb and resource), the rest of the story is told and Tell does
// not fail (explain exits 0).
func TestStuckPodsStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "ip-10-78-0-9.us-west-2.compute.internal"
	s := startStuckNode(ctx, t, name)
	opts := Options{Target: name, Now: func() time.Time { return s.base }, Doctor: doctor.Options{AWSNodeName: s.ds.Name}}

	st, err := Tell(ctx, depsFor(t, env.AdminConfig()), opts)
	if err != nil {
		t.Fatal(err)
	}
	var cause *Line
	for i, l := range st.Timeline {
		if l.Source == SourceIPAMD && strings.HasPrefix(l.What, doctor.RuleStuckSubnet.Code+":") {
			cause = &st.Timeline[i]
		}
	}
	if cause == nil {
		t.Errorf("no measured cause %s on the timeline", doctor.RuleStuckSubnet.Code)
	}
	found := false
	for _, f := range st.Findings {
		if f.Code == doctor.RuleStuckSubnet.Code && f.Resource == "node/"+name {
			found = true
			ev := strings.Join(f.Evidence, "\n")
			for _, p := range s.pods {
				if !strings.Contains(ev, p) {
					t.Errorf("%s's evidence lacks the pod %s: %s", f.Code, p, ev)
				}
			}
		}
	}
	if !found {
		t.Errorf("no %s finding on node/%s: %+v", doctor.RuleStuckSubnet.Code, name, st.Findings)
	}
	if !contains(st.Fixes, doctor.RuleStuckSubnet.Remediation) {
		t.Errorf("fixes lack %s's: %q", doctor.RuleStuckSubnet.Code, st.Fixes)
	}
	for _, p := range s.pods {
		if !hasLine(st, SourcePod, "pod "+p+" scheduled, stuck in ContainerCreating") || !hasLine(st, SourceEvent, "FailedCreatePodSandBox on pod "+p) {
			t.Errorf("the timeline lacks pod %s or its sandbox failure", p)
		}
	}
	if len(st.Gaps) != 0 {
		t.Errorf("gaps as admin: %+v", st.Gaps)
	}
	// The text, with the times said relative to the story's time (the Node's creation is the
	// control plane's clock), is testdata/stuck.golden, the worked example of docs/explain.md.
	var text bytes.Buffer
	if err := WriteText(&text, st); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/stuck.golden", relativeTimes(withoutLifecycle(text.Bytes()), s.base))
	if t.Failed() {
		logStory(t, st)
	}

	t.Run("forbidden Event list and EC2 read are gaps", func(t *testing.T) {
		const user = "explain-no-events"
		env.GrantClusterRole(t, user,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/proxy", "nodes/proxy"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
		)
		cloud := awsfake.New()
		cloud.Instances = []ec2types.Instance{{InstanceId: strp("i-0fedcba9876543210"), State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}}}
		cloud.Deny["ec2:DescribeInstances"] = true
		o := opts
		o.AWS = &AWSOptions{EC2: cloud, Cluster: "prod", Region: "us-west-2"}
		st, err := Tell(ctx, depsFor(t, env.UserConfig(user)), o)
		if err != nil {
			t.Fatalf("a forbidden read failed the story: %v", err)
		}
		want := map[string]bool{"Event list events (involvedObject.name=" + name + ")": false, "EC2 ec2:DescribeInstances instance i-0fedcba9876543210": false}
		for _, g := range st.Gaps {
			k := g.Source + " " + g.Verb + " " + g.Resource
			if _, ok := want[k]; ok {
				want[k] = true
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("no gap %q in %+v", k, st.Gaps)
			}
		}
		gapLines := 0
		for _, l := range st.Timeline {
			if l.Gap && strings.HasPrefix(l.What, "not read: ") {
				gapLines++
			}
		}
		var doc bytes.Buffer
		if err := WriteJSON(&doc, st); err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, Kind, doc.Bytes())
		if gapLines < 2 {
			t.Errorf("%d gap lines on the timeline, want at least 2", gapLines)
		}
		// The rest goes on: the Node, the stuck pods and their measured cause.
		if !hasLine(st, SourceNode, "Node "+name+" created") || !hasLine(st, SourcePod, "pod "+s.pods[0]) {
			t.Errorf("the story stopped at the gap")
		}
		if t.Failed() {
			logStory(t, st)
		}
	})
}

var reTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// relativeTimes writes each time of text as its distance to base, as the CLI prints durations
// ("base-12m"), and those more
// than half an hour before it (the Node's creation, on the control plane's clock) as
// "created"; kubectl's columns are laid out again by the same widths since every time keeps
// its width padded.
func relativeTimes(text []byte, base time.Time) []byte {
	return reTime.ReplaceAllFunc(text, func(b []byte) []byte {
		at, err := time.Parse(time.RFC3339, string(b))
		if err != nil {
			return b
		}
		d := base.Sub(at)
		var s string
		switch {
		case d > 30*time.Minute:
			s = "created"
		case d == 0:
			s = "base"
		default:
			s = "base-" + elapsed(d)
		}
		return []byte(fmt.Sprintf("%-20s", s))
	})
}

// reLifecycle are the Node's taints and conditions kube-controller-manager's node lifecycle
// controller writes on its own clock (not-ready, then unreachable): left out of the golden text.
var reLifecycle = regexp.MustCompile(`(?m)^\S+\s+Node\s+(taint|condition) .*\n`)

func withoutLifecycle(text []byte) []byte { return reLifecycle.ReplaceAll(text, nil) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasLine(s *Story, source, prefix string) bool {
	for _, l := range s.Timeline {
		if l.Source == source && strings.Contains(l.What, prefix) {
			return true
		}
	}
	return false
}

func logStory(t *testing.T, s *Story) {
	t.Helper()
	var b strings.Builder
	_ = WriteText(&b, s)
	t.Log(b.String())
}
