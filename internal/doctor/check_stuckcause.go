package doctor

// stuckCauseCheck gives each node's stuck pods the cause measured on that node, from its aws-node
// pod and ipamd's own figures rather than from the sandbox event's text: the pool full at the
// instance's maximum while the kubelet admits more pods (NK743), the pool full of addresses held
// for pods that are gone, fewer pods holding addresses than ipamd assigned (NK749, leaked by
// sandboxes torn down without a CNI DEL), EC2 refusing addresses for the subnet (NK744), EC2 throttling ipamd (NK745), no ready aws-node pod on the node (NK746), or
// none of these (NK747). The finding's fix is that cause's. Nodes whose pod addresses do not come
// from the VPC CNI, and clusters without aws-node, are left out (stuckCauses in derive.go, which
// the stuck-pod groups of the pod-networking section read too).
type stuckCauseCheck struct{}

func (stuckCauseCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: RuleStuckUnknown},
		{Fact: FactPods, Rule: RuleStuckUnknown},
		{Fact: FactCNIMetrics, Rule: RuleCNIMetricsUnavailable},
	}
}

func (stuckCauseCheck) Run(f *Facts) Result {
	var r Result
	causes := stuckCauses(f)
	byNode := stuckByNode(f.Pods)
	for _, name := range sortedKeys(causes) {
		r.checked(SectionCNIMetrics, 1)
		ps, c := byNode[name], causes[name]
		fd := c.Rule.New("node/"+name, "%s stuck in ContainerCreating, oldest %s/%s for %s: %s",
			plural(len(ps), "pod"), ps[0].Namespace, ps[0].Name, age(f.Now, ps[0].Since), c.Why)
		r.add(fd.WithEvidence(c.Evidence...).WithEvidence(podList(f.Now, ps)...))
	}
	return r
}
