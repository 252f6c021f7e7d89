package eni

import (
	"errors"
	"fmt"
)

// The calculator's constants (max-pods-calculator.sh).
const (
	// IPsPerPrefix is the number of addresses in one delegated /28 prefix.
	IPsPerPrefix = 16
	// HostNetworkPods is the "+2" of the formula: aws-node and kube-proxy use the host network and
	// need no pod address.
	HostNetworkPods = 2
	// CeilingLowCPU and CeilingHighCPU are the recommended ceilings for instances with at most
	// CeilingCPUThreshold vCPUs and above it.
	CeilingLowCPU       = 110
	CeilingHighCPU      = 250
	CeilingCPUThreshold = 30
)

// PrefixDelegationMinVersion is the first VPC CNI release with prefix delegation.
var PrefixDelegationMinVersion = Version{Major: 1, Minor: 9}

// Options are the calculator's inputs besides the instance type.
type Options struct {
	// CNIVersion is the VPC CNI version ("1.18.3", "v1.19.0-eksbuild.1"). Empty means a current
	// release (prefix delegation available); the result then carries a note saying so.
	CNIVersion string
	// CustomNetworking: AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true. The primary ENI stays in the node's
	// subnet and carries no pod addresses, so one ENI is subtracted.
	CustomNetworking bool
	// PrefixDelegation: ENABLE_PREFIX_DELEGATION=true. Applied only on Nitro types with CNI >= 1.9.
	PrefixDelegation bool
	// MaxENI caps the ENIs used (the CNI's MAX_ENI, the calculator's --cni-max-eni); 0 = no cap.
	MaxENI int
	// ReservedENIs are ENIs kept from pods on top of the custom-networking one, for example ENIs
	// that another agent attaches (Karpenter's reservedENIs when it is not used for custom
	// networking). They are subtracted after MaxENI, like custom networking.
	ReservedENIs int
	// ShowMaxAllowed returns the IP-limited maximum without the 110/250 ceiling.
	ShowMaxAllowed bool
	// VCPUs is the instance's vCPU count, needed for the ceiling only; 0 = the instance type's
	// own (InstanceType.VCPUs, from EC2) or unknown. VCPUSource says where the number came from
	// ("node capacity", "--vcpus", "estimated from the size name").
	VCPUs      int
	VCPUSource string
	// BareMetalPrefixDelegation follows the VPC CNI itself, which also enables prefix delegation on
	// bare metal types (whose hypervisor is empty), where the calculator checks for "nitro" only.
	// Use it to compute the capacity the CNI really provides; leave it off to match the calculator.
	BareMetalPrefixDelegation bool
}

// Result is the calculator's answer with the intermediate numbers, so that output can explain it.
type Result struct {
	InstanceType string `json:"instanceType"`
	// MaxPods is the value to give the kubelet (--max-pods / maxPods).
	MaxPods int `json:"maxPods"`
	// MaxAllowed is the IP-limited maximum before the ceiling.
	MaxAllowed int `json:"maxAllowed"`
	// Ceiling is 110 or 250, or 0 when ShowMaxAllowed was asked for or did not matter.
	Ceiling int `json:"ceiling,omitempty"`
	// Capped is true when the ceiling lowered MaxAllowed.
	Capped bool `json:"capped"`
	// CeilingNote says, when Capped, that MaxPods is the calculator's ceiling and not the IP limit
	// that AWS's eni-max-pods.txt lists for the type, and how to get that one.
	CeilingNote string `json:"ceilingNote,omitempty"`

	ENIs        int `json:"enis"`
	ENIsForPods int `json:"enisForPods"`
	IPv4PerENI  int `json:"ipv4PerENI"`
	// PodIPsPerENI is (IPv4PerENI-1), times 16 with prefix delegation.
	PodIPsPerENI     int    `json:"podIPsPerENI"`
	PrefixDelegation bool   `json:"prefixDelegation"`
	CustomNetworking bool   `json:"customNetworking"`
	ReservedENIs     int    `json:"reservedENIs"`
	MaxENI           int    `json:"maxENI,omitempty"`
	CNIVersion       string `json:"cniVersion,omitempty"`
	Hypervisor       string `json:"hypervisor"`
	BareMetal        bool   `json:"bareMetal"`
	VCPUs            int    `json:"vcpus,omitempty"`
	VCPUSource       string `json:"vcpuSource,omitempty"`
	// Notes explain anything the caller may not expect (a requested mode that does not apply, an
	// assumed version).
	Notes []string `json:"notes,omitempty"`
	// DataSource is where the instance data came from: the built-in table's module and version
	// (DataSource), or SourceEC2 for a type the table does not know.
	DataSource string `json:"dataSource"`
}

// ErrVCPUsUnknown is returned when the ceiling decides the answer and the vCPU count is unknown.
var ErrVCPUsUnknown = errors.New("vCPU count unknown")

// Calculate applies the EKS max-pods calculator to t:
//
//	enis      = min(MaxENI, default-card ENIs) - 1 if custom networking - ReservedENIs
//	max pods  = enis * (IPv4 per ENI - 1) + 2              (secondary IP mode)
//	max pods  = enis * ((IPv4 per ENI - 1) * 16) + 2       (prefix delegation: Nitro, CNI >= 1.9)
//	result    = min(max pods, 110 if vCPUs <= 30 else 250) unless ShowMaxAllowed
func Calculate(t InstanceType, o Options) (Result, error) {
	if o.MaxENI < 0 {
		return Result{}, fmt.Errorf("max ENI must not be negative, got %d", o.MaxENI)
	}
	if o.ReservedENIs < 0 {
		return Result{}, fmt.Errorf("reserved ENIs must not be negative, got %d", o.ReservedENIs)
	}
	if o.VCPUs < 0 {
		return Result{}, fmt.Errorf("vCPUs must not be negative, got %d", o.VCPUs)
	}
	if o.VCPUs == 0 && t.VCPUs > 0 {
		o.VCPUs, o.VCPUSource = t.VCPUs, VCPUSourceEC2
	}
	if t.ENIs <= 0 || t.IPv4PerENI <= 0 {
		return Result{}, fmt.Errorf("instance type %q has no usable ENI data (%d ENIs, %d IPv4 per ENI)", t.Name, t.ENIs, t.IPv4PerENI)
	}
	r := Result{
		InstanceType:     t.Name,
		ENIs:             t.ENIs,
		IPv4PerENI:       t.IPv4PerENI,
		CustomNetworking: o.CustomNetworking,
		ReservedENIs:     o.ReservedENIs,
		MaxENI:           o.MaxENI,
		CNIVersion:       o.CNIVersion,
		Hypervisor:       t.Hypervisor,
		BareMetal:        t.BareMetal,
		VCPUs:            o.VCPUs,
		VCPUSource:       o.VCPUSource,
		DataSource:       DataSource,
	}
	if t.Source == SourceEC2 {
		r.DataSource = SourceEC2
	}

	pdByVersion := true
	if o.CNIVersion == "" {
		if o.PrefixDelegation {
			r.Notes = append(r.Notes, "no VPC CNI version given: assuming a release with prefix delegation (1.9 or later)")
		}
	} else {
		v, err := ParseVersion(o.CNIVersion)
		if err != nil {
			return Result{}, err
		}
		pdByVersion = !v.Less(PrefixDelegationMinVersion)
	}

	enis := t.ENIs
	if o.MaxENI > 0 && o.MaxENI < enis {
		enis = o.MaxENI
	}
	if o.CustomNetworking {
		enis--
	}
	enis -= o.ReservedENIs
	if enis < 0 {
		return Result{}, fmt.Errorf("%s has %d ENIs on its default network card (after max ENI %d) but %d are reserved (custom networking: %v, reserved ENIs: %d)",
			t.Name, min(t.ENIs, nonZero(o.MaxENI, t.ENIs)), o.MaxENI, o.ReservedENIs+boolInt(o.CustomNetworking), o.CustomNetworking, o.ReservedENIs)
	}
	if enis == 0 {
		r.Notes = append(r.Notes, "no ENI is left for pod addresses: only host-network pods can run")
	}
	r.ENIsForPods = enis

	if o.PrefixDelegation {
		nitro := t.Nitro() || (o.BareMetalPrefixDelegation && t.BareMetal)
		switch {
		case !pdByVersion:
			r.Notes = append(r.Notes, fmt.Sprintf("prefix delegation needs VPC CNI %s or later; %s uses secondary IP mode", PrefixDelegationMinVersion, o.CNIVersion))
		case !nitro:
			hv := t.Hypervisor
			if hv == "" {
				hv = "none (bare metal)"
			}
			r.Notes = append(r.Notes, fmt.Sprintf("prefix delegation needs a Nitro instance (hypervisor of %s: %s); the calculator uses secondary IP mode", t.Name, hv))
			if t.BareMetal {
				r.Notes = append(r.Notes, "the VPC CNI itself also delegates prefixes on bare metal, so the node can hold more pod addresses than this value")
			}
		default:
			r.PrefixDelegation = true
		}
	}

	r.PodIPsPerENI = t.IPv4PerENI - 1
	if r.PrefixDelegation {
		r.PodIPsPerENI *= IPsPerPrefix
	}
	r.MaxAllowed = enis*r.PodIPsPerENI + HostNetworkPods
	r.MaxPods = r.MaxAllowed
	if o.ShowMaxAllowed {
		return r, nil
	}
	// The ceiling can only lower the value; below 110 the vCPU count does not matter.
	if r.MaxAllowed <= CeilingLowCPU {
		return r, nil
	}
	if o.VCPUs == 0 {
		return r, fmt.Errorf("%w for %s: it decides the ceiling (%d up to %d vCPUs, %d above) for an IP-limited maximum of %d",
			ErrVCPUsUnknown, t.Name, CeilingLowCPU, CeilingCPUThreshold, CeilingHighCPU, r.MaxAllowed)
	}
	r.Ceiling = CeilingLowCPU
	if o.VCPUs > CeilingCPUThreshold {
		r.Ceiling = CeilingHighCPU
	}
	if r.MaxAllowed > r.Ceiling {
		r.MaxPods = r.Ceiling
		r.Capped = true
		r.CeilingNote = fmt.Sprintf("capped at %d, the EKS max-pods calculator's ceiling for %s %d vCPUs; the IP limit is %d "+
			"(the figure of AWS's eni-max-pods.txt in secondary IP mode): --show-max-allowed prints it",
			r.Ceiling, map[bool]string{true: "more than", false: "up to"}[o.VCPUs > CeilingCPUThreshold], CeilingCPUThreshold, r.MaxAllowed)
	}
	return r, nil
}

func nonZero(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
