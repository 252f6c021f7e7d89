package doctor

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// versionedAddon is an installed add-on whose image tag gives its version, on a cluster whose
// API server version reads as 1.minor.
type versionedAddon struct {
	AddonFacts
	have   addonVersion
	server int
}

// addonWithVersion finds the add-on called name with a readable version; ok is false when it is
// not installed, its image has no version tag (a digest, latest) or the server's version is not
// 1.x: then there is nothing to judge.
func addonWithVersion(f *Facts, name string) (versionedAddon, bool) {
	sv, err := version.ParseGeneric(f.Server)
	if err != nil || sv.Major() != 1 {
		return versionedAddon{}, false
	}
	for _, a := range installedAddons(f) {
		if a.Name != name {
			continue
		}
		tag, ok := eni.ImageTag(a.Image)
		if !ok {
			return versionedAddon{}, false
		}
		have, ok := parseAddonVersion(tag)
		if !ok || have.Major != 1 {
			return versionedAddon{}, false
		}
		return versionedAddon{AddonFacts: a, have: have, server: int(sv.Minor())}, true
	}
	return versionedAddon{}, false
}

// kind is how every message names the add-on's type.
func (a versionedAddon) kind() string {
	if a.EKSManaged {
		return "EKS-managed add-on"
	}
	return "self-managed"
}

// subject opens every message: "kube-proxy v1.33.10-eksbuild.13 (self-managed) on Kubernetes v1.36.3".
func (a versionedAddon) subject(f *Facts) string {
	return fmt.Sprintf("%s %s (%s) on Kubernetes %s", a.Name, a.have, a.kind(), f.Server)
}

// addonName is the add-on's name in the EKS API.
func (a versionedAddon) addonName() string { return a.Name }

// fix is the remediation for moving the add-on to want (zero: the version is not in the table),
// by its type: the EKS API for a managed add-on, the image for a self-managed one.
func (a versionedAddon) fix(f *Facts, want addonVersion, ok bool) string {
	cluster := "CLUSTER"
	if f.Settings.EC2 != nil && f.Settings.EC2.Cluster != "" {
		cluster = f.Settings.EC2.Cluster
	}
	v := want.String()
	if !ok {
		v = fmt.Sprintf("VERSION (aws eks describe-addon-versions --addon-name %s --kubernetes-version 1.%d lists them)", a.addonName(), a.server)
	}
	if a.EKSManaged {
		return fmt.Sprintf("update the Amazon EKS add-on: aws eks update-addon --cluster-name %s --addon-name %s --addon-version %s (add --resolve-conflicts PRESERVE to keep fields you changed)", cluster, a.addonName(), v)
	}
	kind, repo := strings.SplitN(a.Resource, "/", 2)[0], imageRepository(a.Image)
	var set string
	if a.Name == kubeProxyName {
		// The user guide's self-managed kube-proxy images are tagged apart from the add-on
		// versions (v1.32.3-minimal-eksbuild.7 beside v1.32.3-eksbuild.7) and come in two
		// types whose manifests differ.
		set = fmt.Sprintf("kubectl -n kube-system set image %s/%s %s=%s:TAG, TAG the self-managed kube-proxy image the EKS user guide lists for Kubernetes 1.%d (of the same type, minimal or default, as the image it replaces)", kind, a.Name, a.Container, repo, a.server)
	} else {
		set = fmt.Sprintf("kubectl -n kube-system set image %s/%s %s=%s:%s, after the user guide's CoreDNS upgrade considerations", kind, a.Name, a.Container, repo, v)
	}
	return fmt.Sprintf("self-managed: update its image (aws eks describe-addon --cluster-name %s --addon-name %s answering an error confirms the type): %s; or let EKS manage it: aws eks create-addon --cluster-name %s --addon-name %s --addon-version %s --resolve-conflicts OVERWRITE (EKS then owns the fields it manages)", cluster, a.addonName(), set, cluster, a.addonName(), v)
}

// imageRepository is an image reference without its tag and digest.
func imageRepository(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	if slash, colon := strings.LastIndex(ref, "/"), strings.LastIndex(ref, ":"); colon > slash {
		ref = ref[:colon]
	}
	return ref
}

// kubeProxyVersionCheck judges kube-proxy's version against the API server's by the Kubernetes
// version skew policy ("kube-proxy must not be newer than kube-apiserver"; it "may be up to three
// minor versions older than kube-apiserver (kube-proxy < 1.25 may only be up to two minor versions
// older)", kubernetes.io/releases/version-skew-policy/#kube-proxy), and an EKS build against the
// EKS user guide's add-on version for the cluster's minor (addonversions.go): EKS ships kube-proxy
// of each cluster's own minor.
type kubeProxyVersionCheck struct{}

func (kubeProxyVersionCheck) Needs() []Need {
	return []Need{{Fact: FactAddons, Rule: RuleKubeProxyVersion}}
}

func (kubeProxyVersionCheck) Run(f *Facts) Result {
	var r Result
	a, ok := addonWithVersion(f, kubeProxyName)
	if !ok {
		return r
	}
	want, row := eksAddonKubeProxy.forMinor(a.server)
	allowed := 3
	if a.have.Minor < 25 {
		allowed = 2
	}
	behind := a.server - a.have.Minor
	var fd findings.Finding
	switch {
	case behind < 0:
		fd = RuleKubeProxyVersion.At(findings.Error, a.Resource, "%s: newer than the API server, which the version skew policy does not allow", a.subject(f))
	case behind > allowed:
		fd = RuleKubeProxyVersion.At(findings.Error, a.Resource, "%s: %d minor versions behind the API server, the version skew policy allows %d", a.subject(f), behind, allowed)
	case behind == allowed:
		fd = RuleKubeProxyVersion.New(a.Resource, "%s: %d minor versions behind the API server, the oldest the version skew policy allows: the next control plane upgrade breaks it", a.subject(f), behind)
	case behind > 0:
		fd = RuleKubeProxyVersion.New(a.Resource, "%s: %s behind the API server; EKS pairs every Kubernetes minor version with kube-proxy of the same minor", a.subject(f), plural(behind, "minor version"))
	case !a.have.EKSBuild:
		return r // the cluster's minor, not an EKS build: the table does not apply
	case !row:
		r.add(RuleKubeProxyVersion.At(findings.Info, a.Resource, "%s: %s", a.subject(f), eksAddonKubeProxy.noRow(a.server)))
		return r
	case a.have.Less(want):
		fd = RuleKubeProxyVersion.At(findings.Info, a.Resource, "%s: %s", a.subject(f), eksAddonKubeProxy.describe(a.server, want))
	default:
		return r
	}
	if behind != 0 {
		if row {
			fd = fd.WithEvidence(eksAddonKubeProxy.describe(a.server, want))
		} else {
			fd = fd.WithEvidence(eksAddonKubeProxy.noRow(a.server))
		}
	}
	fd.Remediation = a.fix(f, want, row)
	r.add(fd)
	return r
}

// coreDNSVersionCheck judges an EKS build of CoreDNS against the EKS user guide's add-on version
// for the cluster's minor (addonversions.go): older than it is a warning when it is of an older
// release line (v1.11 where the table asks for v1.14), info when only its patch or build is older.
// Upstream images are not judged: the table lists EKS builds.
type coreDNSVersionCheck struct{}

func (coreDNSVersionCheck) Needs() []Need {
	return []Need{{Fact: FactAddons, Rule: RuleCoreDNSVersion}}
}

func (coreDNSVersionCheck) Run(f *Facts) Result {
	var r Result
	a, ok := addonWithVersion(f, coreDNSName)
	if !ok || !a.have.EKSBuild {
		return r
	}
	want, row := eksAddonCoreDNS.forMinor(a.server)
	if !row {
		r.add(RuleCoreDNSVersion.At(findings.Info, a.Resource, "%s: %s", a.subject(f), eksAddonCoreDNS.noRow(a.server)))
		return r
	}
	if !a.have.Less(want) {
		return r
	}
	sev := findings.Warning
	if a.have.sameLine(want) {
		sev = findings.Info
	}
	fd := RuleCoreDNSVersion.At(sev, a.Resource, "%s: %s", a.subject(f), eksAddonCoreDNS.describe(a.server, want))
	fd.Remediation = a.fix(f, want, true)
	r.add(fd)
	return r
}
