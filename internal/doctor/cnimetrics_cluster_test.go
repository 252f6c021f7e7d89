package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/kubeletstub"
)

// startIPAMD serves ipamd /metrics from ns, one endpoint per port (0: any), stopped when the
// test ends.
func startIPAMD(t testing.TB, ns *kubeletstub.Netns, ports []int, body func(i int) []byte) *kubeletstub.Server {
	t.Helper()
	srv, err := kubeletstub.StartIPAMD(ns, ports, body)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// testNamespace creates a namespace for a test's pods and removes it when the test ends. No
// kubelet confirms the deletion of a bound pod and no namespace controller runs here: the pods
// go at once, then the namespace is finalized as that controller would, so that a second pass
// (-count=2) can create content in it again.
func testNamespace(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	if err := kubeletsim.EnsureNamespace(ctx, admin, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = admin.CoreV1().Pods(ns).DeleteCollection(bg, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		_ = admin.CoreV1().Events(ns).DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = admin.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
		if n, err := admin.CoreV1().Namespaces().Get(bg, ns, metav1.GetOptions{}); err == nil {
			n.Spec.Finalizers = nil
			_, _ = admin.CoreV1().Namespaces().Finalize(bg, n, metav1.UpdateOptions{})
			_ = admin.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
		}
		_ = wait.PollUntilContextTimeout(bg, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}

// createAWSNodePod does what the DaemonSet controller and the kubelet do for ds on node (neither
// runs here), and deletes the pod when the test ends: see newAWSNodePod.
func createAWSNodePod(ctx context.Context, t *testing.T, c kubernetes.Interface, ds *appsv1.DaemonSet, node, ip string, port int, ready bool) *corev1.Pod {
	t.Helper()
	p, err := newAWSNodePod(ctx, c, ds, node, ip, port, ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return p
}

// newAWSNodePod creates a pod from ds's template, owned by it and bound to node, then writes its
// status: Running at ip (aws-node is hostNetwork: the node's address), Ready or not. port, when
// not 0, replaces the aws-node container's "metrics" port, so that several simulated nodes share
// one namespace address.
func newAWSNodePod(ctx context.Context, c kubernetes.Interface, ds *appsv1.DaemonSet, node, ip string, port int, ready bool) (*corev1.Pod, error) {
	tmpl := ds.Spec.Template.DeepCopy()
	p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	p.Name, p.Namespace = ds.Name+"-"+strings.ReplaceAll(node, ".", "-"), ds.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	p.Spec.NodeName, p.Spec.HostNetwork = node, true
	if ctr := clusterread.AWSNodeContainer(p.Spec.Containers); ctr != nil && port != 0 {
		ctr.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(port)}}
	}
	// The ServiceAccount admission plugin wants the pod's account; no controller makes "default".
	if err := kubeletsim.EnsureNamespace(ctx, c, p.Namespace); err != nil {
		return nil, err
	}
	created, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: kubeletsim.PodFieldManager})
	if err != nil {
		return nil, err
	}
	now := metav1.Now()
	readiness := corev1.ConditionFalse
	if ready {
		readiness = corev1.ConditionTrue
	}
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: ip, StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: readiness, LastTransitionTime: now},
		},
	}
	return c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: kubeletsim.PodFieldManager})
}

// cniFindings are the findings of the cni-metrics section (with others, also of the aws-node
// section and any warning or error of another section) about the resources keep accepts, as
// "CODE:severity" by resource.
func cniFindings(rep *findings.Report, keep func(string) bool, others bool) map[string][]string {
	out := map[string][]string{}
	for _, f := range rep.Findings() {
		if !keep(f.Resource) {
			continue
		}
		if f.Section == SectionCNIMetrics || others && (f.Section == SectionAWSNode || f.Severity >= findings.Warning) {
			out[f.Resource] = append(out[f.Resource], f.Code+":"+f.Severity.String())
		}
	}
	return out
}

// stockManifest reads the DaemonSet and ServiceAccount of an upstream VPC CNI manifest
// (testdata/vpc-cni, committed unchanged below a header naming the tag and commit).
func stockManifest(t *testing.T, file string) (*appsv1.DaemonSet, *corev1.ServiceAccount) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "vpc-cni", file))
	if err != nil {
		t.Fatal(err)
	}
	var ds *appsv1.DaemonSet
	var sa *corev1.ServiceAccount
	for i, doc := range bytes.Split(raw, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s document %d: %v", file, i, err)
		}
		switch meta.Kind {
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			err = yaml.UnmarshalStrict(doc, ds)
		case "ServiceAccount":
			sa = &corev1.ServiceAccount{}
			err = yaml.UnmarshalStrict(doc, sa)
		}
		if err != nil {
			t.Fatalf("%s document %d (%s): %v", file, i, meta.Kind, err)
		}
	}
	if ds == nil || sa == nil {
		t.Fatalf("%s: no DaemonSet or ServiceAccount", file)
	}
	return ds, sa
}

// TestDoctorStockAWSNode runs doctor on a healthy cluster with the aws-node DaemonSet of each
// VPC CNI release EKS supports, exactly as its upstream manifest ships it (config/master/
// aws-k8s-cni.yaml), a Ready node whose kubelet is configured as AWS Support recommends, and the
// node's aws-node pod serving healthy ipamd metrics on its stock port (61678) through the real pod
// proxy: no warning and no error anywhere about them, no NK412 for MY_NODE_NAME/MY_POD_NAME
// (fieldRef) and no NK403 for the default WARM_PREFIX_TARGET=1.
func TestDoctorStockAWSNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	sv := serverVersion(t, admin)
	node := "ip-10-65-0-1.ec2.internal"

	tuned := kubeletDefaults(29)
	tuned["registryPullQPS"], tuned["registryBurst"], tuned["serializeImagePulls"] = 50, 100, false
	// The kubelet and ipamd answer at the node's address, ipamd on its stock port: aws-node is
	// hostNetwork, so its pod IP is the node's.
	ns, _ := startKubelet(ctx, t, kubeletsim.Config{
		Name: node, InstanceType: "m5.large", MaxPods: 29, KubeletVersion: fmt.Sprintf("v%d.%d.0-eks-1", sv.Major(), sv.Minor()),
	}, tuned)
	ipamd := startIPAMD(t, ns, []int{kubeletstub.IPAMDMetricsPort}, func(int) []byte { return ipamdMetricsBody(t, healthyIPAMD) })

	for _, file := range []string{"aws-k8s-cni-v1.20.5.yaml", "aws-k8s-cni-v1.21.2.yaml", "aws-k8s-cni-v1.22.4.yaml", "aws-k8s-cni-v1.23.0.yaml"} {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			ds, sa := stockManifest(t, file)
			if _, err := admin.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = admin.CoreV1().ServiceAccounts(sa.Namespace).Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
			})
			created, err := admin.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = admin.AppsV1().DaemonSets(ds.Namespace).Delete(context.Background(), ds.Name, metav1.DeleteOptions{})
			})
			ep := ipamd.Endpoints()[0]
			before := ep.Hits()
			createAWSNodePod(ctx, t, admin, created, node, ns.NSIP, 0, true)

			rep, err := runOn(ctx, env.AdminConfig(), Options{Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			got := cniFindings(rep, func(res string) bool {
				return strings.Contains(res, node) || strings.Contains(res, "aws-node") || res == "pods" || res == "pods/proxy"
			}, true)
			for res, codes := range got {
				for _, c := range codes {
					if strings.HasSuffix(c, ":warning") || strings.HasSuffix(c, ":error") || strings.HasPrefix(c, "NK412:") || strings.HasPrefix(c, "NK403:") || strings.HasPrefix(c, "NK74") {
						t.Errorf("%s: %s on the stock manifest", res, c)
					}
				}
			}
			if n := ep.Hits() - before; n != 1 {
				t.Errorf("ipamd metrics requests through the pod proxy: %d, want 1", n)
			}
			if s := rep.Stats[StatCNIMetricsRequests]; s != 1 {
				t.Errorf("stat %s = %d, want 1", StatCNIMetricsRequests, s)
			}
		})
	}
}

// sectionReport is the findings of one section about the resources keep accepts, as a report of
// its own (for the golden text).
func sectionReport(rep *findings.Report, spec findings.SectionSpec, keep func(string) bool) *findings.Report {
	out := findings.NewReport("doctor", "test-cluster", time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), spec)
	for _, s := range rep.Sections() {
		if s.Name != spec.Name {
			continue
		}
		for _, f := range s.Findings {
			if keep(f.Resource) {
				out.Add(f)
			}
		}
	}
	return out
}

// TestDoctorCNIMeasuredCauses gives each cause of stuck pods its own node, whose aws-node pod's
// ipamd (a stub serving real-format metrics, read through the real API server's pod proxy) shows
// that cause: the pool full at maxPods, the subnet out of addresses, EC2 throttling, an aws-node
// pod that is not ready, none at all, and healthy figures. The same cluster is checked healthy
// first: every aws-node pod Ready with a healthy ipamd and no pod stuck gets none of these
// findings.
func TestDoctorCNIMeasuredCauses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	ds := env.CreateAWSNode(t, "aws-node-causes", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.0-eksbuild.1", map[string]string{
		"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1",
	})

	// t3.small: 3 ENIs of 4 addresses, so ipamd holds at most 9 pod addresses (awscni_ip_max) and
	// the EKS max pods is 11; the node of the full pool was given 20.
	const prefix = "ip-10-66-0-"
	type node struct {
		name    string
		maxPods string
		healthy ipamdFigures // its ipamd while the cluster is healthy
		failing ipamdFigures // and once pods are stuck
		pod     string       // what becomes of its aws-node pod: "ready", "not-ready", "gone"
	}
	small := ipamdFigures{total: 6, assigned: 2, maxIPs: 9, enis: 2, maxENIs: 3}
	grow := func(code, api string, n int) ipamdFigures {
		return ipamdFigures{total: 3, assigned: 3, maxIPs: 9, enis: 1, maxENIs: 3, noAddress: 5, ec2Errors: map[[2]string]int{{api, code}: n}}
	}
	nodes := []node{
		{name: prefix + "1.ec2.internal", maxPods: "11", healthy: small, failing: small, pod: "ready"},
		{name: prefix + "2.ec2.internal", maxPods: "20", healthy: small, failing: ipamdFigures{total: 9, assigned: 9, maxIPs: 9, enis: 3, maxENIs: 3, noAddress: 14}, pod: "ready"},
		{name: prefix + "3.ec2.internal", maxPods: "11", healthy: small, failing: grow("InsufficientFreeAddressesInSubnet", "CreateNetworkInterface", 6), pod: "ready"},
		{name: prefix + "4.ec2.internal", maxPods: "11", healthy: small, failing: grow("RequestLimitExceeded", "AssignPrivateIpAddresses", 12), pod: "ready"},
		{name: prefix + "5.ec2.internal", maxPods: "11", healthy: small, failing: small, pod: "not-ready"},
		{name: prefix + "6.ec2.internal", maxPods: "11", healthy: small, failing: small, pod: "gone"},
		{name: prefix + "7.ec2.internal", maxPods: "11", healthy: small, failing: small, pod: "ready"},
	}
	ns := newNetns(t)
	ipamd := startIPAMD(t, ns, make([]int, len(nodes)), func(i int) []byte { return ipamdMetricsBody(t, nodes[i].healthy) })
	eps := ipamd.Endpoints()
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		nd := podnetNode(n.name, "Amazon Linux 2023.5.20240701", map[string]string{"eks.amazonaws.com/nodegroup": "mng-al2023"})
		nd.Status.Capacity[corev1.ResourcePods] = resource.MustParse(n.maxPods)
		nd.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ns.NSIP}}
		createNode(ctx, t, admin, nd)
		pods[i] = createAWSNodePod(ctx, t, admin, ds, n.name, ns.NSIP, eps[i].Port, true)
	}
	team := "cnimetrics-team"
	testNamespace(ctx, t, admin, team)
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	opts := Options{AWSNodeName: ds.Name, Workers: 4, CNIMetricsWorkers: 3, Now: func() time.Time { return base }}
	keep := func(res string) bool { return strings.Contains(res, prefix) }

	t.Run("healthy", func(t *testing.T) {
		// Progress as for configz: 0 first, then one call per Ready aws-node pod, in order.
		var calls [][2]int
		o := opts
		o.CNIMetricsProgress = func(done, total int) { calls = append(calls, [2]int{done, total}) }
		rep, err := runOn(ctx, env.AdminConfig(), o)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range calls {
			if c != [2]int{i, len(nodes)} {
				t.Errorf("progress call %d: %v, want [%d %d] (all calls %v)", i, c, i, len(nodes), calls)
				break
			}
		}
		if len(calls) != len(nodes)+1 {
			t.Errorf("%d progress calls, want %d", len(calls), len(nodes)+1)
		}
		if got := cniFindings(rep, keep, false); len(got) != 0 {
			t.Fatalf("a healthy cluster has findings: %v", got)
		}
		for i, ep := range eps {
			if ep.Hits() != 1 {
				t.Errorf("%s: %d metrics requests, want 1", nodes[i].name, ep.Hits())
			}
		}
	})

	// The failures: each ipamd now reports its cause, one aws-node pod stops being ready, one is
	// deleted, and every node but the first has pods stuck in ContainerCreating.
	for i, n := range nodes {
		eps[i].SetBody(ipamdMetricsBody(t, n.failing))
		switch n.pod {
		case "gone":
			if err := admin.CoreV1().Pods(pods[i].Namespace).Delete(ctx, pods[i].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
		case "not-ready":
			p := pods[i].DeepCopy()
			for j := range p.Status.Conditions {
				if p.Status.Conditions[j].Type == corev1.PodReady {
					p.Status.Conditions[j].Status, p.Status.Conditions[j].Reason = corev1.ConditionFalse, "ContainersNotReady"
				}
			}
			if _, err := admin.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: kubeletsim.PodFieldManager}); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			continue
		}
		for j := 0; j < 2; j++ {
			if _, err := kubeletsim.CreateStuckPod(ctx, admin, kubeletsim.PodSpec{Namespace: team, Name: fmt.Sprintf("api-%d-%d", i, j), Node: n.name, ScheduledAt: base.Add(-time.Duration(10+i+j) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hitsBefore := make([]int64, len(eps))
	for i, ep := range eps {
		hitsBefore[i] = ep.Hits()
	}
	rep, err := runOn(ctx, env.AdminConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := cniFindings(rep, keep, false)
	want := map[string][]string{
		"node/" + nodes[1].name: {"NK743:error", "NK748:info"},
		"node/" + nodes[2].name: {"NK742:info", "NK744:error", "NK748:info"},
		"node/" + nodes[3].name: {"NK742:info", "NK745:error", "NK748:info"},
		"node/" + nodes[4].name: {"NK746:error"},
		"node/" + nodes[5].name: {"NK746:error"},
		"node/" + nodes[6].name: {"NK747:warning"},
	}
	for res, codes := range want {
		if !has(got[res], codes...) || len(got[res]) != len(codes) {
			t.Errorf("%s: got %v, want %v", res, got[res], codes)
		}
	}
	for res := range got {
		if _, ok := want[res]; !ok {
			t.Errorf("%s: unexpected %v", res, got[res])
		}
	}
	for i, ep := range eps {
		wantHits := int64(1)
		if nodes[i].pod != "ready" {
			wantHits = 0 // no request to a pod that is not ready or gone
		}
		if n := ep.Hits() - hitsBefore[i]; n != wantHits {
			t.Errorf("%s (%s): %d metrics requests, want %d", nodes[i].name, nodes[i].pod, n, wantHits)
		}
	}
	if m := ipamd.MaxInFlight(); m > int64(opts.CNIMetricsWorkers) {
		t.Errorf("%d metrics requests in flight at once, more than --cni-metrics-workers %d", m, opts.CNIMetricsWorkers)
	}
	var text bytes.Buffer
	if err := findings.PrintText(&text, sectionReport(rep, sectionCNIMetrics, keep), findings.PrintOptions{MaxPerRule: 20, Catalog: catalog}); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "cnimetrics.txt", text.Bytes())
	// The pod-networking section's groups of the same stuck pods name the cause measured on
	// their nodes, pointing at the findings above.
	text.Reset()
	keepNS := func(res string) bool { return keep(res) || res == "namespace/"+team }
	if err := findings.PrintText(&text, podnetReport(rep, keepNS), findings.PrintOptions{MaxPerRule: 20, Catalog: catalog}); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "cnimetrics-podnet.txt", text.Bytes())
}

// TestDoctorCNIMetricsPermissions: without list on pods, or without get on pods/proxy, in the
// aws-node namespace, the CNI section is one skipped finding naming the verb and resource, no
// metrics request reaches ipamd, and the run succeeds.
func TestDoctorCNIMetricsPermissions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	ds := env.CreateAWSNode(t, "aws-node-perm", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.0-eksbuild.1", map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com"})
	node := "ip-10-67-0-1.ec2.internal"
	createNode(ctx, t, admin, podnetNode(node, "Amazon Linux 2023.5.20240701", nil))
	ns := newNetns(t)
	ipamd := startIPAMD(t, ns, []int{0}, func(int) []byte { return ipamdMetricsBody(t, healthyIPAMD) })
	createAWSNodePod(ctx, t, admin, ds, node, ns.NSIP, ipamd.Endpoints()[0].Port, true)

	getDaemonSets := rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}}
	listPods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}
	tests := []struct {
		user  string
		rules []rbacv1.PolicyRule
		want  string
	}{
		{"doctor-no-pod-proxy", []rbacv1.PolicyRule{getDaemonSets, listPods}, "NK741 pods/proxy skipped: needs get on pods/proxy in kube-system"},
		{"doctor-no-pod-list", []rbacv1.PolicyRule{getDaemonSets}, "NK741 pods skipped: needs list on pods in kube-system"},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			grantRules(t, tc.user, tc.rules...)
			rep, err := runOn(ctx, env.UserConfig(tc.user), Options{AWSNodeName: ds.Name})
			if err != nil {
				t.Fatalf("the run must not fail for missing permissions: %v", err)
			}
			// Without pods the measured cause is skipped too (NK747, "needs list on pods").
			var cni []string
			found := false
			for _, f := range rep.Findings() {
				if f.Section == SectionCNIMetrics {
					cni = append(cni, f.Code+" "+f.Resource+" "+f.Message)
					found = found || strings.HasPrefix(cni[len(cni)-1], tc.want)
					if f.Severity != findings.Skipped {
						t.Errorf("not skipped: %s", cni[len(cni)-1])
					}
				}
			}
			if !found {
				t.Errorf("cni-metrics findings %q, want one starting %q", cni, tc.want)
			}
			if n := ipamd.TotalHits(); n != 0 {
				t.Errorf("ipamd got %d metrics requests without permission", n)
			}
		})
	}
}

// TestDoctorCNIMetricsRefused (issue 31 items 1 and 5): whatever answers on a node's ipamd port
// through the real pod proxy, a hostile answer is refused within ipamdmetrics' bounds, that node
// gets NK741 with the reason, and the run goes on to read and judge the others. One series of
// 20,000 labels cost prometheus/common's parser minutes of CPU; NaN counters printed as
// "address pool -9223372036854775808"; 9e18 counters overflowed the sums.
func TestDoctorCNIMetricsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	ds := env.CreateAWSNode(t, "aws-node-refused", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.0-eksbuild.1", map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com"})
	var labels strings.Builder
	labels.WriteString("awscni_aws_api_error_count{")
	for i := range 20000 {
		fmt.Fprintf(&labels, "l%d=\"v\",", i)
	}
	labels.WriteString("} 1\n")
	healthy := ipamdMetricsBody(t, healthyIPAMD)
	nodes := []struct {
		name string
		body []byte
		want string // NK741's reason, "" for none
	}{
		{"ip-10-68-0-1.ec2.internal", []byte(labels.String()), "metrics refused: line 1 is longer than 4096 bytes"},
		{"ip-10-68-0-2.ec2.internal", append(append([]byte{}, healthy...), "awscni_total_ip_addresses NaN\n"...), "awscni_total_ip_addresses is NaN: not a count"},
		{"ip-10-68-0-3.ec2.internal", append(append([]byte{}, healthy...),
			`awscni_aws_api_error_count{api="CreateNetworkInterface",error="InsufficientFreeAddressesInSubnet"} 9e18`+"\n"...), "beyond any count ipamd keeps"},
		{"ip-10-68-0-4.ec2.internal", healthy, ""},
	}
	ns := newNetns(t)
	ipamd := startIPAMD(t, ns, make([]int, len(nodes)), func(i int) []byte { return nodes[i].body })
	for i, n := range nodes {
		createNode(ctx, t, admin, podnetNode(n.name, "Amazon Linux 2023.5.20240701", nil))
		createAWSNodePod(ctx, t, admin, ds, n.name, ns.NSIP, ipamd.Endpoints()[i].Port, true)
	}
	rep, err := runOn(ctx, env.AdminConfig(), Options{AWSNodeName: ds.Name, CNIMetricsWorkers: 2})
	if err != nil {
		t.Fatalf("a hostile ipamd must not fail the run: %v", err)
	}
	for _, n := range nodes {
		var got []string
		for _, f := range rep.Findings() {
			if f.Resource == "node/"+n.name && f.Code == RuleCNIMetricsUnavailable.Code {
				got = append(got, f.Message)
			}
		}
		switch {
		case n.want == "" && len(got) != 0:
			t.Errorf("%s: NK741 %q for a healthy ipamd", n.name, got)
		case n.want != "" && (len(got) != 1 || !strings.Contains(got[0], n.want)):
			t.Errorf("%s: NK741 %q, want one saying %q", n.name, got, n.want)
		}
	}
}
