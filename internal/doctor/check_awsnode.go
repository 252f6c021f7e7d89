package doctor

import "github.com/nodekeeper/nodekeeper/internal/rules"

// awsNodeCheck judges the VPC CNI DaemonSet's settings (rules.CheckCNISettings), or says that
// there is none.
type awsNodeCheck struct{}

func (awsNodeCheck) Needs() []Need {
	return []Need{{Fact: FactAWSNode, Rule: rules.RuleClusterEndpoint}}
}

func (awsNodeCheck) Run(f *Facts) Result {
	var r Result
	a := f.AWSNode
	switch {
	case !a.Found:
		r.add(RuleAWSNodeMissing.New(a.Resource, "not found"))
		return r
	case !a.Container:
		r.checked(SectionAWSNode, 1)
		r.add(RuleAWSNodeMissing.New(a.Resource, "the DaemonSet has no aws-node container"))
		return r
	}
	r.checked(SectionAWSNode, 1)
	r.add(rules.CheckCNISettings(rules.CNIInput{Resource: a.Resource, Env: a.Env, Unread: a.Unread, Version: a.Version, MinVersion: f.Settings.MinCNIVersion})...)
	return r
}
