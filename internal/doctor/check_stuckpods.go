package doctor

// stuckPodsCheck reports the pods stuck in ContainerCreating by the cause of their newest
// sandbox failure event, per node and per namespace, and the nodes out of VPC addresses
// (stuckFindings in podnet.go). Without the events the pods are still reported, without a cause.
type stuckPodsCheck struct{}

func (stuckPodsCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: RuleSandboxNoAddress},
		{Fact: FactPods, Rule: RuleSandboxNoAddress},
		{Fact: FactEvents, Rule: RuleSandboxOther, Optional: true, Note: "stuck pods are reported without their cause"},
	}
}

func (stuckPodsCheck) Run(f *Facts) Result {
	var r Result
	r.checked(SectionPodNet, len(f.Nodes))
	r.add(stuckFindings(f.Now, f.Pods, nodeCapacities(f))...)
	return r
}
