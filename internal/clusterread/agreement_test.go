package clusterread_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/plan/gather"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// The tests read the cluster only; no controller runs.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// eniConfigCount is more ENIConfigs than one page of the readers' chunk size holds several
// times over: a reader that stops after the first page, or drops a page's error, misses them.
const (
	eniConfigCount = 600
	chunk          = 100
)

// TestDoctorAndPlanAgree runs doctor's gather and plan's gather on one control-plane cluster as
// one identity and checks that they report the same facts, where they used to disagree:
//
//   - Karpenter's settings ConfigMap in the karpenter namespace while its Deployments may not be
//     listed (a forbidden read): doctor falls back to the chart's namespaces and names the
//     forbidden LIST; plan found nothing and said nothing;
//   - the API server's /metrics, forbidden too: both name the non-resource URL;
//   - the stock aws-node environment, with MY_NODE_NAME and MY_POD_NAME from fieldRef: no setting,
//     so neither notes it (plan used to);
//   - 600 ENIConfigs read in pages of 100: both see the last one.
func TestDoctorAndPlanAgree(t *testing.T) {
	ctx := context.Background()
	admin := env.AdminClient()
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}

	// The aws-node DaemonSet as the VPC CNI's manifest ships it, custom networking on, the
	// ENIConfig chosen by zone.
	stockEnv := []corev1.EnvVar{
		{Name: "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", Value: "true"},
		{Name: "ENI_CONFIG_LABEL_DEF", Value: corev1.LabelTopologyZone},
		{Name: "WARM_ENI_TARGET", Value: "1"},
		{Name: "MY_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "MY_POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	labels := map[string]string{"k8s-app": "aws-node"}
	if _, err := admin.AppsV1().DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "aws-node"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "aws-node",
				Image: "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2", Env: stockEnv}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Karpenter's settings (v0.32 and before) in its own namespace, reservedENIs 2.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("karpenter").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: clusterread.KarpenterSettingsCM},
		Data: map[string]string{clusterread.KarpenterSettingsKey: "2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// 600 ENIConfigs; the one of the nodes' zone sorts last, on the last page.
	env.InstallCRD(t, filepath.Join("testdata", "eniconfig-crd.yaml"), clusterread.GVRENIConfig)
	if err := testenv.Parallel(eniConfigCount-1, 8, func(i int) error {
		u := map[string]any{"apiVersion": "crd.k8s.amazonaws.com/v1alpha1", "kind": "ENIConfig",
			"metadata": map[string]any{"name": fmt.Sprintf("eniconfig-%03d", i)},
			"spec":     map[string]any{"subnet": fmt.Sprintf("subnet-%03d", i), "securityGroups": []any{"sg-1"}}}
		_, err := dyn.Resource(clusterread.GVRENIConfig).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	env.CreateENIConfig(t, "us-east-1a", "subnet-pods-a", "sg-1")

	// Two nodes of a Karpenter node pool, not Ready (no kubelet is asked).
	for i := range 2 {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("ip-10-0-0-%d.ec2.internal", i+1),
			Labels: map[string]string{rules.LabelKarpenterNodePool: "default", "node.kubernetes.io/instance-type": "m5.large",
				corev1.LabelTopologyZone: "us-east-1a"}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The identity both run as reads everything they read but Deployments' LIST and /metrics.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agreement-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods", "events", "configmaps", "namespaces"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"list"}},
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"list"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}, Verbs: []string{"list"}},
		{APIGroups: []string{"crd.k8s.amazonaws.com"}, Resources: []string{"eniconfigs"}, Verbs: []string{"list"}},
		{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"flowschemas"}, Verbs: []string{"get"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}, Verbs: []string{"create"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := env.BoundServiceAccount(t, "agreement", "reader", role.Name, "agreement-reader")

	// doctor, as the CLI runs it but for the chunk size.
	clients, err := kube.NewClients(kube.Configure(cfg, "doctor", kube.RateLimit{}))
	if err != nil {
		t.Fatal(err)
	}
	o := doctor.Options{ChunkSize: chunk, SkipCNIMetrics: true}
	f, err := doctor.Gather(ctx, doctor.DepsFrom(clients, nil), o.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	// plan, for one more node of the pool.
	in, err := gather.Gather(ctx, cfg, gather.Options{AWSNodeNamespace: "kube-system", AWSNodeName: "aws-node", ChunkSize: chunk},
		[]gather.Request{{Nodegroup: "default", Add: 1, PodsPerNode: 10}})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(in.Notes, "\n")
	t.Logf("plan's notes:\n%s", notes)

	t.Run("aws-node environment", func(t *testing.T) {
		if len(f.AWSNode.Unread) != 0 || strings.Contains(notes, "MY_NODE_NAME") || strings.Contains(notes, "MY_POD_NAME") {
			t.Errorf("the fieldRef variables are no setting: doctor left %q unread, plan noted:\n%s", f.AWSNode.Unread, notes)
		}
		if fmt.Sprint(f.AWSNode.Env) != fmt.Sprint(in.Env) {
			t.Errorf("doctor read %v, plan %v", f.AWSNode.Env, in.Env)
		}
	})
	t.Run("Karpenter", func(t *testing.T) {
		k := f.Karpenter
		const source = "configmap/karpenter/karpenter-global-settings aws.reservedENIs=2"
		if !k.Found || k.ReservedENIs != 2 || k.Source != source {
			t.Errorf("doctor: %+v, want reservedENIs 2 from %s", k, source)
		}
		// Custom networking takes one of the two reserved ENIs already: one more is kept from pods.
		if g := in.Groups[0]; g.ReservedENIs != 1 || !strings.Contains(notes, "("+source+")") {
			t.Errorf("plan: group reserves %d ENIs, want 1 from %s; notes:\n%s", g.ReservedENIs, source, notes)
		}
	})
	t.Run("forbidden reads", func(t *testing.T) {
		for fact, reason := range map[doctor.Fact]string{
			doctor.FactKarpenter: "needs list on deployments",
			doctor.FactMetrics:   "needs get on the non-resource URL /metrics",
		} {
			if m, missing := f.Missing[fact]; !missing || m.Reason != reason {
				t.Errorf("doctor's %s: %+v (missing %v), want missing: %s", fact, m, missing, reason)
			}
			if !strings.Contains(notes, reason) {
				t.Errorf("plan's notes do not say %q:\n%s", reason, notes)
			}
		}
	})
	t.Run("ENIConfigs", func(t *testing.T) {
		items := f.ENIConfigs.Items
		if len(items) != eniConfigCount || !slices.ContainsFunc(items, func(c doctor.ENIConfig) bool { return c.Name == "us-east-1a" && c.Subnet == "subnet-pods-a" }) {
			t.Errorf("doctor read %d ENIConfigs (served %v), want %d with us-east-1a's", len(items), f.ENIConfigs.Served, eniConfigCount)
		}
		pl := in.Groups[0].Placements
		if len(pl) != 1 || pl[0].ENIConfig != "us-east-1a" || pl[0].PodSubnet != "subnet-pods-a" {
			t.Errorf("plan's placements %+v, want ENIConfig us-east-1a with subnet-pods-a", pl)
		}
	})
}
