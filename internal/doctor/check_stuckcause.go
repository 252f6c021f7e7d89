package doctor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// stuckCauseCheck gives each node's stuck pods the cause measured on that node, from its aws-node
// pod and ipamd's own figures rather than from the sandbox event's text: the pool full at the
// instance's maximum while the kubelet admits more pods (NK743), EC2 refusing addresses for the
// subnet (NK744), EC2 throttling ipamd (NK745), no ready aws-node pod on the node (NK746), or
// none of these (NK747). The finding's fix is that cause's. Nodes whose pod addresses do not come
// from the VPC CNI, and clusters without aws-node, are left out.
type stuckCauseCheck struct{}

func (stuckCauseCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: RuleStuckUnknown},
		{Fact: FactPods, Rule: RuleStuckUnknown},
		{Fact: FactCNIMetrics, Rule: RuleCNIMetricsUnavailable},
	}
}

// EC2 error codes ipamd passes through (awsutils.go counts them under awscni_aws_api_error_count).
var (
	subnetCodes   = []string{"InsufficientFreeAddressesInSubnet", "InsufficientCidrBlocks"}
	throttleCodes = []string{"RequestLimitExceeded", "Throttling", "ThrottlingException"}
)

func (stuckCauseCheck) Run(f *Facts) Result {
	var r Result
	if !f.AWSNode.Found || !f.AWSNode.Container {
		return r
	}
	byNode := map[string][]*StuckPod{}
	for _, p := range f.Pods.Stuck {
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	nodes := map[string]*corev1.Node{}
	for i := range f.Nodes {
		nodes[f.Nodes[i].Name] = &f.Nodes[i]
	}
	mode, _ := cniMode(f)
	for _, name := range sortedKeys(byNode) {
		n := nodes[name]
		if n == nil || notVPCCNI(n) != "" {
			continue
		}
		r.checked(SectionCNIMetrics, 1)
		ps := byNode[name]
		sortStuck(ps)
		c := f.CNI.Nodes[name]
		rule, why, evidence := measuredCause(n, c, mode.Settings.CustomNetworking)
		fd := rule.New("node/"+name, "%s stuck in ContainerCreating, oldest %s/%s for %s: %s",
			plural(len(ps), "pod"), ps[0].Namespace, ps[0].Name, age(f.Now, ps[0].Since), why)
		r.add(fd.WithEvidence(evidence...).WithEvidence(podList(f.Now, ps)...))
	}
	return r
}

// measuredCause is the cause of a node's stuck pods as its aws-node pod and ipamd show it, with
// the figures that show it.
func measuredCause(n *corev1.Node, c *CNINode, customNetworking bool) (findings.Rule, string, []string) {
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
