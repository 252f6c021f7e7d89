package doctor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// pullQPSCheck reports, per node, the image pulls its kubelet's limiter refused ("pull QPS
// exceeded" events), joined with the node's registryPullQPS and registryBurst from configz and
// the values to set. NK201 says the same settings are too low for the node's pod density before
// anything fails; this says pulls did fail because of them.
type pullQPSCheck struct{}

func (pullQPSCheck) Needs() []Need {
	// configz is not a need: without it (NK205 says why) the refused pulls are still reported,
	// each saying why its node's settings are missing.
	return []Need{{Fact: FactPullEvents, Rule: RulePullQPSExceeded}}
}

func (pullQPSCheck) Run(f *Facts) Result {
	var r Result
	r.checked(SectionAddons, len(f.Nodes))
	nodes := map[string]*corev1.Node{}
	for i := range f.Nodes {
		nodes[f.Nodes[i].Name] = &f.Nodes[i]
	}
	for _, name := range sortedKeys(f.PullQPS) {
		p := f.PullQPS[name]
		res := "node/" + name
		if name == "" {
			res = "node/(not a Node of the cluster: events from a deleted node, or with another source host)"
		}
		settings, fix := pullSettings(f, nodes[name])
		fd := RulePullQPSExceeded.New(res, "%s refused with \"pull QPS exceeded\" (%s), newest %s ago: %s",
			plural(int(p.Refusals), "image pull"), plural(p.Events, "pod image"), age(f.Now, p.Last), settings)
		if fix != "" {
			fd = fd.WithEvidence(fix)
		}
		for _, ex := range p.Examples {
			fd = fd.WithEvidence(ex)
		}
		r.add(fd)
	}
	return r
}

// pullSettings describes a node's pull limit from its configz, and what to set where.
func pullSettings(f *Facts, n *corev1.Node) (settings, fix string) {
	if n == nil {
		return "no Node of this name is left to read the settings of", ""
	}
	c, ok := f.Configz[n.Name]
	if !ok || c.Config == nil {
		why := "not read"
		switch m, missing := f.Missing[FactConfigz]; {
		case missing:
			why = m.Reason
		case ok:
			why = c.Err
		}
		return fmt.Sprintf("the kubelet's registryPullQPS and registryBurst could not be read (%s)", why), ""
	}
	qps := deref32(c.Config.RegistryPullQPS, rules.DefaultRegistryPullQPS)
	burst := deref32(c.Config.RegistryBurst, rules.DefaultRegistryBurst)
	pods := c.Config.EffectiveMaxPods()
	if q, ok := n.Status.Capacity[corev1.ResourcePods]; ok && q.Value() > 0 {
		pods = int(q.Value())
	}
	if qps == 0 {
		return fmt.Sprintf("configz now says registryPullQPS 0 (no limit): the kubelet was reconfigured after these pulls failed, or this is a new kubelet under the same name (registryBurst %d)", burst), ""
	}
	settings = fmt.Sprintf("the kubelet allows %d pulls at once and %d per second after that (configz: registryPullQPS %d, registryBurst %d) for up to %d pods", burst, qps, qps, burst, pods)
	wantQPS := max(qps, rules.RecommendedRegistryPullQPS)
	wantBurst := max(burst, pods)
	return settings, fmt.Sprintf("set registryPullQPS %d and registryBurst %d (or registryPullQPS 0: no limit): %s", wantQPS, wantBurst, pullLimitFix(n, wantQPS, wantBurst))
}

// pullLimitFix says where a node's kubelet takes its pull limits, by its OS and provisioner.
func pullLimitFix(n *corev1.Node, qps, burst int) string {
	var where string
	switch rules.DetectNodeOS(n.Status.NodeInfo.OSImage) {
	case rules.OSAmazonLinux2:
		where = fmt.Sprintf("Amazon Linux 2: /etc/eks/bootstrap.sh CLUSTER --kubelet-extra-args '--registry-qps=%d --registry-burst=%d' in the user data", qps, burst)
	case rules.OSAmazonLinux2023:
		where = fmt.Sprintf("Amazon Linux 2023: a nodeadm NodeConfig (node.eks.aws/v1alpha1) with spec.kubelet.config.registryPullQPS: %d and registryBurst: %d in the user data", qps, burst)
	case rules.OSBottlerocket:
		where = fmt.Sprintf("Bottlerocket: settings.kubernetes.registry-qps = %d and settings.kubernetes.registry-burst = %d in the user data", qps, burst)
	default:
		where = fmt.Sprintf("the kubelet's KubeletConfiguration: registryPullQPS: %d, registryBurst: %d", qps, burst)
	}
	switch rules.DetectProvisioner(n.Labels) {
	case rules.ProvisionerKarpenter:
		return where + ", through the EC2NodeClass's spec.userData (its spec.kubelet has no pull settings); Karpenter replaces drifted nodes"
	case rules.ProvisionerManagedNodeGroup:
		return where + ", in a launch template with the AMI ID, then update the node group"
	}
	return where + "; then replace the nodes"
}

func deref32(p *int32, def int) int {
	if p == nil {
		return def
	}
	return int(*p)
}
