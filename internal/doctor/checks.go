package doctor

import (
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// Check is one check of the doctor: a small value that reads the facts and returns findings.
// It never writes to the facts, so checks run in any order.
type Check interface {
	// Needs lists the facts the check reads, each with the rule its "skipped" finding is
	// reported under when the fact is missing.
	Needs() []Need
	// Run reads the facts. It runs only when every need that is not Optional was gathered.
	Run(f *Facts) Result
}

// Need is one fact a check reads. When the fact is missing the check's Rule is reported as
// skipped with the fact's reason (and Note); an Optional need does not stop the check, which
// then works without it.
type Need struct {
	Fact     Fact
	Rule     findings.Rule
	Optional bool
	// Note is added to the skip reason: what the check does without the fact.
	Note string
}

// Result is what a check found, and how many resources of which sections it examined (the
// sections' score denominators).
type Result struct {
	Findings []findings.Finding
	Checked  map[string]int
}

func (r *Result) add(fs ...findings.Finding) { r.Findings = append(r.Findings, fs...) }

func (r *Result) checked(section string, n int) {
	if r.Checked == nil {
		r.Checked = map[string]int{}
	}
	r.Checked[section] += n
}

// ChecksFor lists the checks a run with o makes; with the EC2 section, the boot volume and launch
// template checks when d has their AWS clients.
func ChecksFor(o Options, d Deps) []Check {
	cs := []Check{versionSkewCheck{}, kubeletConfigCheck{}, awsNodeCheck{}, podCapacityCheck{}, heartbeatCheck{}, apfCheck{}}
	if !o.SkipPodNetworking {
		cs = append(cs, karpenterCheck{}, stuckPodsCheck{}, servingCSRCheck{}, eniConfigCheck{}, csiNodeCheck{}, cniNodeCheck{})
	}
	cs = append(cs, pullQPSCheck{}, addonAvailabilityCheck{}, addonRestartsCheck{}, cniVersionCheck{}, kubeProxyVersionCheck{}, coreDNSVersionCheck{}, karpenterLeaseGCCheck{})
	if !o.SkipCNIMetrics {
		cs = append(cs, cniMetricsCheck{})
		if !o.SkipPodNetworking {
			cs = append(cs, stuckCauseCheck{})
		}
	}
	if o.EC2 != nil {
		cs = append(cs, ec2Check{})
		if d.CloudWatch != nil {
			cs = append(cs, bootVolumeCheck{})
		}
		if d.LaunchTemplates != nil {
			cs = append(cs, launchTemplateCheck{})
		}
	}
	return cs
}

// RunChecks runs each check over f into rep; a check that needs a missing fact is reported as
// skipped with the missing fact's reason, once per rule, resource and reason.
func RunChecks(rep *findings.Report, f *Facts, checks []Check) {
	type key struct{ code, resource, reason string }
	skipped := map[key]bool{}
	for _, c := range checks {
		run := true
		for _, n := range c.Needs() {
			m, missing := f.Missing[n.Fact]
			if !missing {
				continue
			}
			reason := m.Reason
			if n.Note != "" {
				reason += ": " + n.Note
			}
			if k := (key{n.Rule.Code, m.Resource, reason}); !skipped[k] {
				skipped[k] = true
				rep.Add(n.Rule.Skip(m.Resource, reason))
			}
			if !n.Optional {
				run = false
			}
		}
		if !run {
			continue
		}
		res := c.Run(f)
		rep.Add(res.Findings...)
		for s, n := range res.Checked {
			rep.Checked(s, n)
		}
	}
}
