package doctor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// This file holds what several checks derive from the facts, as pure functions: each check that
// needs a value computes it from the facts itself, so no check depends on another having run.

// cniMode is the VPC CNI's address mode: the aws-node settings with the --custom-networking and
// --prefix-delegation overrides. known is false when neither the DaemonSet nor an override says
// anything (no aws-node container, or it could not be read).
func cniMode(f *Facts) (mode rules.CNIMode, known bool) {
	o := f.Settings
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
		nm := nodeMode(f.Karpenter, f.Settings.ReservedENIs, n, mode)
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

// stuckByNode is the stuck pods by node, each node's oldest first.
func stuckByNode(s PodFacts) map[string][]*StuckPod {
	out := map[string][]*StuckPod{}
	for _, p := range s.Stuck {
		out[p.Node] = append(out[p.Node], p)
	}
	for _, ps := range out {
		sortStuck(ps)
	}
	return out
}

// nodeCause is the cause of a node's stuck pods measured on the node: its rule (NK743-NK747, NK749),
// why, and the figures that show it.
type nodeCause struct {
	Rule     findings.Rule
	Why      string
	Evidence []string
}

// stuckCauses is the measured cause of the stuck pods of each node that has some and whose pod
// addresses come from the VPC CNI, by node name. It is empty when ipamd's figures were not read:
// the run skipped them, the read was refused, or the cluster has no aws-node DaemonSet.
func stuckCauses(f *Facts) map[string]nodeCause {
	out := map[string]nodeCause{}
	if f.Settings.SkipCNIMetrics || !f.Has(FactCNIMetrics) || !f.AWSNode.Found || !f.AWSNode.Container {
		return out
	}
	mode, _ := cniMode(f)
	byNode := stuckByNode(f.Pods)
	for i := range f.Nodes {
		n := &f.Nodes[i]
		if len(byNode[n.Name]) == 0 || notVPCCNI(n) != "" {
			continue
		}
		rule, why, evidence := measuredCause(n, f.CNI.Nodes[n.Name], f.Pods.VPCPods[n.Name], mode.Settings.CustomNetworking)
		out[n.Name] = nodeCause{Rule: rule, Why: why, Evidence: evidence}
	}
	return out
}

// EC2 error codes ipamd passes through (awsutils.go counts them under awscni_aws_api_error_count).
var (
	subnetCodes   = []string{"InsufficientFreeAddressesInSubnet", "InsufficientCidrBlocks"}
	throttleCodes = []string{"RequestLimitExceeded", "Throttling", "ThrottlingException"}
)

// What ipamd does about an address whose pod is gone, from amazon-vpc-cni-k8s (v1.23.1): it
// frees an address only on the CNI DEL the kubelet sends, and the freed address then cools down
// for IP_COOLDOWN_PERIOD (default 30 seconds; README, pkg/ipamd/datastore/data_store.go
// getCooldownPeriod) before another pod gets it; allocations whose pod has no host-side veth are
// dropped only when ipamd starts and reads its checkpoint /var/run/aws-node/ipam.json
// (data_store.go ReadBackingStore and normalizeCheckpointDataByPodVethExistence, which logs
// "stale IP allocation for ID(...) ... host-side veth not found"); nothing reconciles them while
// it runs. So a sandbox torn down without a CNI DEL keeps its address assigned in ipamd until
// aws-node restarts, and enough of them fill the pool while the pods that hold addresses are fewer.
const leakedHow = "ipamd frees an address only on the CNI DEL of its pod's sandbox (then after IP_COOLDOWN_PERIOD, 30s by default) and drops allocations whose pod veth is gone only when it starts and reads its checkpoint /var/run/aws-node/ipam.json (amazon-vpc-cni-k8s pkg/ipamd/datastore/data_store.go, ReadBackingStore)"

// measuredCause is the cause of a node's stuck pods as its aws-node pod and ipamd show it, with
// the figures that show it; holding is the number of pods on the node that hold VPC addresses
// (PodFacts.VPCPods).
func measuredCause(n *corev1.Node, c *CNINode, holding int, customNetworking bool) (findings.Rule, string, []string) {
	switch {
	case c == nil:
		return RuleStuckIPAMDUnreachable, "no aws-node pod runs on the node", nil
	case !c.Ready:
		return RuleStuckIPAMDUnreachable, "its aws-node pod " + c.Pod + " is not ready, so ipamd does not serve (no metrics read)", nil
	case c.Metrics == nil:
		return RuleStuckUnknown, "ipamd's metrics could not be read (" + c.Err + ")", nil
	}
	m := c.Metrics
	pool := m.PoolText()
	var ec2 []string
	if len(m.EC2Errors) > 0 {
		ec2 = []string{"EC2 API errors since ipamd started: " + countsText(m.EC2Errors)}
	}
	maxPods := int(n.Status.Capacity.Pods().Value())
	if fits := m.MaxIPs + eni.HostNetworkPods; m.HasPool && m.MaxIPs > 0 && m.AssignedIPs >= m.MaxIPs && maxPods > fits {
		why := fmt.Sprintf("ipamd has assigned all %d addresses the instance can hold and the kubelet admits %d pods (maxPods)", m.MaxIPs, maxPods)
		return RuleStuckPoolFull, why, append([]string{pool, nodeMaxPodsFix(n, fits, customNetworking)}, ec2...)
	}
	if m.HasPool && m.MaxIPs > 0 && m.AssignedIPs >= m.MaxIPs && holding < m.AssignedIPs {
		// Full, within what the kubelet admits, yet fewer pods hold addresses than ipamd says it
		// assigned: the rest belong to sandboxes torn down without a CNI DEL.
		why := fmt.Sprintf("ipamd's pool is full: %d addresses assigned, all the instance can hold, against %s on the node that hold addresses; %d are held for pods that are gone",
			m.AssignedIPs, plural(holding, "pod"), m.AssignedIPs-holding)
		return RuleStuckLeaked, why, append([]string{pool, leakedHow}, ec2...)
	}
	if k := sumCodes(m.EC2Errors, subnetCodes); k > 0 {
		return RuleStuckSubnet, fmt.Sprintf("EC2 refused ipamd addresses %s for lack of free ones in the subnet", times(k)), append([]string{pool}, ec2...)
	}
	if k := sumCodes(m.EC2Errors, throttleCodes); k > 0 {
		return RuleStuckThrottled, fmt.Sprintf("EC2 throttled ipamd's calls %s", times(k)), append([]string{pool}, ec2...)
	}
	why := fmt.Sprintf("ipamd has %d warm addresses and no EC2 error explains it", m.Warm())
	if !m.HasPool {
		why = "ipamd has not published its address pool"
	}
	return RuleStuckUnknown, why, append([]string{pool}, ec2...)
}

func sumCodes(m map[string]int, codes []string) int {
	n := 0
	for _, c := range codes {
		n += m[c]
	}
	return n
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
