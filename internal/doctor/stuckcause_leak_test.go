package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// TestStuckCauseLeakedAddresses: ipamd has assigned every address the instance can hold
// (awscni_assigned_ip_addresses = awscni_ip_max), the kubelet admits no more pods than that
// (maxPods within the addresses), and fewer pods on the node hold addresses than ipamd says it
// assigned: the rest belong to sandboxes torn down without a CNI DEL, which ipamd keeps until it
// restarts (amazon-vpc-cni-k8s v1.23.1, pkg/ipamd/datastore/data_store.go: addresses are freed on
// the CNI DEL, then cool down IP_COOLDOWN_PERIOD; ReadBackingStore drops allocations whose pod veth
// is gone only at start). doctor named it "unknown" ("0 warm addresses and no EC2 error explains
// it"); it names the leak with both figures and what ipamd does about it. When the pods that hold
// addresses account for all of them, the cause stays unknown.
func TestStuckCauseLeakedAddresses(t *testing.T) {
	full := ipamdFigures{total: 27, assigned: 27, maxIPs: 27, enis: 3, maxENIs: 3, noAddress: 40}
	for _, tc := range []struct {
		name    string
		holding int
		want    string
		says    []string
	}{
		{"12 pods hold addresses of 27 assigned", 12, "NK749", []string{
			"ipamd's pool is full: 27 addresses assigned, all the instance can hold, against 12 pods on the node that hold addresses; 15 are held for pods that are gone",
		}},
		{"every assigned address has its pod", 27, "NK747", []string{"ipamd has 0 warm addresses and no EC2 error explains it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// m5.large: 3 ENIs of 10 addresses, 27 for pods; EKS's max pods 29 (27 + 2 host-network).
			f := unitFacts(unitNode("leaky", "m5.large", 29, nil))
			m, err := ParseIPAMDMetrics(t.Context(), ipamdMetricsBody(t, full))
			if err != nil {
				t.Fatal(err)
			}
			f.CNI = CNIFacts{Nodes: map[string]*CNINode{"leaky": {Pod: "kube-system/aws-node-leaky", Ready: true, Metrics: m}}}
			f.Pods = PodFacts{VPCPods: map[string]int{"leaky": tc.holding}, Stuck: map[string]*StuckPod{
				"team/api-0": {Namespace: "team", Name: "api-0", Node: "leaky", Since: unitNow.Add(-10 * time.Minute), Cause: CauseIPAMNoAddress},
			}}
			res := (stuckCauseCheck{}).Run(f)
			if len(res.Findings) != 1 {
				t.Fatalf("%d findings, want 1: %v", len(res.Findings), res.Findings)
			}
			fd := res.Findings[0]
			if fd.Code != tc.want {
				t.Fatalf("%s: %s, want %s", fd.Code, fd.Message, tc.want)
			}
			textcheck.Contains(t, "message", fd.Message, tc.says, nil)
			if tc.want == "NK749" {
				ev := strings.Join(fd.Evidence, "\n")
				textcheck.Contains(t, "evidence", ev, []string{"address pool 27 (27 assigned, 0 warm) of at most 27", "IP_COOLDOWN_PERIOD", "/var/run/aws-node/ipam.json"}, nil)
				textcheck.Contains(t, "fix", fd.Remediation, []string{"restart the node's aws-node pod", "61679/v1/enis"}, nil)
				if name := stuckCauseNames[fd.Code]; name == "" {
					t.Errorf("%s has no name for the stuck-pod groups", fd.Code)
				}
			}
		})
	}
}
