package doctor

import (
	"fmt"
	"sort"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

// The VPC CNI versions AWS documents per Kubernetes minor version (NK754). Two tables, both
// AWS's own, both recommending the latest release for every Kubernetes version:
//
//   - oldestRecommendedCNI: the "Recommended Version" table of the VPC CNI's README
//     (github.com/aws/amazon-vpc-cni-k8s, README.md, as of the v1.23.1 release): "our *oldest*
//     recommended VPC CNI version for each actively supported Kubernetes release". The rows the
//     README has since dropped (1.22 to 1.27) are kept from its earlier revisions of the same
//     table (commits 18fd105e1, 01485116d, 401ed22dd).
//   - eksAddonCNI: the "Amazon VPC CNI versions" table of the Amazon EKS user guide
//     (github.com/awsdocs/amazon-eks-user-guide, latest/ug/networking/managing-vpc-cni.adoc,
//     revision 057948d9): the latest version of the Amazon EKS add-on for each Kubernetes version.
//
// A cluster newer than a table's newest row is judged by that row (the message says so); one
// older than its oldest row is not judged.
var (
	oldestRecommendedCNI = map[int]eni.Version{
		22: {Major: 1, Minor: 8, Patch: 0},
		23: {Major: 1, Minor: 8, Patch: 0},
		24: {Major: 1, Minor: 9, Patch: 3},
		25: {Major: 1, Minor: 11, Patch: 4},
		26: {Major: 1, Minor: 12, Patch: 0},
		27: {Major: 1, Minor: 12, Patch: 5},
		28: {Major: 1, Minor: 13, Patch: 4},
		29: {Major: 1, Minor: 14, Patch: 1},
		30: {Major: 1, Minor: 16, Patch: 0},
		31: {Major: 1, Minor: 16, Patch: 4},
		32: {Major: 1, Minor: 17, Patch: 1},
		33: {Major: 1, Minor: 17, Patch: 1},
	}
	eksAddonCNI = map[int]eni.Version{
		27: {Major: 1, Minor: 20, Patch: 1},
		28: {Major: 1, Minor: 20, Patch: 1},
		29: {Major: 1, Minor: 20, Patch: 1},
		30: {Major: 1, Minor: 20, Patch: 1},
		31: {Major: 1, Minor: 20, Patch: 1},
		32: {Major: 1, Minor: 20, Patch: 1},
		33: {Major: 1, Minor: 20, Patch: 1},
	}
)

// cniTable names a version table for messages.
type cniTable struct {
	name     string
	versions map[int]eni.Version
}

var (
	cniTableOldest = cniTable{"the VPC CNI README's oldest recommended version", oldestRecommendedCNI}
	cniTableEKS    = cniTable{"the EKS user guide's Amazon EKS add-on version", eksAddonCNI}
)

// forMinor returns the table's version for Kubernetes 1.minor and the row it came from: the
// newest row for a newer cluster; ok is false for a cluster older than every row.
func (t cniTable) forMinor(minor int) (v eni.Version, row int, ok bool) {
	if v, ok := t.versions[minor]; ok {
		return v, minor, true
	}
	rows := make([]int, 0, len(t.versions))
	for m := range t.versions {
		rows = append(rows, m)
	}
	sort.Ints(rows)
	if len(rows) == 0 || minor < rows[0] {
		return eni.Version{}, 0, false
	}
	newest := rows[len(rows)-1]
	return t.versions[newest], newest, true
}

// describe says which version the table asks for on 1.minor and from which row.
func (t cniTable) describe(minor int, v eni.Version, row int) string {
	if row == minor {
		return fmt.Sprintf("%s for Kubernetes 1.%d is v%s", t.name, minor, v)
	}
	return fmt.Sprintf("%s for Kubernetes 1.%d, the newest the table lists (the cluster runs 1.%d), is v%s", t.name, row, minor, v)
}
