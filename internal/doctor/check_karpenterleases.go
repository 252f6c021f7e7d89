package doctor

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// karpenterLeaseGCCheck reports a Karpenter whose lease garbage collection deletes ownerless
// node leases without checking the Node, and what nodekeeper's controller beside it means.
//
// Karpenter's history (kubernetes-sigs/karpenter, formerly aws/karpenter-core; the AWS
// provider, aws/karpenter-provider-aws, releases the same version numbers on top of it):
// pkg/controllers/leasegarbagecollection was added by PR 471 (2023-08-18) and first released in
// v0.30.0. Its Reconcile deletes a Lease when it is in kube-node-lease and has no
// ownerReferences: no GET of the Node, no age or renewTime check, no delete precondition. It
// watches Leases with a GenerationChangedPredicate, so it acts on each lease's create event (and
// on every lease when Karpenter starts and its cache fills), not on renewals. It stayed the same
// through v1.0.x (v1.0.9 still registers it) and was dropped by PR 1586 (2024-08-21), first
// released in v1.1.0; for that release aws/karpenter-provider-aws also removed its chart's Role on
// leases in kube-node-lease (commit 095c7e303) and its lease garbage collection test (PR 6845).
type karpenterLeaseGCCheck struct{}

// karpenterLeaseGCVersions: the collector ran from v0.30.0 up to, not including, v1.1.0.
var (
	karpenterLeaseGCFirst = version.MajorMinor(0, 30)
	karpenterLeaseGCGone  = version.MajorMinor(1, 1)
)

func (karpenterLeaseGCCheck) Needs() []Need {
	return []Need{{Fact: FactLeaseCollectors, Rule: RuleKarpenterLeaseGC}}
}

// karpenterCollects says whether a Karpenter version runs the lease collector; known is false
// when the version cannot be read.
func karpenterCollects(v string) (collects, known bool) {
	pv, err := version.ParseGeneric(strings.TrimSpace(v))
	if err != nil {
		return false, false
	}
	mm := version.MajorMinor(pv.Major(), pv.Minor())
	return mm.AtLeast(karpenterLeaseGCFirst) && mm.LessThan(karpenterLeaseGCGone), true
}

func (karpenterLeaseGCCheck) Run(f *Facts) Result {
	var r Result
	lc := f.LeaseCollectors
	beside := "nodekeeper's controller is not installed here (no Deployment labelled app.kubernetes.io/name=nodekeeper): running it beside this Karpenter adds its adoption of unowned leases and its safe deletes, but does not stop Karpenter's"
	if len(lc.Nodekeeper) > 0 {
		var rs []string
		for _, n := range lc.Nodekeeper {
			rs = append(rs, n.Resource)
		}
		beside = "nodekeeper's controller runs beside it (" + strings.Join(rs, ", ") + ")"
	}
	meaning := []string{
		beside + ": both collect ownerless leases, and Karpenter deletes first, on the create event, without the live Node check and the UID/resourceVersion preconditions nodekeeper's deletes carry",
		"Karpenter deletes the lease of a node still registering (created before its kubelet could read its Node, which nodekeeper would adopt); the kubelet re-creates it within about 10 s, with an owner once its Node exists",
		"a kubelet older than 1.29 whose Node is gone re-creates its lease every ~10 s and Karpenter deletes it each time: a create/delete loop in the audit log; nodekeeper reports the zombie (NK312) when it catches the lease, and never deletes it itself",
		"nodekeeper's own deletes stay safe beside it: they find the lease gone or changed and do nothing",
	}
	for _, k := range lc.Karpenter {
		r.checked(SectionAddons, 1)
		collects, known := karpenterCollects(k.Version)
		switch {
		case !known:
			r.add(RuleKarpenterLeaseGC.At(findings.Info, k.Resource, "Karpenter's version could not be read (no %s label, no tagged controller image): versions v0.30.0 to v1.0.x delete every lease in kube-node-lease without an ownerReference, without checking the Node", labelAppVersion))
		case collects:
			fd := RuleKarpenterLeaseGC.New(k.Resource, "Karpenter %s (%s) runs its lease garbage collection (v0.30.0 to v1.0.x): it deletes every lease in kube-node-lease without an ownerReference when it is created, and all of them when Karpenter starts, with no check of the Node or of the lease's renewTime and no delete precondition", k.Version, k.VersionFrom)
			for _, m := range meaning {
				fd = fd.WithEvidence(m)
			}
			r.add(fd)
		}
	}
	return r
}
