package doctor

import (
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// csiNodeCheck and cniNodeCheck report CSINodes and CNINodes whose Node is gone, classed like
// leases: owned (the garbage collector removes them: info) and unowned or leaked (nobody will:
// warning). Neither deletes anything.
type (
	csiNodeCheck struct{}
	cniNodeCheck struct{}
)

func (csiNodeCheck) Needs() []Need {
	return []Need{{Fact: FactNodes, Rule: RuleCSINodeOrphaned}, {Fact: FactCSINodes, Rule: RuleCSINodeOrphaned}}
}

func (csiNodeCheck) Run(f *Facts) Result {
	return Result{Findings: orphans(f, f.CSINodes, RuleCSINodeOrphaned, "csinode/")}
}

func (cniNodeCheck) Needs() []Need {
	return []Need{{Fact: FactNodes, Rule: RuleCNINodeOrphaned}, {Fact: FactCNINodes, Rule: RuleCNINodeOrphaned}}
}

func (cniNodeCheck) Run(f *Facts) Result {
	return Result{Findings: orphans(f, f.CNINodes.Items, RuleCNINodeOrphaned, "cninode/")}
}

// orphans classes the objects named after a Node that is gone: owned (an ownerReference names the
// deleted Node) or leaked (no Node owner).
func orphans(f *Facts, objs []NodeScoped, rule findings.Rule, prefix string) []findings.Finding {
	nodes := make(map[string]bool, len(f.Nodes))
	for i := range f.Nodes {
		nodes[f.Nodes[i].Name] = true
	}
	var out []findings.Finding
	for _, o := range objs {
		if nodes[o.Name] {
			continue
		}
		class, sev := "unowned and leaked: nothing will remove it", findings.Warning
		for _, ref := range o.Owners {
			if ref.Kind == "Node" {
				class, sev = "owned by the deleted Node (uid "+string(ref.UID)+"): the garbage collector removes it", findings.Info
				break
			}
		}
		out = append(out, rule.At(sev, prefix+o.Name, "no Node %s; %s", o.Name, class))
	}
	return out
}
