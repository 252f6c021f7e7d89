package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

const (
	ecrEKS    = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/"
	proxyRes  = "daemonset/kube-system/kube-proxy"
	corednsRs = "deployment/kube-system/coredns"
)

// addonFacts is a cluster at server with kube-proxy and CoreDNS of the images given ("": not
// installed); managed marks both as Amazon EKS add-ons.
func addonFacts(server, proxyImage, dnsImage string, managed bool) func() *Facts {
	return func() *Facts {
		f := unitFacts()
		f.Server = server
		if proxyImage != "" {
			f.Addons = append(f.Addons, AddonFacts{Name: kubeProxyName, Resource: proxyRes, Found: true, Container: "kube-proxy", Image: proxyImage, EKSManaged: managed})
		}
		if dnsImage != "" {
			f.Addons = append(f.Addons, AddonFacts{Name: coreDNSName, Resource: corednsRs, Found: true, Container: "coredns", Image: dnsImage, EKSManaged: managed})
		}
		return f
	}
}

// TestAddonVersionChecks judges kube-proxy and CoreDNS on a 1.31 cluster, whose rows in the EKS
// user guide's tables are kube-proxy v1.31.14-eksbuild.20 and CoreDNS v1.11.4-eksbuild.40.
func TestAddonVersionChecks(t *testing.T) {
	proxy := func(tag string) string { return ecrEKS + "kube-proxy:" + tag }
	dns := func(tag string) string { return ecrEKS + "coredns:" + tag }
	runCheckCases(t, []checkCase{
		{"kube-proxy: the table's version", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.31.14-eksbuild.20"), "", true), nil},
		{"kube-proxy: a newer build", kubeProxyVersionCheck{}, addonFacts("v1.31.4-eks-1234567", proxy("v1.31.15-eksbuild.1"), "", false), nil},
		{"kube-proxy: an older build of the minor (self-managed minimal image)", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.31.10-minimal-eksbuild.3"), "", false), []string{"NK756:info"}},
		{"kube-proxy: the same build number of an older patch", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.31.13-eksbuild.20"), "", true), []string{"NK756:info"}},
		{"kube-proxy: one minor behind", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.30.11-eksbuild.5"), "", true), []string{"NK756:warning"}},
		{"kube-proxy: three minors behind, the oldest allowed", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.28.15-eksbuild.20"), "", true), []string{"NK756:warning"}},
		{"kube-proxy: four minors behind", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.27.16-eksbuild.30"), "", false), []string{"NK756:error"}},
		{"kube-proxy: 1.24 may be only two behind", kubeProxyVersionCheck{}, addonFacts("v1.27.2", proxy("v1.24.17-eksbuild.19"), "", false), []string{"NK756:error"}},
		{"kube-proxy: newer than the API server", kubeProxyVersionCheck{}, addonFacts("v1.31.4", proxy("v1.32.13-eksbuild.16"), "", true), []string{"NK756:error"}},
		{"kube-proxy: a minor the table has no row for", kubeProxyVersionCheck{}, addonFacts("v1.37.1", proxy("v1.37.0-eksbuild.1"), "", true), []string{"NK756:info"}},
		{"kube-proxy: an upstream image of the minor is not judged by the table", kubeProxyVersionCheck{}, addonFacts("v1.31.4", "registry.k8s.io/kube-proxy:v1.31.0", "", false), nil},
		{"kube-proxy: an upstream image newer than the API server", kubeProxyVersionCheck{}, addonFacts("v1.31.4", "registry.k8s.io/kube-proxy:v1.32.0", "", false), []string{"NK756:error"}},
		{"kube-proxy: an EKS Distro build is not read", kubeProxyVersionCheck{}, addonFacts("v1.31.4", "public.ecr.aws/eks-distro/kubernetes/kube-proxy:v1.29.9-eks-1-29-16", "", false), nil},
		{"kube-proxy: a digest only", kubeProxyVersionCheck{}, addonFacts("v1.31.4", ecrEKS+"kube-proxy@sha256:1a1e1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f", "", true), nil},
		{"kube-proxy: not installed", kubeProxyVersionCheck{}, addonFacts("v1.31.4", "", dns("v1.11.4-eksbuild.40"), true), nil},
		{"coredns: the table's version", coreDNSVersionCheck{}, addonFacts("v1.31.4", "", dns("v1.11.4-eksbuild.40"), true), nil},
		{"coredns: newer than the table", coreDNSVersionCheck{}, addonFacts("v1.31.4", "", dns("v1.12.4-eksbuild.18"), false), nil},
		{"coredns: an older build of the line", coreDNSVersionCheck{}, addonFacts("v1.31.4", "", dns("v1.11.4-eksbuild.22"), true), []string{"NK757:info"}},
		{"coredns: an older line", coreDNSVersionCheck{}, addonFacts("v1.31.4", "", dns("v1.10.1-eksbuild.38"), false), []string{"NK757:warning"}},
		{"coredns: a minor the table has no row for", coreDNSVersionCheck{}, addonFacts("v1.37.0", "", dns("v1.14.3-eksbuild.3"), true), []string{"NK757:info"}},
		{"coredns: an upstream image is not judged", coreDNSVersionCheck{}, addonFacts("v1.31.4", "", "registry.k8s.io/coredns/coredns:v1.10.1", false), nil},
		{"coredns: not installed", coreDNSVersionCheck{}, addonFacts("v1.31.4", proxy("v1.31.14-eksbuild.20"), "", true), nil},
	})
}

// TestAddonVersionFixByType: every message says whether the add-on is an Amazon EKS add-on or
// self-managed, and the fix is the EKS API's for the first, the image's for the second.
func TestAddonVersionFixByType(t *testing.T) {
	cases := []struct {
		name    string
		check   Check
		managed bool
		want    []string
	}{
		{"kube-proxy managed", kubeProxyVersionCheck{}, true, []string{
			"kube-proxy v1.30.11-eksbuild.5 (EKS-managed add-on) on Kubernetes v1.31.4: 1 minor version behind the API server",
			"aws eks update-addon --cluster-name prod --addon-name kube-proxy --addon-version v1.31.14-eksbuild.20",
			"Amazon EKS add-on version of kube-proxy for Kubernetes 1.31 is v1.31.14-eksbuild.20"}},
		{"kube-proxy self-managed", kubeProxyVersionCheck{}, false, []string{
			"kube-proxy v1.30.11-eksbuild.5 (self-managed) on Kubernetes v1.31.4",
			"kubectl -n kube-system set image daemonset/kube-proxy kube-proxy=" + ecrEKS + "kube-proxy:TAG",
			"aws eks create-addon --cluster-name prod --addon-name kube-proxy --addon-version v1.31.14-eksbuild.20"}},
		{"coredns managed", coreDNSVersionCheck{}, true, []string{
			"CoreDNS", "coredns v1.10.1-eksbuild.38 (EKS-managed add-on) on Kubernetes v1.31.4",
			"aws eks update-addon --cluster-name prod --addon-name coredns --addon-version v1.11.4-eksbuild.40"}},
		{"coredns self-managed", coreDNSVersionCheck{}, false, []string{
			"coredns v1.10.1-eksbuild.38 (self-managed) on Kubernetes v1.31.4",
			"kubectl -n kube-system set image deployment/coredns coredns=" + ecrEKS + "coredns:v1.11.4-eksbuild.40"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := addonFacts("v1.31.4", ecrEKS+"kube-proxy:v1.30.11-eksbuild.5", ecrEKS+"coredns:v1.10.1-eksbuild.38", tc.managed)()
			f.Settings.EC2 = &EC2Options{Cluster: "prod"}
			fs := runOne(tc.check, f).Findings()
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %v", fs)
			}
			all := fs[0].Message + "\n" + strings.Join(fs[0].Evidence, "\n") + "\n" + fs[0].Remediation
			for _, s := range tc.want {
				if !strings.Contains(all, s) {
					t.Errorf("lacks %q:\n%s", s, all)
				}
			}
			other := "update-addon"
			if tc.managed {
				other = "set image"
			}
			if strings.Contains(fs[0].Remediation, other) {
				t.Errorf("the fix of the other type (%s):\n%s", other, fs[0].Remediation)
			}
		})
	}
}

// TestAddonTablesParse: every row is an EKS build of its own Kubernetes minor (kube-proxy) or a
// 1.x CoreDNS release; a typo in a row fails here, not in a user's run.
func TestAddonTablesParse(t *testing.T) {
	for _, tbl := range []addonTable{eksAddonKubeProxy, eksAddonCoreDNS} {
		for minor := range tbl.versions {
			v, ok := tbl.forMinor(minor)
			if !ok || v.Major != 1 {
				t.Errorf("%s 1.%d: %v", tbl.name, minor, v)
			}
			if tbl.name == "kube-proxy" && v.Minor != minor {
				t.Errorf("kube-proxy row 1.%d is %s", minor, v)
			}
		}
	}
}

// TestAddonVersionEscapesImage: the image's repository (written by anyone who may edit the
// workload) reaches the fix as written and the terminal only escaped.
func TestAddonVersionEscapesImage(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\u202e"
	f := addonFacts("v1.31.4", "registry"+evil+".example/eks/kube-proxy:v1.30.11-eksbuild.5", "registry"+evil+".example/eks/coredns:v1.10.1-eksbuild.38", false)()
	rep := findings.NewReport("doctor", "unit", unitNow, Sections...)
	RunChecks(rep, f, []Check{kubeProxyVersionCheck{}, coreDNSVersionCheck{}})
	if got := findingstest.ReportCodes(rep); !slices.Equal(got, []string{"NK756:warning", "NK757:warning"}) {
		t.Fatalf("findings %v", got)
	}
	out := findingstest.SafeText(t, "text", rep, findings.PrintOptions{Catalog: catalog})
	if n := strings.Count(out, `\x1b]0;pwned\x07\u202e`); n != 2 {
		t.Errorf("the image is shown escaped %d times, want 2:\n%s", n, out)
	}
}
