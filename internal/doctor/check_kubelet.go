package doctor

import "github.com/nodekeeper/nodekeeper/internal/rules"

// kubeletConfigCheck judges each kubelet's configuration read through configz
// (rules.CheckKubeletConfig, rules.CheckMaxPodsAgreement); a node whose configuration could not
// be read is reported skipped with the reason.
type kubeletConfigCheck struct{}

func (kubeletConfigCheck) Needs() []Need {
	return []Need{{Fact: FactNodes, Rule: RuleConfigz}, {Fact: FactConfigz, Rule: RuleConfigz}}
}

func (kubeletConfigCheck) Run(f *Facts) Result {
	var r Result
	for i := range f.Nodes {
		n := &f.Nodes[i]
		c, ok := f.Configz[n.Name]
		if !ok {
			continue
		}
		res := "node/" + n.Name
		if c.Config == nil {
			r.add(RuleConfigz.Skip(res, c.Err))
			continue
		}
		pods := int(n.Status.Capacity.Pods().Value())
		r.checked(SectionKubelet, 1)
		r.add(rules.CheckKubeletConfig(res, "configz", *c.Config, pods)...)
		r.add(rules.CheckMaxPodsAgreement(res, *c.Config, pods)...)
	}
	return r
}
