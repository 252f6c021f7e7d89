package doctor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// serverMinor is the test control plane's Kubernetes minor version.
func serverMinor(t *testing.T, c kubernetes.Interface) int {
	t.Helper()
	info, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	v, err := apiversion.ParseGeneric(info.GitVersion)
	if err != nil {
		t.Fatal(err)
	}
	return int(v.Minor())
}

// currentAddonTags are the kube-proxy and CoreDNS tags the EKS tables list for the control
// plane's minor; rows says whether they do (else: a tag of the minor, and findings at info that
// the tables have no row for it).
func currentAddonTags(minor int) (proxy, dns string, rows bool) {
	p, okP := eksAddonKubeProxy.forMinor(minor)
	d, okD := eksAddonCoreDNS.forMinor(minor)
	if !okP || !okD {
		return fmt.Sprintf("v1.%d.0-eksbuild.1", minor), "v1.14.3-eksbuild.3", false
	}
	return p.String(), d.String(), true
}

// applyAsEKS applies obj (JSON) as Amazon EKS applies a managed add-on: server-side apply by the
// field manager "eks" (Amazon EKS user guide, kubernetes-field-management.html: EKS "uses the
// Kubernetes server-side apply feature", its fields "are tagged with manager: eks").
func applyAsEKS(ctx context.Context, t *testing.T, c kubernetes.Interface, resource, name, obj string) {
	t.Helper()
	var err error
	opts := metav1.PatchOptions{FieldManager: eksFieldManager, Force: ptr.To(true)}
	switch resource {
	case "daemonsets":
		_, err = c.AppsV1().DaemonSets(metav1.NamespaceSystem).Patch(ctx, name, types.ApplyPatchType, []byte(obj), opts)
	case "deployments":
		_, err = c.AppsV1().Deployments(metav1.NamespaceSystem).Patch(ctx, name, types.ApplyPatchType, []byte(obj), opts)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestDoctorAddonVersions creates kube-proxy as an Amazon EKS add-on (server-side applied by
// "eks") one minor behind the control plane, and CoreDNS self-managed (created by kubectl, as EKS
// installs it with a new cluster or an operator applies it) of an older release line than the
// EKS table asks for. doctor reads the type from the workloads' managedFields and gives each its
// own fix. Then CoreDNS is taken over by EKS (applied by "eks") and its fix becomes the EKS API's.
func TestDoctorAddonVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	if err := kubeletsim.EnsureNamespace(ctx, admin, metav1.NamespaceSystem); err != nil {
		t.Fatal(err)
	}
	minor := serverMinor(t, admin)
	proxyImage := fmt.Sprintf("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.%d.6-eksbuild.13", minor-1)
	applyAsEKS(ctx, t, admin, "daemonsets", "kube-proxy", `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy","namespace":"kube-system",
		"labels":{"eks.amazonaws.com/component":"kube-proxy","k8s-app":"kube-proxy"}},
		"spec":{"selector":{"matchLabels":{"k8s-app":"kube-proxy"}},"template":{"metadata":{"labels":{"k8s-app":"kube-proxy"}},
		"spec":{"containers":[{"name":"kube-proxy","image":"`+proxyImage+`","command":["kube-proxy","--v=2","--config=/var/lib/kube-proxy-config/config"]}]}}}}`)
	t.Cleanup(func() {
		_ = admin.AppsV1().DaemonSets(metav1.NamespaceSystem).Delete(context.Background(), "kube-proxy", metav1.DeleteOptions{})
	})
	setDaemonSetStatus(ctx, t, admin, "kube-proxy", 1, 1)
	dnsImage := "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/coredns:v1.9.3-eksbuild.7"
	createAddonDeployment(ctx, t, admin, "coredns", map[string]string{"eks.amazonaws.com/component": "coredns", "k8s-app": "kube-dns"},
		map[string]string{"k8s-app": "kube-dns"}, dnsImage, 2, 2)

	proxyRow, proxyOK := eksAddonKubeProxy.forMinor(minor)
	dnsRow, dnsOK := eksAddonCoreDNS.forMinor(minor)
	run := func() map[string]findings.Finding {
		t.Helper()
		rep, err := runOn(ctx, env.AdminConfig(), Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]findings.Finding{}
		for _, f := range rep.Findings() {
			if f.Code == RuleKubeProxyVersion.Code || f.Code == RuleCoreDNSVersion.Code {
				got[f.Code+" "+f.Severity.String()+" "+f.Resource] = f
			}
		}
		return got
	}
	check := func(got map[string]findings.Finding, key string, texts ...string) {
		t.Helper()
		f, ok := got[key]
		if !ok {
			t.Errorf("no finding %s in %v", key, got)
			return
		}
		all := f.Message + "\n" + strings.Join(f.Evidence, "\n") + "\nfix: " + f.Remediation
		for _, s := range texts {
			if !strings.Contains(all, s) {
				t.Errorf("%s lacks %q:\n%s", key, s, all)
			}
		}
	}

	got := run()
	proxyFix, dnsFixManaged := "--addon-version VERSION (aws eks describe-addon-versions --addon-name kube-proxy", "--addon-version VERSION"
	if proxyOK {
		proxyFix = "--addon-version " + proxyRow.String()
	}
	check(got, "NK756 warning daemonset/kube-system/kube-proxy",
		fmt.Sprintf("kube-proxy v1.%d.6-eksbuild.13 (EKS-managed add-on) on Kubernetes v1.%d.", minor-1, minor),
		"1 minor version behind the API server",
		"fix: update the Amazon EKS add-on: aws eks update-addon --cluster-name CLUSTER --addon-name kube-proxy "+proxyFix)
	dnsKey := "NK757 info deployment/kube-system/coredns"
	if dnsOK {
		dnsKey = "NK757 warning deployment/kube-system/coredns"
		dnsFixManaged = "--addon-version " + dnsRow.String()
		check(got, dnsKey, "coredns v1.9.3-eksbuild.7 (self-managed)", dnsRow.String(),
			"kubectl -n kube-system set image deployment/coredns coredns=602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/coredns:"+dnsRow.String(),
			"aws eks create-addon --cluster-name CLUSTER --addon-name coredns "+dnsFixManaged)
	} else {
		check(got, dnsKey, "coredns v1.9.3-eksbuild.7 (self-managed)", "has no row for Kubernetes")
	}
	if len(got) != 2 {
		t.Errorf("want 2 findings, got %v", got)
	}

	// EKS takes CoreDNS over (aws eks create-addon --resolve-conflicts OVERWRITE applies it).
	applyAsEKS(ctx, t, admin, "deployments", "coredns", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"coredns","namespace":"kube-system"},
		"spec":{"selector":{"matchLabels":{"k8s-app":"kube-dns"}},"template":{"metadata":{"labels":{"k8s-app":"kube-dns"}},
		"spec":{"containers":[{"name":"coredns","image":"`+dnsImage+`"}]}}}}`)
	got = run()
	if dnsOK {
		check(got, dnsKey, "coredns v1.9.3-eksbuild.7 (EKS-managed add-on)",
			"fix: update the Amazon EKS add-on: aws eks update-addon --cluster-name CLUSTER --addon-name coredns "+dnsFixManaged)
	} else {
		check(got, dnsKey, "coredns v1.9.3-eksbuild.7 (EKS-managed add-on)")
	}
}
