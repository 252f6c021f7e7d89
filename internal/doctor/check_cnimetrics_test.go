package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// TestCNIMetricsChecks runs the per-node ipamd check and the measured cause of stuck pods over
// hand-built facts: one m5.large node (maxPods 110, ipamd's maximum 27) per case.
func TestCNIMetricsChecks(t *testing.T) {
	figures := func(f ipamdFigures) *IPAMDMetrics {
		m, err := ParseIPAMDMetrics(context.Background(), ipamdMetricsBody(t, f))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ready := func(f ipamdFigures) *CNINode {
		return &CNINode{Pod: "kube-system/aws-node-x", Ready: true, Metrics: figures(f)}
	}
	full := ipamdFigures{total: 27, assigned: 27, maxIPs: 27, enis: 3, maxENIs: 3, noAddress: 9}
	errs := func(code string, n int) map[[2]string]int {
		return map[[2]string]int{{"AssignPrivateIpAddresses", code}: n}
	}
	grown := func(codes map[[2]string]int) ipamdFigures {
		f := healthyIPAMD
		f.ec2Errors = codes
		return f
	}
	tests := []struct {
		name    string
		cni     *CNINode // nil: no aws-node pod on the node
		stuck   bool
		labels  map[string]string
		noCNI   bool
		want    []string
		message string // a part of the NK74x message
	}{
		{name: "healthy, nothing stuck", cni: ready(healthyIPAMD), want: nil},
		{name: "healthy figures, pods stuck", cni: ready(healthyIPAMD), stuck: true, want: []string{"NK747:warning"}, message: "13 warm addresses"},
		{name: "pool full at maxPods", cni: ready(full), stuck: true, want: []string{"NK743:error", "NK748:info"}, message: "all 27 addresses"},
		{name: "subnet exhausted", cni: ready(grown(errs("InsufficientFreeAddressesInSubnet", 3))), stuck: true, want: []string{"NK742:info", "NK744:error"}, message: "3 times"},
		{name: "throttled", cni: ready(grown(errs("RequestLimitExceeded", 1))), stuck: true, want: []string{"NK742:info", "NK745:error"}, message: "throttled ipamd's calls once"},
		{name: "unauthorized, nothing stuck", cni: ready(grown(errs("UnauthorizedOperation", 2))), want: []string{"NK742:warning"}},
		{name: "unauthorized, pods stuck: no cause of the list", cni: ready(grown(errs("UnauthorizedOperation", 2))), stuck: true, want: []string{"NK742:warning", "NK747:warning"}, message: "UnauthorizedOperation 2"},
		{name: "aws-node not ready", cni: &CNINode{Pod: "kube-system/aws-node-x"}, stuck: true, want: []string{"NK746:error"}, message: "not ready"},
		{name: "aws-node missing", stuck: true, want: []string{"NK746:error"}, message: "no aws-node pod"},
		{name: "aws-node missing, nothing stuck", want: nil},
		{name: "metrics unreadable", cni: &CNINode{Pod: "kube-system/aws-node-x", Ready: true, Err: "HTTP 503: unavailable"}, stuck: true, want: []string{"NK741:skipped", "NK747:warning"}, message: "HTTP 503"},
		{name: "ipamd starting", cni: ready(ipamdFigures{starting: true}), stuck: true, want: []string{"NK747:warning"}, message: "not published"},
		{name: "fargate node", stuck: true, labels: map[string]string{"eks.amazonaws.com/compute-type": "fargate"}, want: nil},
		{name: "no aws-node DaemonSet", stuck: true, noCNI: true, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := unitFacts(unitNode("a", "m5.large", 110, tc.labels))
			if tc.noCNI {
				f.AWSNode = AWSNodeFacts{Resource: "daemonset/kube-system/aws-node"}
			}
			f.CNI = CNIFacts{Nodes: map[string]*CNINode{}}
			if tc.cni != nil {
				f.CNI.Nodes["a"] = tc.cni
			}
			f.Pods = PodFacts{Stuck: map[string]*StuckPod{}}
			if tc.stuck {
				f.Pods.Stuck["team/api-1"] = &StuckPod{Namespace: "team", Name: "api-1", Node: "a", Since: unitNow.Add(-10 * time.Minute), Cause: CauseIPAMNoAddress}
			}
			var fs []findings.Finding
			for _, c := range []Check{cniMetricsCheck{}, stuckCauseCheck{}} {
				fs = append(fs, c.Run(f).Findings...)
			}
			if got := findingstest.Codes(fs); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.message == "" {
				return
			}
			for _, fd := range fs {
				if strings.Contains(fd.Message+strings.Join(fd.Evidence, "\n"), tc.message) {
					return
				}
			}
			t.Fatalf("no finding says %q: %+v", tc.message, fs)
		})
	}
}

// TestAddAWSNodePod: during a rolling update a node has two aws-node pods; the Ready one is read,
// and its metrics port is the aws-node container's port named "metrics" (61678 when none is).
func TestAddAWSNodePod(t *testing.T) {
	pod := func(name string, ready bool, port int32) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
			Spec:       corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "aws-node"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
		}
		if ready {
			p.Status.Conditions[0].Status = corev1.ConditionTrue
		}
		if port != 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: port}}
		}
		return p
	}
	tests := []struct {
		name      string
		pods      []*corev1.Pod
		wantPod   string
		wantReady bool
		wantPort  int
	}{
		{"one, stock port", []*corev1.Pod{pod("aws-node-a", true, 0)}, "kube-system/aws-node-a", true, DefaultIPAMDMetricsPort},
		{"named port", []*corev1.Pod{pod("aws-node-a", true, 9101)}, "kube-system/aws-node-a", true, 9101},
		{"ready after not ready", []*corev1.Pod{pod("aws-node-a", false, 0), pod("aws-node-b", true, 0)}, "kube-system/aws-node-b", true, DefaultIPAMDMetricsPort},
		{"ready before not ready", []*corev1.Pod{pod("aws-node-b", true, 0), pod("aws-node-a", false, 0)}, "kube-system/aws-node-b", true, DefaultIPAMDMetricsPort},
		{"neither ready: the later name", []*corev1.Pod{pod("aws-node-b", false, 0), pod("aws-node-a", false, 0)}, "kube-system/aws-node-b", false, DefaultIPAMDMetricsPort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatherer{f: &Facts{CNI: CNIFacts{Nodes: map[string]*CNINode{}}}}
			for _, p := range tc.pods {
				g.addAWSNodePod(p)
			}
			c := g.f.CNI.Nodes["a"]
			if c == nil || c.Pod != tc.wantPod || c.Ready != tc.wantReady || c.port != tc.wantPort {
				t.Fatalf("got %+v, want %s ready=%v port %d", c, tc.wantPod, tc.wantReady, tc.wantPort)
			}
		})
	}
}

// TestStuckGroupsCarryMeasuredCause: the stuck-pod groups of the pod-networking section (per node
// NK701-NK706, per namespace NK707) name the cause the cni-metrics section measured on their nodes,
// the same as the node's NK743-NK747 finding, and nothing when ipamd's figures were not read.
func TestStuckGroupsCarryMeasuredCause(t *testing.T) {
	figures := func(f ipamdFigures) *CNINode {
		m, err := ParseIPAMDMetrics(context.Background(), ipamdMetricsBody(t, f))
		if err != nil {
			t.Fatal(err)
		}
		return &CNINode{Pod: "kube-system/aws-node-x", Ready: true, Metrics: m}
	}
	subnet := healthyIPAMD
	subnet.ec2Errors = map[[2]string]int{{"CreateNetworkInterface", "InsufficientFreeAddressesInSubnet"}: 2}
	cni := map[string]*CNINode{
		"full":   figures(ipamdFigures{total: 27, assigned: 27, maxIPs: 27, enis: 3, maxENIs: 3}),
		"full2":  figures(ipamdFigures{total: 27, assigned: 27, maxIPs: 27, enis: 3, maxENIs: 3}),
		"subnet": figures(subnet),
		"gone":   nil,
	}
	nodes := []corev1.Node{
		unitNode("full", "m5.large", 110, nil), unitNode("full2", "m5.large", 110, nil), unitNode("subnet", "m5.large", 110, nil),
		unitNode("gone", "m5.large", 110, nil), unitNode("fargate", "m5.large", 110, map[string]string{"eks.amazonaws.com/compute-type": "fargate"}),
	}
	const summary = "measured causes: 2 nodes pool full at maxPods (NK743), 1 node subnet out of free addresses (NK744), 1 node ipamd unreachable without a ready aws-node pod (NK746)"
	measured := map[string]string{ // the per-node group's evidence line, by resource
		"NK701 node/full":      "measured on the node: pool full at maxPods (NK743)",
		"NK701 node/full2":     "measured on the node: pool full at maxPods (NK743)",
		"NK702 node/subnet":    "measured on the node: subnet out of free addresses (NK744)",
		"NK706 node/gone":      "measured on the node: ipamd unreachable without a ready aws-node pod (NK746)",
		"NK706 node/fargate":   "",
		"NK707 namespace/team": summary,
	}
	tests := []struct {
		name   string
		change func(*Facts)
		read   bool // ipamd's figures were read: the groups carry the measured cause
	}{
		{name: "figures read", change: func(*Facts) {}, read: true},
		{name: "--skip cni metrics", change: func(f *Facts) { f.Settings.SkipCNIMetrics = true }},
		{name: "pods/proxy refused", change: func(f *Facts) { f.miss(FactCNIMetrics, "pods/proxy", "needs get on pods/proxy in kube-system") }},
		{name: "no aws-node DaemonSet", change: func(f *Facts) { f.AWSNode = AWSNodeFacts{Resource: "daemonset/kube-system/aws-node"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := unitFacts(nodes...)
			f.CNI = CNIFacts{Nodes: map[string]*CNINode{}}
			for n, c := range cni {
				if c != nil {
					f.CNI.Nodes[n] = c
				}
			}
			f.Pods = PodFacts{Stuck: map[string]*StuckPod{}}
			for i, n := range []string{"full", "full2", "subnet", "gone", "fargate"} {
				cause := CauseIPAMNoAddress
				switch n {
				case "subnet":
					cause = CauseSubnetExhausted
				case "gone", "fargate":
					cause = CauseNoEvent
				}
				name := fmt.Sprintf("api-%d", i)
				f.Pods.Stuck["team/"+name] = &StuckPod{Namespace: "team", Name: name, Node: n, Since: unitNow.Add(-10 * time.Minute), Cause: cause}
			}
			tc.change(f)
			got := map[string]findings.Finding{}
			for _, fd := range (stuckPodsCheck{}).Run(f).Findings {
				got[fd.Code+" "+fd.Resource] = fd
			}
			for key, line := range measured {
				fd, ok := got[key]
				if !ok {
					t.Fatalf("no %s finding: %v", key, got)
				}
				var lines []string
				for _, e := range fd.Evidence {
					if strings.HasPrefix(e, "measured ") {
						lines = append(lines, e)
					}
				}
				want := []string{line}
				if !tc.read || line == "" {
					want = nil
				}
				if !slices.Equal(lines, want) {
					t.Errorf("%s: measured lines %q, want %q", key, lines, want)
				}
			}
			// Both sections read the same cause: each NK743-NK747 finding's code is the one its
			// node's stuck-pod group names.
			if !tc.read {
				return
			}
			for _, fd := range (stuckCauseCheck{}).Run(f).Findings {
				found := false
				for key, g := range got {
					if g.Resource == fd.Resource && strings.HasPrefix(key, "NK70") && slices.Contains(g.Evidence, "measured on the node: "+stuckCauseNames[fd.Code]+" ("+fd.Code+")") {
						found = true
					}
				}
				if !found {
					t.Errorf("%s %s: no stuck-pod group names it", fd.Code, fd.Resource)
				}
			}
		})
	}
}
