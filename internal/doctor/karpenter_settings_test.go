package doctor

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// karpenterDeployment is Karpenter's controller Deployment as its Helm chart labels it, with
// the environment given.
func karpenterDeployment(ns string, env ...corev1.EnvVar) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "karpenter", Labels: map[string]string{"app.kubernetes.io/name": "karpenter"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "controller", Image: "public.ecr.aws/karpenter/controller:v0.32.1", Env: env}}}}},
	}
}

// globalSettings is the karpenter-global-settings ConfigMap of Karpenter before v0.33, where
// aws.reservedENIs lived (karpenter.sh docs, "Settings", v0.32).
func globalSettings(ns, reserved string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "karpenter-global-settings"},
		Data: map[string]string{"aws.reservedENIs": reserved, "aws.clusterName": "prod"}}
}

// TestKarpenterGlobalSettings: NK713 reads reservedENIs from Karpenter's Deployment
// (RESERVED_ENIS) or, before v0.33, from the karpenter-global-settings ConfigMap in the
// Deployment's namespace (karpenter and kube-system when the Deployments cannot be listed), and
// fires with custom networking when it is 0, naming where it was read; a forbidden LIST of the
// Deployments is reported under NK713 as skipped, with what it needs.
func TestKarpenterGlobalSettings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		forbidList bool
		want       string // NK713's source, "" for no finding
	}{
		{"ConfigMap beside a Deployment without the variable", []runtime.Object{karpenterDeployment("autoscaler"), globalSettings("autoscaler", "0")},
			false, "configmap/autoscaler/karpenter-global-settings aws.reservedENIs=0"},
		{"ConfigMap says 1: no finding", []runtime.Object{karpenterDeployment("karpenter"), globalSettings("karpenter", " 1 ")}, false, ""},
		{"the Deployment's variable wins over the ConfigMap", []runtime.Object{karpenterDeployment("karpenter", corev1.EnvVar{Name: "RESERVED_ENIS", Value: "0"}), globalSettings("karpenter", "1")},
			false, "deployment/karpenter/karpenter RESERVED_ENIS=0"},
		{"a ConfigMap in another namespace than the Deployment's is not Karpenter's", []runtime.Object{karpenterDeployment("autoscaler"), globalSettings("kube-system", "1")},
			false, "deployment/autoscaler/karpenter without RESERVED_ENIS (default 0)"},
		{"an unreadable value falls back to the Deployment's default", []runtime.Object{karpenterDeployment("karpenter"), globalSettings("karpenter", "one")},
			false, "deployment/karpenter/karpenter without RESERVED_ENIS (default 0)"},
		{"Deployments not listable: the ConfigMap in kube-system", []runtime.Object{globalSettings("kube-system", "0")},
			true, "configmap/kube-system/karpenter-global-settings aws.reservedENIs=0"},
		{"no Karpenter", nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := unitNode("a", "m5.large", 29, nil)
			deps, cs := fakeDeps(append(tc.objs, &n)...)
			if tc.forbidList {
				cs.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", nil)
				})
			}
			o := unitOptions()
			custom := true
			o.CustomNetworking = &custom
			rep, err := Run(context.Background(), deps, o)
			if err != nil {
				t.Fatal(err)
			}
			var got, skipped []string
			for _, f := range rep.Findings() {
				switch {
				case f.Code == RuleKarpenterReservedENIs.Code && f.Severity == findings.Skipped:
					skipped = append(skipped, f.Message)
				case f.Code == RuleKarpenterReservedENIs.Code:
					got = append(got, f.Message)
				}
			}
			// A forbidden read is said, naming the verb and resource, and the check still judges
			// what could be read.
			if want := "needs list on deployments"; tc.forbidList != (len(skipped) == 1 && strings.Contains(skipped[0], want)) {
				t.Errorf("NK713 skipped %q; forbidden Deployments LIST %v: want it said once (%s)", skipped, tc.forbidList, want)
			}
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("NK713 %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.HasSuffix(got[0], "("+tc.want+")")):
				t.Errorf("NK713 %q, want one read from %s", got, tc.want)
			}
		})
	}
}
