package doctor

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/golden"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

// createAddonDeployment creates a Deployment in kube-system with one container and its pods'
// labels, and writes the status its controller would (no controller runs here).
func createAddonDeployment(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, meta, pod map[string]string, image string, replicas, available int32) {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: meta},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: pod},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}}},
		},
	}
	created, err := c.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.AppsV1().Deployments(d.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	setDeploymentStatus(ctx, t, c, created, available)
}

func setDeploymentStatus(ctx context.Context, t *testing.T, c kubernetes.Interface, d *appsv1.Deployment, available int32) {
	t.Helper()
	d, err := c.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: available, AvailableReplicas: available, UnavailableReplicas: r - available}
	if _, err := c.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
}

// setDaemonSetStatus writes the status the DaemonSet controller would for desired pods of which
// available are available.
func setDaemonSetStatus(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, desired, available int32) {
	t.Helper()
	ds, err := c.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CurrentNumberScheduled: desired, DesiredNumberScheduled: desired,
		NumberReady: available, NumberAvailable: available, NumberUnavailable: desired - available, UpdatedNumberScheduled: desired}
	if _, err := c.AppsV1().DaemonSets(metav1.NamespaceSystem).UpdateStatus(ctx, ds, metav1.UpdateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
}

// addonPod creates a Running add-on pod in kube-system on node.
func addonPod(ctx context.Context, t *testing.T, c kubernetes.Interface, name, node, ip string, labels map[string]string, since time.Time) *corev1.Pod {
	t.Helper()
	p, err := kubeletsim.CreateRunningPod(ctx, c, kubeletsim.PodSpec{Namespace: metav1.NamespaceSystem, Name: name, Node: node, HostNetwork: true, Labels: labels, ScheduledAt: since}, ip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(metav1.NamespaceSystem).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return p
}

// restartPod reports p's container as the kubelet does after restarts restarts, the last one
// ending with reason and exit code at when; crashLoop leaves it waiting in CrashLoopBackOff.
func restartPod(ctx context.Context, t *testing.T, c kubernetes.Interface, p *corev1.Pod, reason string, code, restarts int32, at time.Time, crashLoop bool) {
	t.Helper()
	p, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := &p.Status.ContainerStatuses[0]
	cs.RestartCount = restarts
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, StartedAt: metav1.NewTime(at.Add(-time.Minute)), FinishedAt: metav1.NewTime(at)}
	if crashLoop {
		cs.Ready = false
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}}
	}
	if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: kubeletsim.PodFieldManager}); err != nil {
		t.Fatal(err)
	}
}

// volatileServer hides the control plane's version in the golden file: the test judges the VPC
// CNI against whatever minor it runs.
var volatileServer = regexp.MustCompile(`(Kubernetes )v1\.[0-9]+\.[0-9]+[^\s:]*|(the cluster runs )1\.[0-9]+`)

// TestDoctorAddons builds, on a real control plane, a cluster whose add-ons are healthy: aws-node
// (v1.20.1, the newest version either AWS table asks for), kube-proxy and CoreDNS with every pod
// available, and a kubelet serving its configuration through the node proxy; no section finding.
// Then each problem: the kubelet's "pull QPS exceeded" events for that node, an aws-node with no
// available pod and an old image, CoreDNS with one of two replicas unavailable and OOMKilled,
// kube-proxy in CrashLoopBackOff, and Karpenter v1.0.6 with nodekeeper's controller beside it.
func TestDoctorAddons(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	if err := kubeletsim.EnsureNamespace(ctx, admin, metav1.NamespaceSystem); err != nil {
		t.Fatal(err)
	}
	node := "ip-10-75-0-1.ec2.internal"
	startKubelet(ctx, t, kubeletsim.Config{Name: node, InstanceType: "m5.large", MaxPods: 29}, kubeletDefaults(29))

	base := time.Now().Add(time.Hour).Truncate(time.Second)
	awsLabels := map[string]string{"k8s-app": "aws-node"}
	env.CreateAWSNode(t, "aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.1-eksbuild.3", map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com"})
	setDaemonSetStatus(ctx, t, admin, "aws-node", 1, 1)
	addonPod(ctx, t, admin, "aws-node-x1", node, "10.75.0.1", awsLabels, base.Add(-2*time.Hour))

	// kube-proxy and CoreDNS of the versions the EKS tables list for the control plane's minor.
	proxyTag, dnsTag, rows := currentAddonTags(serverMinor(t, admin))
	proxyLabels := map[string]string{"k8s-app": "kube-proxy"}
	if _, err := admin.AppsV1().DaemonSets(metav1.NamespaceSystem).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: metav1.NamespaceSystem},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: proxyLabels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: proxyLabels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-proxy", Image: "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:" + proxyTag}}},
		}},
	}, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.AppsV1().DaemonSets(metav1.NamespaceSystem).Delete(context.Background(), "kube-proxy", metav1.DeleteOptions{})
	})
	setDaemonSetStatus(ctx, t, admin, "kube-proxy", 1, 1)
	proxyPod := addonPod(ctx, t, admin, "kube-proxy-x1", node, "10.75.0.1", proxyLabels, base.Add(-2*time.Hour))

	dnsLabels := map[string]string{"k8s-app": "kube-dns"}
	createAddonDeployment(ctx, t, admin, "coredns", map[string]string{"eks.amazonaws.com/component": "coredns"}, dnsLabels,
		"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/coredns:"+dnsTag, 2, 2)
	dns1 := addonPod(ctx, t, admin, "coredns-x1", node, "10.75.0.1", dnsLabels, base.Add(-2*time.Hour))
	addonPod(ctx, t, admin, "coredns-x2", node, "10.75.0.1", dnsLabels, base.Add(-2*time.Hour))

	opts := Options{Workers: 2, Now: func() time.Time { return base }}
	section := func(rep *findings.Report) *findings.Report {
		out := findings.NewReport("doctor", "test-cluster", time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), sectionAddons)
		for _, f := range rep.Findings() {
			// A control plane newer than the EKS tables' rows: kube-proxy and CoreDNS carry that
			// info (TestDoctorAddonVersions judges it); the rest of the section is the same.
			if !rows && (f.Code == RuleKubeProxyVersion.Code || f.Code == RuleCoreDNSVersion.Code) && strings.Contains(f.Message, "has no row") {
				continue
			}
			if f.Section == SectionAddons {
				out.Add(f)
			}
		}
		return out
	}

	t.Run("healthy", func(t *testing.T) {
		rep, err := runOn(ctx, env.AdminConfig(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if fs := section(rep).Findings(); len(fs) != 0 {
			t.Fatalf("healthy add-ons have findings: %v", fs)
		}
		if s := findingstest.Section(rep, SectionAddons); s == nil || s.Checked < 4 {
			t.Errorf("the add-ons were not checked: %+v", s)
		}
	})

	// Refused pulls: three pods' images on the node, one of them refused twice.
	for i, pod := range []string{"web-1", "web-2", "web-3"} {
		e := pullEvent("default", pod, node, strings.Replace(pullQPSMessage, "busybox:1.36", "app:"+pod, 1), int32(1+i%2), base.Add(-time.Duration(3-i)*time.Minute))
		if _, err := admin.CoreV1().Events("default").Create(ctx, e, metav1.CreateOptions{FieldManager: kubeletsim.PodFieldManager}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoreV1().Events("default").Delete(context.Background(), e.Name, metav1.DeleteOptions{})
		})
	}
	// Another image failure of the kubelet: not the limiter's.
	other := pullEvent("default", "web-4", node, `Failed to pull image "example.com/app:missing": rpc error: code = NotFound desc = failed to pull and unpack image "example.com/app:missing": not found`, 1, base)
	if _, err := admin.CoreV1().Events("default").Create(ctx, other, metav1.CreateOptions{FieldManager: kubeletsim.PodFieldManager}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Events("default").Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})

	// aws-node: nothing available, and an image older than AWS recommends for any recent minor.
	ds, err := admin.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "aws-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.16.0-eksbuild.1"
	if _, err := admin.AppsV1().DaemonSets(metav1.NamespaceSystem).Update(ctx, ds, metav1.UpdateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	setDaemonSetStatus(ctx, t, admin, "aws-node", 1, 0)
	// CoreDNS: one of two replicas unavailable, OOMKilled 5 minutes ago; kube-proxy crash-looping.
	dns, err := admin.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setDeploymentStatus(ctx, t, admin, dns, 1)
	restartPod(ctx, t, admin, dns1, "OOMKilled", 137, 3, base.Add(-5*time.Minute), false)
	restartPod(ctx, t, admin, proxyPod, "Error", 1, 12, base.Add(-3*time.Hour), true)

	// Karpenter v1.0.6 as its Helm chart labels it, and nodekeeper's controller beside it.
	createAddonDeployment(ctx, t, admin, "karpenter", map[string]string{labelAppName: "karpenter", labelAppVersion: "1.0.6"}, map[string]string{labelAppName: "karpenter"},
		"public.ecr.aws/karpenter/controller:1.0.6@sha256:1a1e1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f", 2, 2)
	createAddonDeployment(ctx, t, admin, "nodekeeper-controller", map[string]string{labelAppName: "nodekeeper"}, map[string]string{labelAppName: "nodekeeper"},
		"ghcr.io/nodekeeper/nodekeeper:v0.9.0", 2, 2)

	rep, err := runOn(ctx, env.AdminConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]findings.Finding{}
	for _, f := range section(rep).Findings() {
		key := f.Code + " " + f.Severity.String() + " " + f.Resource
		if _, dup := got[key]; dup {
			t.Errorf("two findings %s", key)
		}
		got[key] = f
	}
	want := map[string][]string{ // finding -> texts its message and evidence must contain
		"NK751 warning node/" + node: {"4 image pulls refused", "3 pod images", "registryPullQPS 5, registryBurst 10", "up to 29 pods",
			"set registryPullQPS 50 and registryBurst 29", "--registry-qps=50 --registry-burst=29", `default/web-1: Failed to pull image "public.ecr.aws/docker/library/app:web-1": pull QPS exceeded`},
		"NK752 error daemonset/kube-system/aws-node":     {"1 of 1 aws-node pods unavailable (0 available)"},
		"NK752 warning deployment/kube-system/coredns":   {"1 of 2 coredns pods unavailable (1 available)"},
		"NK753 warning deployment/kube-system/coredns":   {"1 of 2 coredns pods restarting", "container app: last terminated OOMKilled, exit code 137: 1 pod, 3 restarts, last 5m ago", "pod kube-system/coredns-x1 on " + node},
		"NK753 warning daemonset/kube-system/kube-proxy": {"1 of 1 kube-proxy pods restarting", "container app: last terminated Error, exit code 1: 1 pod, 12 restarts, last 3h00m ago"},
		"NK754 warning daemonset/kube-system/aws-node":   {"VPC CNI v1.16.0 on Kubernetes", "oldest recommended version", "v1.17.1", "Amazon EKS add-on version"},
		"NK755 warning deployment/kube-system/karpenter": {"Karpenter 1.0.6 (label app.kubernetes.io/version)", "nodekeeper's controller runs beside it (deployment/kube-system/nodekeeper-controller)", "zombie (NK312)"},
	}
	for key, texts := range want {
		f, ok := got[key]
		if !ok {
			t.Errorf("no finding %s", key)
			continue
		}
		all := f.Message + "\n" + strings.Join(f.Evidence, "\n")
		for _, s := range texts {
			if !strings.Contains(all, s) {
				t.Errorf("%s lacks %q:\n%s", key, s, all)
			}
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected finding %s: %s", key, got[key].Message)
		}
	}

	var text bytes.Buffer
	if err := findings.PrintText(&text, section(rep), findings.PrintOptions{MaxPerRule: 20, Catalog: catalog}); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/addons.txt", volatileServer.ReplaceAll(text.Bytes(), []byte("${1}${2}VERSION")))
	var js bytes.Buffer
	if err := findings.PrintJSON(&js, section(rep)); err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, "DoctorReport", js.Bytes())
}
