package plan

import (
	"maps"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

func mustType(t *testing.T, name string) eni.InstanceType {
	t.Helper()
	it, err := eni.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// docHold is the holding of a row of the CNI's docs: instance type typ with the aws-node settings
// env, whose empty values (a column the row leaves blank) it deletes, and pods pods that need an
// address; the host-network DaemonSet pods are added to them.
func docHold(t *testing.T, typ string, env map[string]string, pods int) Holding {
	t.Helper()
	maps.DeleteFunc(env, func(_, v string) bool { return v == "" })
	h, err := Hold(mustType(t, typ), eni.ParseSettings(env), 0, pods+eni.HostNetworkPods)
	if err != nil {
		t.Fatalf("%s %v with %d pods: %v", typ, env, pods, err)
	}
	return h
}

// The holdings follow the VPC CNI's documented warm-pool behaviour (amazon-vpc-cni-k8s
// docs/eni-and-ip-target.md, docs/prefix-and-ip-target.md, and the README's descriptions of
// WARM_ENI_TARGET, WARM_IP_TARGET, MINIMUM_IP_TARGET and WARM_PREFIX_TARGET). m5.large has 3
// ENIs of 10 addresses: 9 secondary addresses, or 9 /28 prefixes, per ENI.
func TestHold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   string
		env   map[string]string
		pods  int
		want  Holding // Why is not compared
		wantE error
	}{
		// "WARM_ENI_TARGET ... the number of free ENIs (and their addresses) ipamd keeps
		// attached"; default 1. 27 pod addresses fill 3 ENIs; one more warm would be a 4th,
		// but m5.large has 3. The node subnet gives 27 secondary + 3 primary addresses.
		{name: "default warm ENI, full node", typ: "m5.large", pods: 29,
			want: Holding{PodAddresses: 27, ENIs: 3, Addresses: 27, NodeSubnet: 30, CreatedENIs: 2, EC2Calls: 2*3 + 3}},
		// 8 pod addresses fit on the primary ENI (9), which then has 1 free: less than a whole
		// ENI, so ipamd attaches a second (WARM_ENI_TARGET=1): 2 whole ENIs of addresses.
		{name: "default warm ENI, part full", typ: "m5.large", pods: 10,
			want: Holding{PodAddresses: 8, ENIs: 2, Addresses: 18, NodeSubnet: 20, CreatedENIs: 1, EC2Calls: 3 + 2}},
		// WARM_ENI_TARGET=0 (with nothing else): only the ENIs the pods fill.
		{name: "WARM_ENI_TARGET=0", typ: "m5.large", pods: 10, env: map[string]string{"WARM_ENI_TARGET": "0"},
			want: Holding{PodAddresses: 8, ENIs: 1, Addresses: 9, NodeSubnet: 10, CreatedENIs: 0, EC2Calls: 1}},
		// "WARM_IP_TARGET: the number of free IP addresses ipamd keeps"; WARM_ENI_TARGET is then
		// ignored: 8 used + 5 warm = 13 addresses on 2 ENIs.
		{name: "WARM_IP_TARGET=5", typ: "m5.large", pods: 10, env: map[string]string{"WARM_IP_TARGET": "5"},
			want: Holding{PodAddresses: 8, ENIs: 2, Addresses: 13, NodeSubnet: 15, CreatedENIs: 1, EC2Calls: 3 + 2}},
		// "MINIMUM_IP_TARGET: the floor of addresses allocated whatever the pods use": max(8+2, 20).
		{name: "MINIMUM_IP_TARGET=20 WARM_IP_TARGET=2", typ: "m5.large", pods: 10, env: map[string]string{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "20"},
			want: Holding{PodAddresses: 8, ENIs: 3, Addresses: 20, NodeSubnet: 23, CreatedENIs: 2, EC2Calls: 2*3 + 3}},
		// MINIMUM_IP_TARGET alone is enough to leave whole-ENI mode.
		{name: "MINIMUM_IP_TARGET alone", typ: "m5.large", pods: 4, env: map[string]string{"MINIMUM_IP_TARGET": "10"},
			want: Holding{PodAddresses: 2, ENIs: 2, Addresses: 10, NodeSubnet: 12, CreatedENIs: 1, EC2Calls: 3 + 2}},
		// MAX_ENI caps the ENIs ipamd uses.
		{name: "MAX_ENI=2", typ: "m5.large", pods: 29, env: map[string]string{"MAX_ENI": "2"},
			want: Holding{PodAddresses: 27, ENIs: 2, Addresses: 18, NodeSubnet: 20, CreatedENIs: 1, EC2Calls: 3 + 2}},
		// Security groups for pods on a trunking-compatible type: the trunk ENI carries no pod
		// addresses (as MAX_ENI=2 here).
		{name: "ENABLE_POD_ENI", typ: "m5.large", pods: 29, env: map[string]string{"ENABLE_POD_ENI": "true"},
			want: Holding{PodAddresses: 27, ENIs: 2, Addresses: 18, NodeSubnet: 20, CreatedENIs: 1, EC2Calls: 3 + 2}},
		// Custom networking: the primary ENI stays in the node's subnet with the node's address
		// and no pods; the 2 other ENIs are in the ENIConfig's subnet, whole (18 addresses, the
		// warm ENI would be a third), each with its own primary address.
		{name: "custom networking", typ: "m5.large", pods: 20, env: map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
			want: Holding{PodAddresses: 18, ENIs: 2, Addresses: 18, NodeSubnet: 1, PodSubnet: 20, CreatedENIs: 2, EC2Calls: 2*3 + 2}},
		// Prefix delegation: /28 prefixes on the primary ENI: 108 addresses fill 7, plus
		// WARM_PREFIX_TARGET 1 (the manifest's value, also when unset here). One
		// AssignPrivateIpAddresses with Ipv4PrefixCount, no new ENI.
		{name: "prefix delegation", typ: "m5.large", pods: 110, env: map[string]string{"ENABLE_PREFIX_DELEGATION": "true"},
			want: Holding{PodAddresses: 108, ENIs: 1, Addresses: 128, Prefixes: 8, NodeSubnet: 129, CreatedENIs: 0, EC2Calls: 1}},
		// With WARM_IP_TARGET in prefix mode, prefixes cover used + warm addresses: 113 → 8.
		{name: "prefix delegation WARM_IP_TARGET", typ: "m5.large", pods: 110, env: map[string]string{"ENABLE_PREFIX_DELEGATION": "true", "WARM_IP_TARGET": "5"},
			want: Holding{PodAddresses: 108, ENIs: 1, Addresses: 128, Prefixes: 8, NodeSubnet: 129, CreatedENIs: 0, EC2Calls: 1}},
		// WARM_PREFIX_TARGET=0 and 16 pod addresses: exactly one prefix.
		{name: "WARM_PREFIX_TARGET=0", typ: "m5.large", pods: 18, env: map[string]string{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "0"},
			want: Holding{PodAddresses: 16, ENIs: 1, Addresses: 16, Prefixes: 1, NodeSubnet: 17, CreatedENIs: 0, EC2Calls: 1}},
		// Prefix delegation with custom networking: the prefixes go on a new ENI in the
		// ENIConfig's subnet (3 calls to create it, 1 to assign).
		{name: "prefix delegation, custom networking", typ: "m5.large", pods: 50, env: map[string]string{"ENABLE_PREFIX_DELEGATION": "true", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
			want: Holding{PodAddresses: 48, ENIs: 1, Addresses: 64, Prefixes: 4, NodeSubnet: 1, PodSubnet: 65, CreatedENIs: 1, EC2Calls: 3 + 1}},
		// A Xen type gets no prefixes: secondary IP mode (m4.large: 2 ENIs of 10).
		{name: "prefix delegation on Xen", typ: "m4.large", pods: 20, env: map[string]string{"ENABLE_PREFIX_DELEGATION": "true"},
			want: Holding{PodAddresses: 18, ENIs: 2, Addresses: 18, NodeSubnet: 20, CreatedENIs: 1, EC2Calls: 3 + 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Hold(mustType(t, tc.typ), eni.ParseSettings(tc.env), 0, tc.pods)
			if err != nil {
				t.Fatal(err)
			}
			if got.Why == "" {
				t.Error("no explanation")
			}
			got.Why = ""
			if got != tc.want {
				t.Errorf("Hold = %+v\nwant   %+v", got, tc.want)
			}
		})
	}
}

// TestHoldMatchesTheCNIDocs: every example of the VPC CNI's own table in amazon-vpc-cni-k8s
// docs/eni-and-ip-target.md ("Some example cases": instance type, WARM_ENI_TARGET,
// WARM_IP_TARGET, MINIMUM_IP_TARGET, pods, attached ENIs, attached secondary IPs). The table's
// pods are pods that need an address, so the host-network DaemonSet pods are added to them here.
// t3.small has 3 ENIs of 4 addresses (3 secondary each), p3dn.24xlarge 15 of 50 (49).
func TestHoldMatchesTheCNIDocs(t *testing.T) {
	for _, tc := range []struct {
		typ                    string
		warmENI, warmIP, minIP string
		pods, enis, addresses  int
	}{
		{"t3.small", "1", "", "", 0, 1, 3},
		{"t3.small", "1", "", "", 5, 3, 9},
		{"t3.small", "1", "", "", 9, 3, 9},
		{"t3.small", "", "1", "1", 0, 1, 1},
		{"t3.small", "", "1", "1", 5, 2, 6},
		{"t3.small", "", "1", "1", 9, 3, 9},
		{"t3.small", "", "2", "5", 0, 2, 5},
		{"t3.small", "", "2", "5", 5, 3, 7},
		{"t3.small", "", "2", "5", 9, 3, 9},
		{"p3dn.24xlarge", "1", "", "", 0, 1, 49},
		{"p3dn.24xlarge", "1", "", "", 3, 2, 98},
		{"p3dn.24xlarge", "1", "", "", 95, 3, 147},
		{"p3dn.24xlarge", "", "5", "10", 0, 1, 10},
		{"p3dn.24xlarge", "", "5", "10", 7, 1, 12},
		{"p3dn.24xlarge", "", "5", "10", 15, 1, 20},
		{"p3dn.24xlarge", "", "5", "10", 45, 2, 50},
	} {
		env := map[string]string{"WARM_ENI_TARGET": tc.warmENI, "WARM_IP_TARGET": tc.warmIP, "MINIMUM_IP_TARGET": tc.minIP}
		h := docHold(t, tc.typ, env, tc.pods)
		if h.ENIs != tc.enis || h.Addresses != tc.addresses {
			t.Errorf("%s %v with %d pods: %d ENIs, %d addresses; the CNI's docs say %d ENIs, %d secondary IPs", tc.typ, env, tc.pods, h.ENIs, h.Addresses, tc.enis, tc.addresses)
		}
	}
}

// TestHoldMatchesTheCNIPrefixDocs: the examples of amazon-vpc-cni-k8s
// docs/prefix-and-ip-target.md with prefix delegation on: the attached /28 prefixes for each
// WARM_PREFIX_TARGET, WARM_IP_TARGET and MINIMUM_IP_TARGET, and t3.small's ENIs (3 prefixes per
// ENI). Two cells of that table are not compared: its p3dn.24xlarge rows list extra ENIs that
// carry no prefix (the plan counts the ENIs that hold pod addresses), and its t3.small row for
// WARM_IP_TARGET=7 MINIMUM_IP_TARGET=20 with no pods says 1 attached prefix but 2 prefixes per
// ENI; the doc's own rule above the table ("a MINIMUM_IP_TARGET of 20 is equivalent to 32") gives
// 2, which is what is compared.
func TestHoldMatchesTheCNIPrefixDocs(t *testing.T) {
	for _, tc := range []struct {
		typ                       string
		warmPrefix, warmIP, minIP string
		pods, prefixes, enis      int // enis 0: not compared
	}{
		{"t3.small", "1", "", "", 0, 1, 1},
		{"t3.small", "1", "", "", 5, 2, 1},
		{"t3.small", "1", "", "", 16, 2, 1},
		{"t3.small", "1", "", "", 17, 3, 1},
		{"t3.small", "1", "", "", 58, 5, 2},
		{"t3.small", "", "1", "1", 0, 1, 1},
		{"t3.small", "", "1", "1", 5, 1, 1},
		{"t3.small", "", "1", "1", 17, 2, 1},
		{"t3.small", "", "1", "1", 58, 4, 2},
		{"t3.small", "", "7", "20", 0, 2, 1},
		{"t3.small", "", "7", "20", 5, 2, 1},
		{"t3.small", "", "7", "20", 17, 2, 1},
		{"t3.small", "", "7", "20", 58, 5, 2},
		{"p3dn.24xlarge", "1", "", "", 0, 1, 0},
		{"p3dn.24xlarge", "1", "", "", 3, 2, 0},
		{"p3dn.24xlarge", "1", "", "", 95, 7, 0},
		{"p3dn.24xlarge", "", "5", "10", 0, 1, 0},
		{"p3dn.24xlarge", "", "5", "10", 7, 1, 0},
		{"p3dn.24xlarge", "", "5", "10", 15, 2, 0},
		{"p3dn.24xlarge", "", "5", "10", 45, 4, 0},
	} {
		env := map[string]string{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": tc.warmPrefix, "WARM_IP_TARGET": tc.warmIP, "MINIMUM_IP_TARGET": tc.minIP}
		h := docHold(t, tc.typ, env, tc.pods)
		if h.Prefixes != tc.prefixes || h.Addresses != 16*tc.prefixes || (tc.enis > 0 && h.ENIs != tc.enis) {
			t.Errorf("%s %v with %d pods: %d prefixes (%d addresses) on %d ENIs; the CNI's docs say %d prefixes on %d ENIs",
				tc.typ, env, tc.pods, h.Prefixes, h.Addresses, h.ENIs, tc.prefixes, tc.enis)
		}
	}
}
