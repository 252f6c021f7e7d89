package rules

import (
	"errors"
	"fmt"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// NodeCapacity is what the capacity check needs to know about one node.
type NodeCapacity struct {
	Resource     string
	InstanceType string
	// CapacityPods is the pod capacity the kubelet reports (status.capacity.pods) or, for a
	// bundle, the configured maxPods.
	CapacityPods int
	// VCPUs (0 = unknown) and where the number came from.
	VCPUs      int
	VCPUSource string
	// Types is where the instance type is looked up: nil is the built-in table; doctor --aws
	// passes the table completed by EC2 for the types it does not know.
	Types *eni.Catalog
}

// CNIMode is the address mode the VPC CNI runs in.
type CNIMode struct {
	Settings eni.Settings
	// Version of the CNI ("" = unknown, assumed current).
	Version string
	// ReservedENIs are ENIs kept from pods besides custom networking and the trunk ENI.
	ReservedENIs int
}

// CapacityResult carries the numbers behind the findings.
type CapacityResult struct {
	Findings []findings.Finding
	// Evaluated: the instance type was known and the capacity compared.
	Evaluated bool
	// IPLimit is the number of pods the node's addresses allow under the mode.
	IPLimit int
	// WithoutCustomNetworking is the limit the node would have without custom networking; a
	// capacity above IPLimit but within this is the "custom networking without a max-pods change"
	// case.
	WithoutCustomNetworking int
}

// CheckPodCapacity compares a node's pod capacity with the addresses the VPC CNI can give it.
func CheckPodCapacity(n NodeCapacity, m CNIMode) CapacityResult {
	var r CapacityResult
	if n.InstanceType == "" {
		r.Findings = append(r.Findings, RuleInstanceUnknown.New(n.Resource, "no instance type (label node.kubernetes.io/instance-type)"))
		return r
	}
	it, err := n.Types.Lookup(n.InstanceType)
	if err != nil {
		r.Findings = append(r.Findings, RuleInstanceUnknown.New(n.Resource, "%v", err))
		return r
	}
	s := m.Settings
	reserved := m.ReservedENIs
	trunk := s.PodENI && it.TrunkingCompatible
	if trunk {
		reserved++
	}
	opts := eni.Options{
		CNIVersion:                m.Version,
		CustomNetworking:          s.CustomNetworking,
		PrefixDelegation:          s.PrefixDelegation,
		MaxENI:                    s.EffectiveMaxENI(),
		ReservedENIs:              reserved,
		ShowMaxAllowed:            true,
		BareMetalPrefixDelegation: true, // what the CNI does, not what the calculator assumes
	}
	limit, err := eni.Calculate(it, opts)
	if err != nil {
		r.Findings = append(r.Findings, RuleInstanceUnknown.New(n.Resource, "%s: %v", n.InstanceType, err))
		return r
	}
	r.Evaluated = true
	r.IPLimit = limit.MaxAllowed
	noCN := opts
	noCN.CustomNetworking = false
	if l, err := eni.Calculate(it, noCN); err == nil {
		r.WithoutCustomNetworking = l.MaxAllowed
	}
	if s.PrefixDelegation && !limit.PrefixDelegation {
		r.Findings = append(r.Findings, RulePrefixNotNitro.New(n.Resource, "%s (hypervisor %q): the CNI uses secondary IPs here, %d pod addresses", n.InstanceType, it.Hypervisor, limit.MaxAllowed))
	}

	mode := CNIModeString(s)
	if trunk {
		mode += " (trunk ENI reserved)"
	}
	if m.ReservedENIs > 0 {
		mode += ", " + findings.Noun{One: "reserved ENI", Many: "reserved ENIs"}.Count(m.ReservedENIs)
	}
	if n.CapacityPods > limit.MaxAllowed {
		f := RuleMaxPodsAboveIPs.New(n.Resource,
			"kubelet allows %d pods but %s with %s gives addresses for %d (%s x %d + %d host-network): %d pods would wait in ContainerCreating",
			n.CapacityPods, n.InstanceType, mode, limit.MaxAllowed, findings.Noun{One: "ENI", Many: "ENIs"}.Count(limit.ENIsForPods), limit.PodIPsPerENI, eni.HostNetworkPods, n.CapacityPods-limit.MaxAllowed)
		if s.CustomNetworking && n.CapacityPods <= r.WithoutCustomNetworking {
			f = f.WithEvidence(fmt.Sprintf("without custom networking the limit would be %d: max pods was not lowered for custom networking", r.WithoutCustomNetworking))
		}
		r.Findings = append(r.Findings, f)
		return r
	}

	// The recommendation applies the calculator's ceiling, which needs the vCPU count.
	recOpts := opts
	recOpts.ShowMaxAllowed = false
	recOpts.VCPUs, recOpts.VCPUSource = n.VCPUs, n.VCPUSource
	rec, err := eni.Calculate(it, recOpts)
	if err != nil && !errors.Is(err, eni.ErrVCPUsUnknown) {
		return r
	}
	if err == nil && n.CapacityPods < rec.MaxPods {
		r.Findings = append(r.Findings, RuleMaxPodsBelow.New(n.Resource,
			"kubelet allows %d pods; %s with %s supports %d (addresses for %d)", n.CapacityPods, n.InstanceType, mode, rec.MaxPods, rec.MaxAllowed))
	}
	return r
}
