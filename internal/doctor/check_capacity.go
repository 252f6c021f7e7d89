package doctor

import (
	"fmt"

	"github.com/nodekeeper/nodekeeper/internal/findings"

	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// podCapacityCheck compares each node's pod capacity with the addresses the VPC CNI can give it
// (rules.CheckPodCapacity), names the fix for the node's OS and provisioner, and with custom
// networking counts the nodes that allow more pods than it leaves addresses for (NK409).
type podCapacityCheck struct{}

func (podCapacityCheck) Needs() []Need {
	return []Need{
		{Fact: FactNodes, Rule: rules.RuleInstanceUnknown},
		{Fact: FactEC2Types, Rule: rules.RuleInstanceUnknown, Optional: true},
	}
}

func (podCapacityCheck) Run(f *Facts) Result {
	var r Result
	mode, _ := cniMode(f)
	caps := nodeCapacities(f)
	var cnTotal, cnStuck int
	var cnExample string
	for i := range f.Nodes {
		n := &f.Nodes[i]
		info, ok := caps[n.Name]
		if !ok {
			continue
		}
		cr := info.Capacity
		pods := int(n.Status.Capacity.Pods().Value())
		if cr.Evaluated {
			r.checked(SectionNodes, 1)
		}
		fs := append([]findings.Finding(nil), cr.Findings...)
		for j := range fs {
			if fs[j].Code != rules.RuleMaxPodsAboveIPs.Code {
				continue
			}
			if c, ok := f.Configz[n.Name]; ok && c.Config != nil && c.Config.MaxPods != nil {
				fs[j] = fs[j].WithEvidence(fmt.Sprintf("kubelet configuration (configz): maxPods %d", *c.Config.MaxPods))
			}
			fs[j] = fs[j].WithEvidence(nodeMaxPodsFix(n, cr.IPLimit, mode.Settings.CustomNetworking))
		}
		r.add(fs...)
		if mode.Settings.CustomNetworking && cr.Evaluated {
			cnTotal++
			if pods > cr.IPLimit {
				cnStuck++
				if cnExample == "" {
					how := "a value of its own"
					switch {
					case pods == rules.DefaultMaxPods:
						how = "the kubelet default"
					case pods == cr.WithoutCustomNetworking:
						how = "the value without custom networking"
					}
					cnExample = fmt.Sprintf("%s (%s): max pods %d (%s), %d addresses with custom networking", n.Name, instanceType(n), pods, how, cr.IPLimit)
				}
			}
		}
	}
	if cnStuck > 0 {
		r.add(RuleCustomNoMaxPods.New(f.AWSNode.Resource,
			"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true but %d of %d nodes allow more pods than custom networking leaves addresses for, e.g. %s", cnStuck, cnTotal, cnExample))
	}
	return r
}
