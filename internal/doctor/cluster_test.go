package doctor

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/kubeletstub"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

var env *testenv.Env

// doctor reads the cluster and the kubelets through the API server's node proxy; it needs no
// controller, so none runs.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// newStub creates the network namespace and n kubelet endpoints; both go away when the test ends,
// also when it fails. Without root or iproute2 the test fails with the reason: the node proxy path
// is the point of these tests and must not be skipped quietly.
func newStub(t testing.TB, n int, body func(i int) []byte) (*kubeletstub.Netns, *kubeletstub.Server) {
	t.Helper()
	ns := newNetns(t)
	srv, err := kubeletstub.Start(ns, n, body)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return ns, srv
}

// startKubelet runs one simulated kubelet with its Node's identity, its configz (kubeletConfig)
// served by a stub in a network namespace of its own, which it returns with the stub; the
// kubelet stops and its Node is deleted when the test ends.
func startKubelet(ctx context.Context, t *testing.T, cfg kubeletsim.Config, kubeletConfig map[string]any) (*kubeletstub.Netns, *kubeletstub.Server) {
	t.Helper()
	ns, srv := newStub(t, 1, func(int) []byte { return configz(t, kubeletConfig) })
	fleet := env.NewFleet(t)
	cfg.InternalIP, cfg.KubeletPort = ns.NSIP, int32(srv.Endpoints()[0].Port)
	if _, err := fleet.Start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.AdminClient().CoreV1().Nodes().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})
	return ns, srv
}

// newNetns creates a network namespace for stub servers, removed when the test ends, also when
// it fails.
func newNetns(t testing.TB) *kubeletstub.Netns {
	t.Helper()
	ns, err := kubeletstub.New()
	if err != nil {
		t.Fatalf("the node and pod proxy tests need a network namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Errorf("removing namespace %s: %v", ns.Name, err)
		}
	})
	return ns
}

func configz(t testing.TB, cfg map[string]any) []byte {
	t.Helper()
	b, err := kubeletstub.ConfigzBody(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kubeletDefaults is what a real kubelet's /configz carries for the fields the checks read.
func kubeletDefaults(maxPods int) map[string]any {
	return map[string]any{
		"registryPullQPS": 5, "registryBurst": 10, "serializeImagePulls": true, "maxPods": maxPods,
		"kubeAPIQPS": 50, "kubeAPIBurst": 100, "podsPerCore": 0,
	}
}

func serverVersion(t testing.TB, c kubernetes.Interface) *version.Version {
	t.Helper()
	sv, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	v, err := version.ParseGeneric(sv.GitVersion)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// byResource indexes "CODE:severity" lists by resource, for the resources a test owns.
func byResource(rep *findings.Report, keep func(res string) bool) map[string][]string {
	out := map[string][]string{}
	for _, f := range rep.Findings() {
		if keep(f.Resource) {
			out[f.Resource] = append(out[f.Resource], f.Code+":"+f.Severity.String())
		}
	}
	return out
}

// has reports whether list holds every one of want.
func has(list []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(list, w) {
			return false
		}
	}
	return true
}

// TestDoctorSeedCluster reproduces seed 002 on a real control plane: simulated kubelets whose
// /configz is served from a network namespace and read through the API server's node proxy, an
// aws-node DaemonSet with the customer's settings, a leaked lease and a zombie's lease.
func TestDoctorSeedCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	sv := serverVersion(t, admin)
	current := fmt.Sprintf("v%d.%d.0-eks-1", sv.Major(), sv.Minor())
	previous := fmt.Sprintf("v%d.%d.3-eks-1", sv.Major(), sv.Minor()-1)

	type node struct {
		name    string
		maxPods int32
		version string
		mode    kubeletsim.Mode
		body    map[string]any
		status  int
	}
	tuned := kubeletDefaults(20)
	tuned["registryPullQPS"], tuned["registryBurst"], tuned["serializeImagePulls"] = 50, 100, false
	oversized := kubeletDefaults(20)
	for k, v := range tuned {
		oversized[k] = v
	}
	oversized["padding"] = strings.Repeat("x", 2<<20)
	nodes := []node{
		// The seed's node: custom networking, max pods left at 110, default pull limits.
		{name: "ip-10-61-0-1.ec2.internal", maxPods: 110, version: previous, body: kubeletDefaults(110)},
		// A node configured the way AWS Support recommended.
		{name: "ip-10-61-0-2.ec2.internal", maxPods: 20, version: current, body: tuned},
		// A pre-1.29 kubelet whose /configz fails.
		{name: "ip-10-61-0-3.ec2.internal", maxPods: 20, mode: kubeletsim.Legacy, version: kubeletsim.LegacyKubeletVersion, body: tuned, status: http.StatusServiceUnavailable},
		// Something on the node-proxy path answering with more than doctor will hold (2 MiB).
		{name: "ip-10-61-0-4.ec2.internal", maxPods: 20, version: current, body: oversized},
	}
	ns, srv := newStub(t, len(nodes), func(i int) []byte { return configz(t, nodes[i].body) })
	eps := srv.Endpoints()
	eps[2].SetStatus(nodes[2].status)

	fleet := env.NewFleet(t)
	for i, n := range nodes {
		if _, err := fleet.Start(ctx, kubeletsim.Config{
			Name: n.name, Mode: n.mode, InstanceType: "m5.large", MaxPods: n.maxPods, KubeletVersion: n.version,
			InternalIP: ns.NSIP, KubeletPort: int32(eps[i].Port),
		}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = admin.CoreV1().Nodes().Delete(context.Background(), n.name, metav1.DeleteOptions{})
		}
	})

	// A lease leaked three hours ago, and a zombie's: renewed now, no Node, no owner.
	leaked, zombie := "ip-10-61-9-1.ec2.internal", "ip-10-61-9-2.ec2.internal"
	if _, err := kubeletsim.SeedOldLeakedLease(ctx, admin, env, leaked, time.Now().Add(-3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeletsim.SeedLeakedLease(ctx, admin, zombie, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range []string{leaked, zombie} {
			_ = admin.CoordinationV1().Leases("kube-node-lease").Delete(context.Background(), l, metav1.DeleteOptions{})
		}
	})

	// The customer's self-managed VPC CNI: old, custom networking, no CLUSTER_ENDPOINT, and the
	// IP cooldown turned off.
	env.CreateAWSNode(t, "aws-node-seed", "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.12.0-eksbuild.1", map[string]string{
		"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "WARM_ENI_TARGET": "1", "IP_COOLDOWN_PERIOD": "0",
	})

	rep, err := runOn(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-seed", Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := byResource(rep, func(res string) bool {
		return strings.Contains(res, "ip-10-61-") || strings.Contains(res, "aws-node-seed")
	})
	want := map[string][]string{
		"node/" + nodes[0].name:           {"NK101:error", "NK201:warning", "NK202:info"},
		"node/" + nodes[2].name:           {"NK205:skipped", "NK301:error", "NK302:warning"},
		"node/" + nodes[3].name:           {"NK205:skipped"},
		"lease/kube-node-lease/" + leaked: {"NK313:warning"},
		"lease/kube-node-lease/" + zombie: {"NK312:error"},
		// NK711: custom networking on, and no ENIConfig CRD in this cluster; NK754: v1.12.0 is
		// older than AWS recommends for any Kubernetes version this control plane can be.
		"daemonset/kube-system/aws-node-seed": {"NK401:info", "NK408:warning", "NK409:error", "NK410:error", "NK711:error", "NK754:warning"},
	}
	for res, codes := range want {
		if !has(got[res], codes...) || len(got[res]) != len(codes) {
			t.Errorf("%s: got %v, want %v", res, got[res], codes)
		}
	}
	if f := got["node/"+nodes[1].name]; len(f) != 0 {
		t.Errorf("the well-configured node has findings %v", f)
	}
	// Exactly one configz request per node, through the API server's kubelet client identity.
	for i, e := range eps {
		if e.Hits() != 1 {
			t.Errorf("node %s: %d configz requests, want 1", nodes[i].name, e.Hits())
		}
		for cn := range e.Clients() {
			if cn != "kube-apiserver-kubelet-client" {
				t.Errorf("node %s: configz requested by %q", nodes[i].name, cn)
			}
		}
	}
	for _, f := range rep.Findings() {
		if f.Code == "NK101" && f.Resource == "node/"+nodes[0].name {
			if !strings.Contains(f.Message, "kubelet allows 110 pods") || !strings.Contains(f.Message, "for 20") ||
				!strings.Contains(strings.Join(f.Evidence, "\n"), "maxPods 110") {
				t.Errorf("NK101: %s %v", f.Message, f.Evidence)
			}
		}
		if f.Code == "NK205" && f.Resource == "node/"+nodes[3].name && !strings.Contains(f.Message, "larger than 1048576 bytes") {
			t.Errorf("NK205 for the oversized answer does not say why: %s", f.Message)
		}
		if f.Code == "NK205" && f.Resource == "node/"+nodes[2].name && !strings.Contains(f.Message, "503") && !strings.Contains(f.Message, "unavailable") {
			t.Errorf("NK205 does not say why: %s", f.Message)
		}
	}
	if rep.Stats[StatConfigzRequests] < int64(len(nodes)) {
		t.Errorf("stats: %v", rep.Stats)
	}
	if findings.ExitCode(rep.MaxSeverity()) != findings.ExitFindings {
		t.Errorf("exit code %d", findings.ExitCode(rep.MaxSeverity()))
	}
}

// TestDoctorWithoutPermissions runs doctor as a user who may read nodes and leases but not
// nodes/proxy or /metrics: those checks become "skipped" findings and the run succeeds.
func TestDoctorWithoutPermissions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "ip-10-62-0-1.ec2.internal"
	_, srv := startKubelet(ctx, t, kubeletsim.Config{Name: name}, kubeletDefaults(29))

	env.GrantClusterRole(t, "doctor-limited",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"list"}})
	limited := env.UserConfig("doctor-limited")

	rep, err := runOn(ctx, limited, Options{})
	if err != nil {
		t.Fatalf("the run must not fail for missing permissions: %v", err)
	}
	var skipped []string
	for _, f := range rep.Findings() {
		if f.Severity == findings.Skipped {
			skipped = append(skipped, f.Code+" "+f.Resource+" "+f.Message)
		}
	}
	all := strings.Join(skipped, "\n")
	for _, want := range []string{"NK205 nodes/proxy skipped: needs get on nodes/proxy", "NK502 apiserver skipped: needs get on the non-resource URL /metrics", "needs get on daemonsets",
		// The image pulls and add-ons section names each denied read.
		"NK751 events skipped: needs list on events", "NK752 daemonsets skipped: needs get on daemonsets in kube-system",
		"NK755 deployments skipped: needs list on deployments"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing skipped finding %q in:\n%s", want, all)
		}
	}
	if srv.TotalHits() != 0 {
		t.Errorf("configz was requested %d times without permission", srv.TotalHits())
	}
	// The heartbeat and version checks still ran.
	if s := findingstest.Section(rep, SectionHeartbeats); s == nil || s.Checked == 0 {
		t.Error("heartbeats were not checked")
	}
}

// TestDoctorAPFRejections makes the real API server reject requests (a priority level with one
// seat and no queue for one user) and checks that doctor reports them from /metrics.
func TestDoctorAPFRejections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "nodekeeper-test-tiny"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "nodekeeper-test-noisy"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl.Name},
			MatchingPrecedence:         100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "noisy-client"}}},
				ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	if _, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.FlowcontrolV1().FlowSchemas().Delete(context.Background(), fs.Name, metav1.DeleteOptions{})
		_ = admin.FlowcontrolV1().PriorityLevelConfigurations().Delete(context.Background(), pl.Name, metav1.DeleteOptions{})
	})

	// The noisy client may list Nodes: full Node objects make each request hold its seat a little.
	grantNodeList(ctx, t, admin, "noisy-client")
	noisyCfg := env.UserConfig("noisy-client")
	noisyCfg.QPS, noisyCfg.Burst = -1, 0 // no client-side limit: let the server do the rejecting
	noisy := kubernetes.NewForConfigOrDie(noisyCfg)
	rejected := 0
	for round := 0; round < 20 && rejected == 0; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := 0; i < 150; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// No client retries: client-go would otherwise wait out Retry-After and try again.
				err := noisy.CoreV1().RESTClient().Get().Resource("nodes").MaxRetries(0).Do(ctx).Error()
				if apierrors.IsTooManyRequests(err) {
					mu.Lock()
					rejected++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	if rejected == 0 {
		raw, _ := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.Contains(l, "nodekeeper-test") && !strings.Contains(l, "_bucket") {
				t.Log(l)
			}
		}
		t.Fatal("the API server rejected no request of the noisy client")
	}
	rep, err := runOn(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings() {
		if f.Code == "NK501" && f.Resource == "prioritylevelconfiguration/"+pl.Name {
			found = strings.Contains(f.Message, fs.Name) && strings.Contains(f.Message, "rejected")
			t.Logf("%s: %s (client saw %d 429s)", f.Resource, f.Message, rejected)
		}
	}
	if !found {
		t.Fatalf("no NK501 finding for %s in %v", pl.Name, rep.Findings())
	}
	if s := findingstest.Section(rep, SectionAPF); s == nil || s.Checked < 2 {
		t.Errorf("APF section: %+v", s)
	}
}

// grantNodeList lets user list Nodes and waits until the authorizer agrees.
func grantNodeList(ctx context.Context, t *testing.T, admin kubernetes.Interface, user string) {
	t.Helper()
	grantRules(t, user)
}

// grantRules lets user list Nodes and do what rules say, cluster-wide (testenv.GrantClusterRole
// waits until the authorizer agrees).
func grantRules(t *testing.T, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	env.GrantClusterRole(t, user, append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}}, rules...)...)
}

// TestDoctorNoAWSNode: without the VPC CNI the capacity checks do not run, unless the mode is
// given by flags.
func TestDoctorNoAWSNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "ip-10-63-0-1.ec2.internal"
	_, srv := startKubelet(ctx, t, kubeletsim.Config{Name: name}, kubeletDefaults(29))

	rep, err := runOn(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none"})
	if err != nil {
		t.Fatal(err)
	}
	got := byResource(rep, func(res string) bool { return strings.Contains(res, name) || strings.Contains(res, "aws-node-none") })
	if !has(got["daemonset/kube-system/aws-node-none"], "NK411:info") || has(got["node/"+name], "NK101:error") {
		t.Fatalf("got %v", got)
	}
	// With --custom-networking the 29-pod m5.large is over its 20 addresses.
	rep, err = runOn(ctx, env.AdminConfig(), Options{AWSNodeName: "aws-node-none", CustomNetworking: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	got = byResource(rep, func(res string) bool { return strings.Contains(res, name) })
	if !has(got["node/"+name], "NK101:error") {
		t.Fatalf("with the flag: %v", got)
	}
	if srv.Endpoints()[0].Hits() != 2 {
		t.Errorf("two runs, %d configz requests", srv.Endpoints()[0].Hits())
	}
}

// runOn runs doctor against cfg without a client-side limit, its clients built as the CLI
// builds them (kube.NewClients, DepsFrom).
func runOn(ctx context.Context, cfg *rest.Config, o Options) (*findings.Report, error) {
	return runLimited(ctx, cfg, kube.RateLimit{}, o)
}

// runAWS runs doctor as runOn does, with the AWS clients of aws (the EC2 section's).
func runAWS(ctx context.Context, cfg *rest.Config, o Options, aws Deps) (*findings.Report, error) {
	return runWith(ctx, cfg, kube.RateLimit{}, o, aws)
}

func runLimited(ctx context.Context, cfg *rest.Config, limit kube.RateLimit, o Options) (*findings.Report, error) {
	return runWith(ctx, cfg, limit, o, Deps{})
}

func runWith(ctx context.Context, cfg *rest.Config, limit kube.RateLimit, o Options, aws Deps) (*findings.Report, error) {
	cfg, requests := kube.CountRequests(kube.Configure(cfg, "doctor", limit))
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return nil, err
	}
	o.Target = cfg.Host
	d := DepsFrom(clients, requests)
	d.EC2, d.CloudWatch, d.LaunchTemplates, d.Nodegroups, d.AutoScaling = aws.EC2, aws.CloudWatch, aws.LaunchTemplates, aws.Nodegroups, aws.AutoScaling
	return Run(ctx, d, o)
}
