package doctor

import (
	"strings"
)

// eniConfigCheck checks the custom networking objects: ENIConfigs with a subnet and security
// groups, and one for every node that selects one.
type eniConfigCheck struct{}

func (eniConfigCheck) Needs() []Need {
	return []Need{{Fact: FactNodes, Rule: RuleENIConfigMissing}, {Fact: FactENIConfigs, Rule: RuleENIConfigMissing}}
}

func (eniConfigCheck) Run(f *Facts) Result {
	var r Result
	mode, _ := cniMode(f)
	custom := mode.Settings.CustomNetworking
	if !f.ENIConfigs.Served {
		if custom {
			r.add(RuleENIConfigMissing.New(f.AWSNode.Resource, "custom networking is on but the ENIConfig CRD (crd.k8s.amazonaws.com/v1alpha1) is not installed: no node can get pod addresses"))
		}
		return r
	}
	configs := map[string]bool{}
	for _, c := range f.ENIConfigs.Items {
		configs[c.Name] = true
		var missing []string
		if c.Subnet == "" {
			missing = append(missing, "spec.subnet")
		}
		if c.SecurityGroups == 0 {
			missing = append(missing, "spec.securityGroups")
		}
		if len(missing) > 0 {
			r.add(RuleENIConfigIncomplete.New("eniconfig/"+c.Name, "no %s", strings.Join(missing, " and no ")))
		}
	}
	if !custom {
		return r
	}
	labelDef, annotationDef := f.AWSNode.Env["ENI_CONFIG_LABEL_DEF"], f.AWSNode.Env["ENI_CONFIG_ANNOTATION_DEF"]
	for i := range f.Nodes {
		n := &f.Nodes[i]
		if notVPCCNI(n) != "" {
			continue
		}
		name, from := selectedENIConfig(n, labelDef, annotationDef)
		if !configs[name] {
			r.add(RuleENIConfigMissing.New("node/"+n.Name, "selects ENIConfig %q (%s), which does not exist: pods on this node get no addresses",
				name, from))
		}
	}
	return r
}
