package doctor

import (
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// CheckHeartbeats classifies every lease in kube-node-lease with the shared lease taxonomy and
// reports the classes that need attention, plus Nodes without a lease. nodes maps Node names to
// their UIDs.
func CheckHeartbeats(leases []coordinationv1.Lease, nodes map[string]lease.NodeRef, now time.Time, opts lease.Options) []findings.Finding {
	var out []findings.Finding
	seen := make(map[string]bool, len(leases))
	for i := range leases {
		l := &leases[i]
		if l.Namespace != lease.NodeLeaseNamespace {
			continue
		}
		seen[l.Name] = true
		var ref *lease.NodeRef
		if n, ok := nodes[l.Name]; ok {
			ref = &n
		}
		v := lease.Classify(l, ref, now, opts)
		res := "lease/" + l.Namespace + "/" + l.Name
		age := "never renewed"
		if v.RenewAge > 0 {
			age = fmt.Sprintf("renewed %s ago", lease.Elapsed(v.RenewAge))
		}
		switch v.Class {
		case lease.Stale:
			out = append(out, RuleStaleHeartbeat.New("node/"+l.Name, "lease %s: %s", age, v.Reason))
		case lease.Zombie:
			out = append(out, RuleZombie.New(res, "no Node %q but the lease was %s: %s", l.Name, age, v.Reason))
		case lease.Leaked:
			out = append(out, RuleLeaked.New(res, "%s: %s", age, v.Reason))
		case lease.Unowned:
			out = append(out, RuleUnowned.New(res, "%s", v.Reason))
		case lease.OwnerMissing, lease.StaleOwner:
			out = append(out, RuleOwnerGone.New(res, "%s: %s", v.Class, v.Reason))
		}
	}
	var missing []string
	for name := range nodes {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		out = append(out, RuleNoLease.New("node/"+name, "no lease %s/%s", lease.NodeLeaseNamespace, name))
	}
	return out
}
