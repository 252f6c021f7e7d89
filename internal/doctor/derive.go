package doctor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// This file holds what several checks derive from the facts, as pure functions: each check that
// needs a value computes it from the facts itself, so no check depends on another having run.

// cniMode is the VPC CNI's address mode: the aws-node settings with the --custom-networking and
// --prefix-delegation overrides. known is false when neither the DaemonSet nor an override says
// anything (no aws-node container, or it could not be read).
func cniMode(f *Facts) (mode rules.CNIMode, known bool) {
	o := f.Options
	mode = rules.CNIMode{ReservedENIs: o.ReservedENIs, Version: o.CNIVersion}
	if f.AWSNode.Container {
		known = true
		mode.Settings = eni.ParseSettings(f.AWSNode.Env)
		if mode.Version == "" && f.AWSNode.Version != nil {
			mode.Version = f.AWSNode.Version.String()
		}
	}
	if o.CustomNetworking != nil {
		mode.Settings.CustomNetworking = *o.CustomNetworking
		known = true
	}
	if o.PrefixDelegation != nil {
		mode.Settings.PrefixDelegation = *o.PrefixDelegation
		known = true
	}
	return mode, known
}

// nodeMode is the CNI mode for one node's capacity. Karpenter's reservedENIs counts the ENI that
// custom networking takes as well; for Karpenter's nodes, when --reserved-enis was not given, the
// ENIs Karpenter reserves beyond that one are reserved here too, instead of asking for the flag.
func nodeMode(k KarpenterFacts, reservedENIs int, n *corev1.Node, mode rules.CNIMode) rules.CNIMode {
	if !k.Found || reservedENIs != 0 || rules.DetectProvisioner(n.Labels) != rules.ProvisionerKarpenter {
		return mode
	}
	extra := k.ReservedENIs
	if mode.Settings.CustomNetworking {
		extra--
	}
	if extra > 0 {
		mode.ReservedENIs = extra
	}
	return mode
}

// nodeCapacities is the capacity comparison of every node whose pod addresses come from the VPC
// CNI, when the CNI mode is known (see rules.CheckPodCapacity).
func nodeCapacities(f *Facts) map[string]NodeAddressInfo {
	mode, known := cniMode(f)
	out := map[string]NodeAddressInfo{}
	if !known {
		return out
	}
	for i := range f.Nodes {
		n := &f.Nodes[i]
		if notVPCCNI(n) != "" {
			continue
		}
		nc := rules.NodeCapacity{Resource: "node/" + n.Name, InstanceType: instanceType(n), CapacityPods: int(n.Status.Capacity.Pods().Value()), Types: f.EC2.Types}
		if cpu := n.Status.Capacity.Cpu(); cpu != nil && cpu.Value() > 0 {
			nc.VCPUs, nc.VCPUSource = int(cpu.Value()), "node capacity"
		}
		nm := nodeMode(f.Karpenter, f.Options.ReservedENIs, n, mode)
		out[n.Name] = NodeAddressInfo{Node: n, Capacity: rules.CheckPodCapacity(nc, nm), CustomNetworking: nm.Settings.CustomNetworking, ModeText: modeText(nm)}
	}
	return out
}

// notVPCCNI reports nodes whose pod addresses do not come from the VPC CNI on ENIs.
func notVPCCNI(n *corev1.Node) string {
	switch n.Labels["eks.amazonaws.com/compute-type"] {
	case "fargate", "hybrid":
		return n.Labels["eks.amazonaws.com/compute-type"]
	}
	if n.Labels["kubernetes.io/os"] == "windows" {
		return "windows"
	}
	return ""
}

func instanceType(n *corev1.Node) string {
	if t := n.Labels[corev1.LabelInstanceTypeStable]; t != "" {
		return t
	}
	return n.Labels[corev1.LabelInstanceType]
}

// nodeMaxPodsFix is the evidence line with the max-pods fix for one node's OS and provisioner.
func nodeMaxPodsFix(n *corev1.Node, maxPods int, customNetworking bool) string {
	os, prov := rules.DetectNodeOS(n.Status.NodeInfo.OSImage), rules.DetectProvisioner(n.Labels)
	return fmt.Sprintf("fix for this node (%s, %s): %s", os, prov, rules.MaxPodsFix(os, prov, maxPods, customNetworking))
}

// modeText describes an address mode for a message.
func modeText(m rules.CNIMode) string {
	s := rules.CNIModeString(m.Settings)
	if m.ReservedENIs > 0 {
		s += fmt.Sprintf(", %d reserved ENIs", m.ReservedENIs)
	}
	return s
}
