package doctor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// Sandbox failure messages as the kubelet records them. The prefix is the kubelet's
// ("Failed to create pod sandbox: %v", pkg/kubelet/kuberuntime/kuberuntime_manager.go), then
// containerd's CRI error ("failed to setup network for sandbox %q") and libcni's
// ("plugin type=... failed (add): "). The VPC CNI plugin's own errors are the fixed strings of
// cmd/routed-eni-cni-plugin/cni.go in aws/amazon-vpc-cni-k8s: "add cmd: failed to assign an IP
// address to container" when ipamd has no address, and "add cmd: Error received from AddNetwork
// gRPC call: " wrapping gRPC's dial error when ipamd (127.0.0.1:50051) does not listen. The EC2
// error codes InsufficientFreeAddressesInSubnet and RequestLimitExceeded are what ipamd logs
// from the AWS SDK (pkg/awsutils/awsutils.go "Failed to allocate a private IP/Prefix addresses
// on ENI %v: %v", pkg/ipamd/ipamd.go INSUFFICIENT_FREE_IP_SUBNET); they reach a sandbox event
// only when the plugin passes ipamd's error on, which is what those two cases model.
const (
	sandboxPrefix    = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "%s": plugin type="aws-cni" name="aws-cni" failed (add): `
	msgNoAddress     = "add cmd: failed to assign an IP address to container"
	msgIPAMDRefused  = `add cmd: Error received from AddNetwork gRPC call: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:50051: connect: connection refused"`
	msgSubnet        = "add cmd: failed to assign an IP address to container: operation error EC2: AssignPrivateIpAddresses, https response error StatusCode: 400, RequestID: 6a1f0e4e-2b7c-4c1e-9d1e-0c9f3c1d2e3f, api error InsufficientFreeAddressesInSubnet: The specified subnet does not have enough free addresses to satisfy the request."
	msgThrottled     = "add cmd: failed to assign an IP address to container: operation error EC2: CreateNetworkInterface, https response error StatusCode: 503, RequestID: 0b5c7d9e-1f2a-4b3c-8d4e-5f6a7b8c9d0e, api error RequestLimitExceeded: Request limit exceeded."
	msgOtherSandbox  = `Failed to create pod sandbox: rpc error: code = DeadlineExceeded desc = context deadline exceeded`
	sandboxIDExample = "14bffa7734d01abd808dead23744386135518961ab240ba48b88a9e269398126"
)

func sandboxMessage(tail string) string { return fmt.Sprintf(sandboxPrefix, sandboxIDExample) + tail }

func TestClassifySandboxMessage(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want SandboxCause
	}{
		{sandboxMessage(msgNoAddress), CauseIPAMNoAddress},
		{sandboxMessage(msgIPAMDRefused), CauseIPAMDUnreachable},
		{sandboxMessage(msgSubnet), CauseSubnetExhausted},
		{sandboxMessage(msgThrottled), CauseEC2Throttled},
		{msgOtherSandbox, CauseOther},
		{"", CauseOther},
		// The dial error alone without the ipamd address is not ipamd.
		{"dial tcp 10.0.0.1:443: connect: connection refused", CauseOther},
	} {
		if got := ClassifySandboxMessage(tc.msg); got != tc.want {
			t.Errorf("ClassifySandboxMessage(%q) = %s, want %s", tc.msg, got, tc.want)
		}
	}
}

func testPod(ns, name, node string, phase corev1.PodPhase, ip string, waiting string, scheduled time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(scheduled)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(scheduled)}}},
	}
	if waiting != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}}}
	}
	return p
}

// TestPodNetState covers the pure grouping: threshold, causes from the newest event, counts per
// node and namespace, and the node-at-capacity finding with its numbers and fix.
func TestPodNetState(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := newPodNetState(now, 2*time.Minute)
	node := "ip-10-0-0-1.ec2.internal"
	for i := 0; i < 6; i++ {
		st.addPod(testPod("app", fmt.Sprintf("run-%d", i), node, corev1.PodRunning, fmt.Sprintf("10.1.0.%d", i), "", now.Add(-time.Hour)))
	}
	host := testPod("kube-system", "aws-node-x", node, corev1.PodRunning, "10.0.0.1", "", now.Add(-time.Hour))
	host.Spec.HostNetwork = true
	st.addPod(host)
	st.addPod(testPod("app", "stuck-a", node, corev1.PodPending, "", "ContainerCreating", now.Add(-10*time.Minute)))
	st.addPod(testPod("web", "stuck-b", node, corev1.PodPending, "", "ContainerCreating", now.Add(-5*time.Minute)))
	st.addPod(testPod("web", "young", node, corev1.PodPending, "", "ContainerCreating", now.Add(-30*time.Second)))
	st.addPod(testPod("web", "pulling", node, corev1.PodPending, "", "ErrImagePull", now.Add(-30*time.Minute)))
	st.addPod(testPod("web", "unscheduled", "", corev1.PodPending, "", "", now.Add(-30*time.Minute)))
	if len(st.stuck) != 2 || st.vpcPods[node] != 6 {
		t.Fatalf("stuck %d (want 2), vpc pods %d (want 6)", len(st.stuck), st.vpcPods[node])
	}
	ev := func(ns, pod, msg string, count int32, at time.Time) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}, Reason: reasonSandboxFailed,
			Message: msg, Count: count, LastTimestamp: metav1.NewTime(at)}
	}
	// An older ipamd failure, then the newest says no address: the newest wins, counts add up.
	st.addEvent(ev("app", "stuck-a", sandboxMessage(msgIPAMDRefused), 3, now.Add(-9*time.Minute)))
	st.addEvent(ev("app", "stuck-a", sandboxMessage(msgNoAddress), 4, now.Add(-time.Minute)))
	st.addEvent(ev("web", "young", sandboxMessage(msgNoAddress), 1, now))     // not stuck: dropped
	st.addEvent(ev("web", "other-pod", sandboxMessage(msgNoAddress), 1, now)) // unknown pod: dropped
	if a := st.stuck["app/stuck-a"]; a.Cause != CauseIPAMNoAddress || a.Events != 7 {
		t.Errorf("stuck-a: %+v", a)
	}

	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{corev1.LabelInstanceTypeStable: "t3.small", "alpha.eksctl.io/nodegroup-name": "ng"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("11")}, NodeInfo: corev1.NodeSystemInfo{OSImage: "Amazon Linux 2"}}}
	mode := rules.CNIMode{}
	mode.Settings.CustomNetworking = true
	cr := rules.CheckPodCapacity(rules.NodeCapacity{Resource: "node/" + node, InstanceType: "t3.small", CapacityPods: 11}, mode)
	fs := stuckFindings(now, PodFacts{VPCPods: st.vpcPods, Stuck: st.stuck}, map[string]NodeAddressInfo{node: {Node: n, Capacity: cr, CustomNetworking: true, ModeText: modeText(mode)}}, nil)
	got := map[string]findings.Finding{}
	for _, f := range fs {
		got[f.Code+" "+f.Resource] = f
	}
	want := []string{"NK701 node/" + node, "NK706 node/" + node, "NK707 namespace/app", "NK707 namespace/web", "NK708 node/" + node}
	if len(got) != len(want) {
		t.Errorf("findings: %v", fs)
	}
	for _, w := range want {
		if _, ok := got[w]; !ok {
			t.Errorf("missing %s in %v", w, fs)
		}
	}
	f708 := got["NK708 node/"+node]
	for _, s := range []string{"6 pods hold VPC addresses", "has 6 for pods", "admits 11 pods", "2 pods stuck"} {
		if !strings.Contains(f708.Message, s) {
			t.Errorf("NK708 message %q lacks %q", f708.Message, s)
		}
	}
	if ev := strings.Join(f708.Evidence, "\n"); !strings.Contains(ev, "--max-pods=8") || !strings.Contains(ev, "Amazon Linux 2, self-managed node group") {
		t.Errorf("NK708 fix: %s", ev)
	}
	if f := got["NK701 node/"+node]; !strings.Contains(f.Message, "1 pod stuck") || !strings.Contains(f.Message, "7 sandbox failures") {
		t.Errorf("NK701: %s", f.Message)
	}
}

func TestSelectedENIConfig(t *testing.T) {
	node := func(labels, annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, Annotations: annotations}}
	}
	zone := map[string]string{corev1.LabelTopologyZone: "us-west-2a"}
	for _, tc := range []struct {
		name                    string
		n                       *corev1.Node
		labelDef, annotationDef string
		want                    string
	}{
		{"explicit label wins", node(map[string]string{LabelENIConfig: "pods-a", corev1.LabelTopologyZone: "us-west-2a"}, nil), corev1.LabelTopologyZone, "", "pods-a"},
		{"annotation before zone label", node(zone, map[string]string{"example.com/eni": "from-annotation"}), corev1.LabelTopologyZone, "example.com/eni", "from-annotation"},
		{"zone label", node(zone, nil), corev1.LabelTopologyZone, "", "us-west-2a"},
		{"zone label not configured", node(zone, nil), "", "", "default"},
		{"label def set but missing on node", node(nil, nil), corev1.LabelTopologyZone, "", "default"},
	} {
		if got, _ := selectedENIConfig(tc.n, tc.labelDef, tc.annotationDef); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHostnameHint(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"ip-10-0-0-1.ec2.internal", false},
		{"ip-10-0-0-1.us-west-2.compute.internal", false},
		{"i-0123456789abcdef0.us-west-2.compute.internal", false},
		{"myhost.corp.example", true},
		{"worker-1", true},
	} {
		got := hostnameHint(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.name}})
		if (got != "") != tc.want || (tc.want && !strings.Contains(got, "NK631")) {
			t.Errorf("%s: hint %q", tc.name, got)
		}
	}
}

// TestKarpenterNodeMode: Karpenter's reservedENIs replaces --reserved-enis for Karpenter's nodes,
// less the ENI custom networking already takes; other nodes and an explicit flag are untouched.
func TestKarpenterNodeMode(t *testing.T) {
	karp := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{rules.LabelKarpenterNodePool: "default"}}}
	mng := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{rules.LabelEKSNodegroup: "ng"}}}
	cn := rules.CNIMode{}
	cn.Settings.CustomNetworking = true
	for _, tc := range []struct {
		name     string
		flag     int
		karpENIs int
		found    bool
		node     *corev1.Node
		mode     rules.CNIMode
		want     int
	}{
		{"karpenter 2, secondary IPs", 0, 2, true, karp, rules.CNIMode{}, 2},
		{"karpenter 2, custom networking takes one", 0, 2, true, karp, cn, 1},
		{"karpenter 1 with custom networking: nothing extra", 0, 1, true, karp, cn, 0},
		{"not a Karpenter node", 0, 2, true, mng, rules.CNIMode{}, 0},
		{"flag wins", 3, 2, true, karp, rules.CNIMode{ReservedENIs: 3}, 3},
		{"Karpenter not found", 0, 0, false, karp, rules.CNIMode{}, 0},
	} {
		k := KarpenterFacts{Found: tc.found, ReservedENIs: tc.karpENIs}
		if got := nodeMode(k, tc.flag, tc.node, tc.mode).ReservedENIs; got != tc.want {
			t.Errorf("%s: reserved ENIs %d, want %d", tc.name, got, tc.want)
		}
	}
}
