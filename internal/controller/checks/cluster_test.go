package checks_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/controller/checks"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/kubeletstub"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if args := os.Getenv(controllerArgsEnv); args != "" {
		os.Exit(runControllerChild(args))
	}
	// The two replicas' requests are audited: TestTwoReplicasOnlyTheLeaderChecks reads who checked.
	testenv.RunMain(m, testenv.MainOptions{Options: testenv.Options{AuditPolicy: auditReplicas}, BenchmarksStartTheirOwn: true, QuietKlog: true}, &env)
}

// waitFor polls cond until it holds; the limit only ends a test that is already failing.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*time.Minute, true,
		func(context.Context) (bool, error) { return cond() }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// ipamdBody is ipamd's /metrics in its own text format: the pool gauges and, for a node whose
// subnet is exhausted, the EC2 errors ipamd counts (awscni_aws_api_error_count, labelled by API
// and error code as amazon-vpc-cni-k8s pkg/awsutils publishes them).
func ipamdBody(t testing.TB, total, assigned int, subnetErrors int) []byte {
	t.Helper()
	reg := prometheus.NewRegistry()
	for name, v := range map[string]int{"awscni_total_ip_addresses": total, "awscni_assigned_ip_addresses": assigned,
		"awscni_ip_max": 9, "awscni_eni_allocated": 1, "awscni_eni_max": 3} {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name})
		g.Set(float64(v))
		reg.MustRegister(g)
	}
	apiErr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "awscni_aws_api_error_count", Help: "The number of times AWS API returns an error"}, []string{"api", "error"})
	if subnetErrors > 0 {
		apiErr.WithLabelValues("CreateNetworkInterface", "InsufficientFreeAddressesInSubnet").Add(float64(subnetErrors))
	}
	noAddr := prometheus.NewCounter(prometheus.CounterOpts{Name: "awscni_no_available_ip_addresses", Help: "no address"})
	noAddr.Add(float64(subnetErrors))
	reg.MustRegister(apiErr, noAddr)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// applyShippedRBAC creates the controller's service account with the RBAC the kustomize base and
// the checks component ship, unchanged, and returns the account's client configuration: the
// test runs with exactly the permissions an installation grants.
func applyShippedRBAC(ctx context.Context, t *testing.T) {
	t.Helper()
	admin := env.AdminClient()
	if err := kubeletsim.EnsureNamespace(ctx, admin, "nodekeeper"); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"deploy/kustomize/base/rbac.yaml", "deploy/kustomize/components/checks/rbac.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---")) {
			if err := createRBAC(ctx, admin, doc); err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
		}
	}
}

func createRBAC(ctx context.Context, c kubernetes.Interface, doc []byte) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	var err error
	switch meta.Kind {
	case "ServiceAccount":
		var o corev1.ServiceAccount
		if err = yaml.UnmarshalStrict(doc, &o); err == nil {
			_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
	case "Role":
		var o rbacv1.Role
		if err = yaml.UnmarshalStrict(doc, &o); err == nil {
			_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
	case "RoleBinding":
		var o rbacv1.RoleBinding
		if err = yaml.UnmarshalStrict(doc, &o); err == nil {
			_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
	case "ClusterRole":
		var o rbacv1.ClusterRole
		if err = yaml.UnmarshalStrict(doc, &o); err == nil {
			_, err = c.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
		}
	case "ClusterRoleBinding":
		var o rbacv1.ClusterRoleBinding
		if err = yaml.UnmarshalStrict(doc, &o); err == nil {
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
		}
	case "":
		return nil
	default:
		return fmt.Errorf("unexpected kind %s", meta.Kind)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func awsNodePodName(node string) string { return "aws-node-" + strings.ReplaceAll(node, ".", "-") }

// createAWSNodePod does for node what the DaemonSet controller and the kubelet would: ds's pod,
// bound to the node, Running and Ready at ip (aws-node is hostNetwork), its metrics port port.
func createAWSNodePod(ctx context.Context, c kubernetes.Interface, ds *appsv1.DaemonSet, node, ip string, port int) error {
	tmpl := ds.Spec.Template.DeepCopy()
	p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	p.Name, p.Namespace = awsNodePodName(node), ds.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	p.Spec.NodeName, p.Spec.HostNetwork = node, true
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "aws-node" {
			p.Spec.Containers[i].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(port)}}
		}
	}
	if err := kubeletsim.EnsureNamespace(ctx, c, p.Namespace); err != nil {
		return err
	}
	created, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: ip, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	_, err = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// gaugeValue reads one series of the loop's registry as a scrape would.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, label, value string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestStuckPodsSubnetExhaustion is issue 28's proof on the real control plane, with the RBAC the
// manifests ship: pods stuck on a node whose ipamd (a stub serving ipamd's metrics in their own
// format, read through the API server's pod proxy) reports EC2 refusing addresses for lack of
// free ones in the subnet. Within one check run nodekeeper_pods_stuck{cause="subnet"} counts
// them and a Warning PodsStuck Event is on that Node; once the subnet is fixed (ipamd has
// addresses again and the pods run), the next run's gauge is 0. The alert over the same series
// fires and resolves in internal/test/deploytest/testdata/alerts.test.yaml (promtool).
func TestStuckPodsSubnetExhaustion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	applyShippedRBAC(ctx, t)
	ds := env.CreateAWSNode(t, "aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.0-eksbuild.1", map[string]string{
		"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1",
	})

	ns, err := kubeletstub.New()
	if err != nil {
		t.Fatalf("the pod proxy test needs a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	ipamd, err := kubeletstub.StartIPAMD(ns, []int{0}, func(int) []byte { return ipamdBody(t, 3, 3, 6) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ipamd.Close() })
	ep := ipamd.Endpoints()[0]

	const nodeName = "ip-10-77-0-1.ec2.internal"
	if err := createBenchNode(ctx, admin, nodeName, "mng-checks", ns.NSIP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	if err := createAWSNodePod(ctx, admin, ds, nodeName, ns.NSIP, ep.Port); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(ds.Namespace).Delete(context.Background(), awsNodePodName(nodeName), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	const team = "checks-team"
	if err := kubeletsim.EnsureNamespace(ctx, admin, team); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var stuck []*corev1.Pod
	for i := range 3 {
		sp, err := kubeletsim.CreateStuckPod(ctx, admin, kubeletsim.PodSpec{Namespace: team, Name: fmt.Sprintf("api-%d", i), Node: nodeName, ScheduledAt: start.Add(-15 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		stuck = append(stuck, sp)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(team).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	})

	// The controller's own account, with the shipped RBAC only.
	cfg := env.ServiceAccount(t, "nodekeeper", "nodekeeper")
	deps, err := checks.NewDeps(cfg, nil, func() bool { return true }, false)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(start)
	deps.Clock = clk
	reg := prometheus.NewRegistry()
	runs := make(chan checks.Run, 4)
	loop, err := checks.New(deps, checks.Options{Registry: reg, Doctor: doctor.Options{AWSNodeName: ds.Name}, OnRun: func(r checks.Run) { runs <- r }})
	if err != nil {
		t.Fatal(err)
	}
	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { loop.Run(loopCtx); close(done) }()
	defer func() { stop(); <-done }()

	next := func() checks.Run {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-ctx.Done():
			t.Fatal("no check run ended before the test's deadline")
			return checks.Run{}
		}
	}
	// One interval: the first run starts at once.
	r := next()
	if r.Result != checks.ResultSuccess {
		t.Fatalf("check run: %s: %v", r.Result, r.Err)
	}
	if len(r.Headroom) == 0 {
		t.Errorf("no headroom computed for node group mng-checks")
	}
	if v, ok := gaugeValue(t, reg, "nodekeeper_pods_stuck", "cause", checks.CauseSubnet); !ok || v != 3 {
		t.Fatalf(`nodekeeper_pods_stuck{cause="subnet"} = %v (exported %v), want 3; the run saw %v on %v`, v, ok, r.Stuck, r.StuckNodes)
	}
	if ep.Hits() == 0 {
		t.Error("ipamd's metrics were not read through the pod proxy")
	}
	waitFor(t, "the PodsStuck Warning Event on the Node", func() (bool, error) {
		evs, err := admin.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Node" && e.Regarding.Name == nodeName && e.Reason == checks.ReasonPodsStuck && e.Type == corev1.EventTypeWarning {
				if !strings.Contains(e.Note, "Cause subnet (NK744)") {
					return false, fmt.Errorf("the Event's note does not name the cause: %q", e.Note)
				}
				return true, nil
			}
		}
		return false, nil
	})

	// The fix: the subnet has addresses, ipamd assigns them and the pods run.
	ep.SetBody(ipamdBody(t, 9, 6, 0))
	for _, sp := range stuck {
		sp.Status.Phase = corev1.PodRunning
		sp.Status.PodIP = "10.77.0.20"
		sp.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
		sp.Status.ContainerStatuses[0].Ready = true
		if _, err := admin.CoreV1().Pods(team).UpdateStatus(ctx, sp, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the loop's ticker", func() (bool, error) { return clk.HasWaiters(), nil })
	clk.Step(checks.DefaultInterval)
	r = next()
	if r.Result == checks.ResultError {
		t.Fatalf("check run after the fix failed: %v", r.Err)
	}
	if v, ok := gaugeValue(t, reg, "nodekeeper_pods_stuck", "cause", checks.CauseSubnet); !ok || v != 0 {
		t.Errorf(`after the fix nodekeeper_pods_stuck{cause="subnet"} = %v (exported %v), want 0`, v, ok)
	}
}
