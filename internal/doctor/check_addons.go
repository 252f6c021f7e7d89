package doctor

import "github.com/nodekeeper/nodekeeper/internal/findings"

// addonAvailabilityCheck reports an add-on (aws-node, kube-proxy, CoreDNS) whose workload has
// unavailable pods: an error when none of them is available, a warning otherwise. An add-on that
// is not installed says nothing (clusters may run another CNI, no kube-proxy or another DNS).
type addonAvailabilityCheck struct{}

func (addonAvailabilityCheck) Needs() []Need {
	return []Need{{Fact: FactAddons, Rule: RuleAddonUnavailable}}
}

func (addonAvailabilityCheck) Run(f *Facts) Result {
	var r Result
	for _, a := range installedAddons(f) {
		r.checked(SectionAddons, 1)
		if a.Unavailable == 0 || a.Desired == 0 {
			continue
		}
		sev := findings.Warning
		if a.Available == 0 {
			sev = findings.Error
		}
		r.add(RuleAddonUnavailable.At(sev, a.Resource, "%d of %d %s pods unavailable (%d available)", a.Unavailable, a.Desired, a.Name, a.Available))
	}
	return r
}
