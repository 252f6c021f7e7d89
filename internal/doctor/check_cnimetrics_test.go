package doctor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/findings/findingstest"
)

// TestCNIMetricsChecks runs the per-node ipamd check and the measured cause of stuck pods over
// hand-built facts: one m5.large node (maxPods 110, ipamd's maximum 27) per case.
func TestCNIMetricsChecks(t *testing.T) {
	figures := func(f ipamdFigures) *IPAMDMetrics {
		m, err := ParseIPAMDMetrics(ipamdMetricsBody(t, f))
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
