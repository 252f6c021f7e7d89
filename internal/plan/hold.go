package plan

import (
	"fmt"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

// Holding is what one new node holds from the VPC once its pods run, under the aws-node warm-pool
// settings: the addresses (or /28 prefixes) ipamd keeps, on how many ENIs, what that takes from
// the node's subnet and from the ENIConfig's subnet, and the EC2 calls ipamd makes to get them.
type Holding struct {
	// PodAddresses are the addresses the node's pods use (pods per node without the host-network
	// DaemonSet pods, aws-node and kube-proxy).
	PodAddresses int `json:"podAddresses"`
	// ENIs are the ENIs carrying pod addresses: with custom networking all of them are attached
	// by ipamd; otherwise the first is the node's primary ENI.
	ENIs int `json:"enis"`
	// Addresses are the pod addresses held, in use and warm (prefix addresses with prefix
	// delegation: 16 per prefix).
	Addresses int `json:"addresses"`
	// Prefixes are the /28 prefixes held (prefix delegation only).
	Prefixes int `json:"prefixes,omitempty"`
	// NodeSubnet is what the node takes from its own subnet; PodSubnet what it takes from the
	// ENIConfig's subnet (custom networking only, 0 otherwise).
	NodeSubnet int `json:"nodeSubnet"`
	PodSubnet  int `json:"podSubnet"`
	// CreatedENIs are the ENIs ipamd creates and attaches.
	CreatedENIs int `json:"createdENIs"`
	// EC2Calls are the mutating EC2 calls ipamd makes to reach the holding (see Calls).
	EC2Calls int `json:"ec2Calls"`
	// Why explains the numbers in one line.
	Why string `json:"why"`
}

// eniCalls are the mutating EC2 calls ipamd makes for each ENI it adds: CreateNetworkInterface,
// AttachNetworkInterface, and ModifyNetworkInterfaceAttribute to set DeleteOnTermination (the
// VPC CNI's pkg/awsutils, AllocENI). Each ENI is then filled with one AssignPrivateIpAddresses
// (secondary addresses, or Ipv4PrefixCount prefixes with prefix delegation).
const eniCalls = 3

// ipamd's warm-pool defaults: WARM_ENI_TARGET is 1 when unset; WARM_PREFIX_TARGET is taken as 1
// when unset, the value the VPC CNI's manifest and the EKS add-on set (the same assumption as
// doctor's NK803).
const defaultWarmPrefixTarget = 1

// Hold computes a node's holding with pods pods (host-network pods included) on instance type t.
// The ENIs available for pods come from the max-pods calculator (eni.Calculate): MAX_ENI, one
// ENI less with custom networking, reservedENIs. The warm pool follows the VPC CNI's documented
// behaviour (docs/eni-and-ip-target.md and docs/prefix-and-ip-target.md of amazon-vpc-cni-k8s):
//
//   - WARM_IP_TARGET or MINIMUM_IP_TARGET set (above 0): ipamd keeps max(pods + WARM_IP_TARGET,
//     MINIMUM_IP_TARGET) addresses, and WARM_ENI_TARGET is ignored.
//   - otherwise whole ENIs: those the pods fill plus WARM_ENI_TARGET (default 1) free ones.
//   - prefix delegation: /28 prefixes instead of addresses: those the addresses above need with
//     WARM_IP_TARGET/MINIMUM_IP_TARGET, otherwise those the pods fill plus WARM_PREFIX_TARGET.
//
// All are bounded by the ENIs the type has for pods and the addresses (or prefixes) per ENI.
func Hold(t eni.InstanceType, s eni.Settings, reservedENIs, pods int) (Holding, error) {
	calc, err := eni.Calculate(t, eni.Options{CustomNetworking: s.CustomNetworking, PrefixDelegation: s.PrefixDelegation,
		MaxENI: s.EffectiveMaxENI(), ReservedENIs: ReservedENIs(t, s, reservedENIs), ShowMaxAllowed: true, BareMetalPrefixDelegation: true})
	if err != nil {
		return Holding{}, err
	}
	h := Holding{PodAddresses: max(pods-eni.HostNetworkPods, 0)}
	limit := calc.ENIsForPods
	perENI := t.IPv4PerENI - 1 // secondary addresses, or prefixes, per ENI
	warmIP := s.WarmIPTarget.Positive() || s.MinimumIPTarget.Positive()
	want := h.PodAddresses
	var parts string
	if warmIP {
		if s.WarmIPTarget.Positive() {
			want += s.WarmIPTarget.Value
		}
		if s.MinimumIPTarget.Positive() {
			want = max(want, s.MinimumIPTarget.Value)
		}
		parts = fmt.Sprintf("max(%d pod addresses + WARM_IP_TARGET %d, MINIMUM_IP_TARGET %d) = %d",
			h.PodAddresses, max(s.WarmIPTarget.Value, 0)*boolInt(s.WarmIPTarget.Positive()), max(s.MinimumIPTarget.Value, 0)*boolInt(s.MinimumIPTarget.Positive()), want)
	}
	switch {
	case calc.PrefixDelegation:
		if warmIP {
			h.Prefixes = ceilDiv(want, eni.IPsPerPrefix)
			parts = fmt.Sprintf("%d /28 prefixes for %s addresses", h.Prefixes, parts)
		} else {
			warm := defaultWarmPrefixTarget
			if s.WarmPrefixTarget.Valid && s.WarmPrefixTarget.Value >= 0 {
				warm = s.WarmPrefixTarget.Value
			}
			h.Prefixes = ceilDiv(h.PodAddresses, eni.IPsPerPrefix) + warm
			parts = fmt.Sprintf("%d /28 prefixes: %d for %d pod addresses + WARM_PREFIX_TARGET %d", h.Prefixes, h.Prefixes-warm, h.PodAddresses, warm)
		}
		h.Prefixes = min(h.Prefixes, limit*perENI)
		h.ENIs = ceilDiv(h.Prefixes, perENI)
		h.Addresses = h.Prefixes * eni.IPsPerPrefix
	case warmIP:
		h.Addresses = min(want, limit*perENI)
		h.ENIs = ceilDiv(h.Addresses, perENI)
		parts = fmt.Sprintf("%d addresses: %s", h.Addresses, parts)
	default:
		warm := eni.DefaultWarmENITarget
		if s.WarmENITarget.Valid && s.WarmENITarget.Value >= 0 {
			warm = s.WarmENITarget.Value
		}
		h.ENIs = min(ceilDiv(h.PodAddresses, perENI)+warm, limit)
		h.Addresses = h.ENIs * perENI
		parts = fmt.Sprintf("%d whole ENIs of %d addresses: %d for %d pod addresses + WARM_ENI_TARGET %d", h.ENIs, perENI, ceilDiv(h.PodAddresses, perENI), h.PodAddresses, warm)
		if ceilDiv(h.PodAddresses, perENI)+warm > limit {
			parts = fmt.Sprintf("%d whole ENIs of %d addresses, all the type has for pods (%d pod addresses + WARM_ENI_TARGET %d would take %d)",
				h.ENIs, perENI, h.PodAddresses, warm, ceilDiv(h.PodAddresses, perENI)+warm)
		}
	}
	if !s.CustomNetworking {
		h.ENIs = max(h.ENIs, 1) // the primary ENI is there, with the node's own address
	}
	h.ENIs = min(h.ENIs, max(limit, 1))
	if s.CustomNetworking {
		h.CreatedENIs = h.ENIs
		h.NodeSubnet = 1                   // the node's own address on its primary ENI
		h.PodSubnet = h.Addresses + h.ENIs // pod addresses and the pod ENIs' primary addresses
	} else {
		h.CreatedENIs = h.ENIs - 1
		h.NodeSubnet = h.Addresses + h.ENIs // primary addresses of every ENI, the node's included
	}
	filled := h.ENIs
	if h.Addresses == 0 {
		filled = 0
	}
	h.EC2Calls = h.CreatedENIs*eniCalls + filled
	h.Why = fmt.Sprintf("%s, on %d ENIs of %s", parts, h.ENIs, t.Name)
	return h, nil
}

// ReservedENIs are the ENIs of t kept from pod addresses besides custom networking's: reserved
// (another agent's, Karpenter's reservedENIs), and with security groups for pods
// (ENABLE_POD_ENI) on a trunking-compatible type the trunk ENI, as doctor counts them. The
// trunk ENI's own address and the branch ENIs of pods with security groups are not counted.
func ReservedENIs(t eni.InstanceType, s eni.Settings, reserved int) int {
	if s.PodENI && t.TrunkingCompatible {
		reserved++
	}
	return reserved
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return 0
	}
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
