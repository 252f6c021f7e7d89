package planreplay

import (
	"fmt"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/plan"
)

// The simulated ipamd, growing its pool pod after pod, ends where plan.Hold's closed form says,
// for every pod count on each instance type and warm-pool setting: the same addresses (or
// prefixes) on the same ENIs, taken from the same subnets. Its EC2 calls are at least the
// plan's (which counts one batch per ENI: pods arriving one by one make more).
func TestIPAMDReachesTheHolding(t *testing.T) {
	settings := []map[string]string{
		{},
		{"WARM_ENI_TARGET": "0"},
		{"WARM_ENI_TARGET": "2"},
		{"WARM_IP_TARGET": "1"},
		{"WARM_IP_TARGET": "5"},
		{"MINIMUM_IP_TARGET": "10"},
		{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "20"},
		{"MAX_ENI": "2"},
		{"ENABLE_POD_ENI": "true"},
		{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
		{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "WARM_IP_TARGET": "3"},
		{"ENABLE_PREFIX_DELEGATION": "true"},
		{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "0"},
		{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "2"},
		{"ENABLE_PREFIX_DELEGATION": "true", "WARM_IP_TARGET": "5"},
		{"ENABLE_PREFIX_DELEGATION": "true", "MINIMUM_IP_TARGET": "40", "WARM_IP_TARGET": "4"},
		{"ENABLE_PREFIX_DELEGATION": "true", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"},
	}
	for _, typ := range []string{"m5.large", "t3.medium", "c5.4xlarge", "m4.large"} {
		it, err := eni.Lookup(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, env := range settings {
			s := eni.ParseSettings(env)
			capacity, err := eni.Calculate(it, eni.Options{CustomNetworking: s.CustomNetworking, PrefixDelegation: s.PrefixDelegation,
				MaxENI: s.EffectiveMaxENI(), ReservedENIs: plan.ReservedENIs(it, s, 0), ShowMaxAllowed: true, BareMetalPrefixDelegation: true})
			if err != nil {
				t.Fatal(err)
			}
			for pods := eni.HostNetworkPods; pods <= min(capacity.MaxAllowed, 120); pods++ {
				name := fmt.Sprintf("%s %v %d pods", typ, env, pods)
				want, err := plan.Hold(it, s, 0, pods)
				if err != nil {
					t.Fatal(err)
				}
				vpc := NewVPC(map[string]int{"node": 1 << 20, "pods": 1 << 20})
				podSubnet := ""
				if s.CustomNetworking {
					podSubnet = "pods"
				}
				vpc.take("node", 1) // the node's own address
				d, err := newIPAMD(it, s, 0, "node", podSubnet, vpc)
				if err != nil {
					t.Fatal(err)
				}
				d.reconcile()
				for k := 0; k < pods-eni.HostNetworkPods; k++ {
					d.addPod()
				}
				prefixes := 0
				if d.pd {
					for _, p := range d.slots {
						prefixes += p
					}
				}
				got := plan.Holding{PodAddresses: d.used + d.waiting, ENIs: max(len(d.slots), 1-boolInt(s.CustomNetworking)), Addresses: d.total(), Prefixes: prefixes,
					NodeSubnet: 1<<20 - vpc.Free["node"], PodSubnet: 1<<20 - vpc.Free["pods"]}
				wantCmp := want
				wantCmp.CreatedENIs, wantCmp.EC2Calls, wantCmp.Why = 0, 0, ""
				if got != wantCmp {
					t.Errorf("%s: ipamd reached %+v\n                 plan says %+v", name, got, wantCmp)
					continue
				}
				if d.waiting != 0 {
					t.Errorf("%s: %d pods wait within the address capacity", name, d.waiting)
				}
				if d.calls < want.EC2Calls {
					t.Errorf("%s: ipamd made %d calls, fewer than the plan's %d", name, d.calls, want.EC2Calls)
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
