package doctor

// apfCheck reports requests API priority and fairness rejected (CheckAPF over /metrics).
type apfCheck struct{}

func (apfCheck) Needs() []Need { return []Need{{Fact: FactMetrics, Rule: RuleAPFUnavailable}} }

func (apfCheck) Run(f *Facts) Result {
	var r Result
	fs, levels := CheckAPF(f.APF)
	r.checked(SectionAPF, levels)
	r.add(fs...)
	return r
}
