package doctor

// bootVolumeCheck names the recently launched Nodes whose root volume was IO-bound at boot
// (bootvolumes.go), with the pods stuck on them. Without the pod list it still names the nodes.
type bootVolumeCheck struct{}

func (bootVolumeCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: RuleBootVolumeIOBound},
		{Fact: FactEC2Instances, Rule: RuleBootVolumeIOBound},
		{Fact: FactBootVolumes, Rule: RuleBootVolumeIOBound},
		{Fact: FactPods, Rule: RuleBootVolumeIOBound, Optional: true, Note: "IO-bound nodes are named without their stuck pods"},
	}
}

func (bootVolumeCheck) Run(f *Facts) Result {
	var r Result
	r.add(checkBootVolumes(f.EC2.Boot.Volumes, f.Pods.Stuck, f.Now)...)
	r.checked(SectionEC2, len(f.EC2.Boot.Volumes))
	return r
}
