package doctor

// stuckPodsCheck reports the pods stuck in ContainerCreating by the cause of their newest
// sandbox failure event, per node and per namespace, and the nodes out of VPC addresses
// (stuckFindings in podnet.go). Without the events the pods are still reported, without a cause.
// Each group also names the cause measured on its nodes from ipamd's figures (stuckCauses, as the
// cni-metrics section's NK743-NK747 and NK749 findings), when they were read.
type stuckPodsCheck struct{}

func (stuckPodsCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: RuleSandboxNoAddress},
		{Fact: FactPods, Rule: RuleSandboxNoAddress},
		{Fact: FactEvents, Rule: RuleSandboxOther, Optional: true, Note: "stuck pods are reported without their cause"},
		{Fact: FactCNIMetrics, Rule: RuleCNIMetricsUnavailable, Optional: true},
	}
}

func (stuckPodsCheck) Run(f *Facts) Result {
	var r Result
	r.checked(SectionPodNet, len(f.Nodes))
	r.add(stuckFindings(f.Now, f.Pods, nodeCapacities(f), stuckCauses(f))...)
	return r
}
