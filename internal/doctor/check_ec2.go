package doctor

import "time"

// ec2Check joins the Nodes with what EC2 says (CheckEC2): instances without Nodes, Nodes without
// instances, subnets short of addresses. Without subnets it checks the rest.
type ec2Check struct{}

func (ec2Check) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: RuleInstanceWithoutNode},
		{Fact: FactEC2Instances, Rule: RuleInstanceWithoutNode},
		{Fact: FactEC2Subnets, Rule: RuleSubnetAddressesLow, Optional: true},
	}
}

func (ec2Check) Run(f *Facts) Result {
	var r Result
	o := f.Settings.EC2
	grace := o.RegisterGrace
	if grace <= 0 {
		grace = 10 * time.Minute
	}
	mode, _ := cniMode(f)
	var subnets map[string]string
	if mode.Settings.CustomNetworking {
		subnets = podSubnets(f)
	}
	r.add(CheckEC2(EC2Inputs{Cluster: o.Cluster, Running: f.EC2.Running, ByID: f.EC2.ByID, Subnets: f.EC2.Subnets, Nodes: f.Nodes,
		Settings: mode.Settings, PodSubnets: subnets, Types: f.EC2.Types, Now: f.Now, RegisterGrace: grace,
		Region: o.Region, AuditLog: o.AuditLog, Deletions: o.NodeDeletions})...)
	r.checked(SectionEC2, len(f.EC2.Running)+len(f.Nodes)+len(f.EC2.Subnets))
	return r
}
