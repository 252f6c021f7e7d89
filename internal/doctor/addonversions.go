package doctor

import (
	"fmt"
	"regexp"
	"strconv"
)

// The kube-proxy and CoreDNS versions AWS documents per Kubernetes minor version (NK756, NK757):
// "the latest version of the Amazon EKS add-on type for each Kubernetes version", the version
// tables of the Amazon EKS user guide, read on 2026-11-28:
//
//   - eksAddonKubeProxy: "kube-proxy versions" of "Manage kube-proxy in Amazon EKS clusters"
//     (docs.aws.amazon.com/eks/latest/userguide/managing-kube-proxy.html). Rows 1.31 to 1.36 are
//     the page as published in Japanese (ja_jp/eks/latest/userguide/managing-kube-proxy.md; the
//     newest edition stored, whose English edition was stored only at an older revision): the
//     version strings are the same in every language. Rows 1.26 to 1.30, which the page has since
//     dropped, are its source in github.com/awsdocs/amazon-eks-user-guide
//     (latest/ug/networking/managing-kube-proxy.adoc, revision d9a9cba5).
//   - eksAddonCoreDNS: "CoreDNS versions" of "Manage CoreDNS for DNS in Amazon EKS clusters"
//     (managing-coredns.html): rows 1.30 to 1.36 from the same Japanese edition
//     (ja_jp/.../managing-coredns.md), rows 1.27 to 1.29 from its source
//     (latest/ug/networking/managing-coredns.adoc, revision 057948d9, the revision cniversions.go
//     cites).
//
// Unlike the VPC CNI's tables, a cluster whose minor has no row is not judged by another row:
// kube-proxy and CoreDNS builds belong to one Kubernetes minor each, so the check says the table
// has no row for it (info). The tables only grow by reading AWS's page again; never by guessing.
var (
	eksAddonKubeProxy = addonTable{name: "kube-proxy", versions: map[int]string{
		26: "v1.26.15-eksbuild.35",
		27: "v1.27.16-eksbuild.30",
		28: "v1.28.15-eksbuild.20",
		29: "v1.29.15-eksbuild.5",
		30: "v1.30.11-eksbuild.5",
		31: "v1.31.14-eksbuild.20",
		32: "v1.32.13-eksbuild.16",
		33: "v1.33.10-eksbuild.13",
		34: "v1.34.6-eksbuild.13",
		35: "v1.35.3-eksbuild.13",
		36: "v1.36.0-eksbuild.14",
	}}
	eksAddonCoreDNS = addonTable{name: "CoreDNS", versions: map[int]string{
		27: "v1.10.1-eksbuild.38",
		28: "v1.10.1-eksbuild.38",
		29: "v1.11.4-eksbuild.22",
		30: "v1.11.4-eksbuild.40",
		31: "v1.11.4-eksbuild.40",
		32: "v1.11.4-eksbuild.40",
		33: "v1.12.4-eksbuild.18",
		34: "v1.13.2-eksbuild.11",
		35: "v1.14.3-eksbuild.3",
		36: "v1.14.3-eksbuild.3",
	}}
)

// addonTable is one of the EKS user guide's add-on version tables.
type addonTable struct {
	name     string
	versions map[int]string
}

// forMinor returns the table's version for Kubernetes 1.minor; ok is false when it has no row.
func (t addonTable) forMinor(minor int) (addonVersion, bool) {
	s, ok := t.versions[minor]
	if !ok {
		return addonVersion{}, false
	}
	v, ok := parseAddonVersion(s)
	if !ok || !v.EKSBuild {
		panic(fmt.Sprintf("doctor: the %s table's row for 1.%d is not an EKS build: %q", t.name, minor, s))
	}
	return v, true
}

// describe says which version the table asks for on 1.minor.
func (t addonTable) describe(minor int, v addonVersion) string {
	return fmt.Sprintf("the EKS user guide's Amazon EKS add-on version of %s for Kubernetes 1.%d is %s", t.name, minor, v)
}

// noRow says that the table has no row for 1.minor.
func (t addonTable) noRow(minor int) string {
	return fmt.Sprintf("the EKS user guide's %s table, as nodekeeper read it, has no row for Kubernetes 1.%d: the build is not judged", t.name, minor)
}

// addonVersion is an add-on's version as its image tag says: v1.33.10-eksbuild.13,
// v1.29.0-minimal-eksbuild.1 (kube-proxy's self-managed minimal image), or an upstream v1.11.1.
type addonVersion struct {
	Major, Minor, Patch int
	// EKSBuild: the tag names an Amazon EKS build (-eksbuild.N), numbered Build.
	EKSBuild bool
	Build    int
	// Tag is the tag as read (for messages).
	Tag string
}

// addonTag matches the version tags of kube-proxy's and CoreDNS's images, EKS's and upstream's.
var addonTag = regexp.MustCompile(`^v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})(?:-(?:minimal-)?eksbuild\.(\d{1,6}))?$`)

// parseAddonVersion reads an image tag; ok is false for any other tag (latest, a digest, an EKS
// Distro build such as v1.35.9-eks-1-35-16, whose numbering the user guide's tables do not use).
func parseAddonVersion(tag string) (addonVersion, bool) {
	m := addonTag.FindStringSubmatch(tag)
	if m == nil {
		return addonVersion{}, false
	}
	v := addonVersion{Tag: tag}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	if m[4] != "" {
		v.EKSBuild = true
		v.Build, _ = strconv.Atoi(m[4])
	}
	return v, true
}

func (v addonVersion) String() string {
	if v.Tag != "" {
		return v.Tag
	}
	return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Less orders by major, minor, patch, then EKS build number.
func (v addonVersion) Less(w addonVersion) bool {
	for _, d := range [][2]int{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}, {v.Build, w.Build}} {
		if d[0] != d[1] {
			return d[0] < d[1]
		}
	}
	return false
}

// sameLine: both are of one major.minor release line.
func (v addonVersion) sameLine(w addonVersion) bool { return v.Major == w.Major && v.Minor == w.Minor }
