package doctor

import "github.com/nodekeeper/nodekeeper/internal/lease"

// heartbeatCheck classifies the node leases against the Nodes (CheckHeartbeats).
type heartbeatCheck struct{}

func (heartbeatCheck) Needs() []Need {
	return []Need{{Fact: FactNodes, Rule: RuleStaleHeartbeat}, {Fact: FactLeases, Rule: RuleStaleHeartbeat}}
}

func (heartbeatCheck) Run(f *Facts) Result {
	var r Result
	refs := make(map[string]lease.NodeRef, len(f.Nodes))
	for i := range f.Nodes {
		refs[f.Nodes[i].Name] = lease.NodeRef{Name: f.Nodes[i].Name, UID: f.Nodes[i].UID}
	}
	names := map[string]bool{}
	for _, l := range f.Leases {
		names[l.Name] = true
	}
	for n := range refs {
		names[n] = true
	}
	r.checked(SectionHeartbeats, len(names))
	r.add(CheckHeartbeats(f.Leases, refs, f.Now, f.Settings.Lease)...)
	return r
}
