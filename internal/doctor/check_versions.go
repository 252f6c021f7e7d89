package doctor

// versionSkewCheck compares each kubelet's version with the API server's (CheckVersionSkew).
type versionSkewCheck struct{}

func (versionSkewCheck) Needs() []Need { return []Need{{Fact: FactNodes, Rule: RuleVersionSkew}} }

func (versionSkewCheck) Run(f *Facts) Result {
	var r Result
	for i := range f.Nodes {
		n := &f.Nodes[i]
		v := n.Status.NodeInfo.KubeletVersion
		if v == "" {
			continue
		}
		res := "node/" + n.Name
		fs, err := CheckVersionSkew(res, v, f.Server)
		if err != nil {
			r.add(RuleVersionSkew.Skip(res, err.Error()))
			continue
		}
		r.checked(SectionVersions, 1)
		r.add(fs...)
	}
	return r
}
