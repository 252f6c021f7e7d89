package doctor

import (
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// cniVersionCheck compares the aws-node image's VPC CNI version with what AWS documents for the
// cluster's Kubernetes minor version (cniversions.go): a warning below the VPC CNI README's
// oldest recommended version, info below the EKS user guide's add-on version. NK410 judges the
// version against a fixed floor (--min-cni-version) whatever the cluster's version.
type cniVersionCheck struct{}

func (cniVersionCheck) Needs() []Need {
	return []Need{{Fact: FactAWSNode, Rule: RuleCNIVersionForCluster}}
}

func (cniVersionCheck) Run(f *Facts) Result {
	var r Result
	a := f.AWSNode
	if !a.Found || a.Version == nil {
		return r
	}
	sv, err := version.ParseGeneric(f.Server)
	if err != nil || sv.Major() != 1 {
		return r
	}
	// aws-node is counted once, by addonAvailabilityCheck.
	minor := int(sv.Minor())
	have := *a.Version
	oldest, oldRow, okOld := cniTableOldest.forMinor(minor)
	eks, eksRow, okEKS := cniTableEKS.forMinor(minor)
	switch {
	case okOld && have.Less(oldest):
		fd := RuleCNIVersionForCluster.New(a.Resource, "VPC CNI v%s on Kubernetes %s: %s", have, f.Server, cniTableOldest.describe(minor, oldest, oldRow))
		if okEKS {
			fd = fd.WithEvidence(cniTableEKS.describe(minor, eks, eksRow))
		}
		r.add(fd)
	case okEKS && have.Less(eks):
		r.add(RuleCNIVersionForCluster.At(findings.Info, a.Resource, "VPC CNI v%s on Kubernetes %s: %s", have, f.Server, cniTableEKS.describe(minor, eks, eksRow)))
	}
	return r
}
