package doctor

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// These tests run the checks and the gather phase without a control plane: checks over facts
// built by hand, the gather over fake clientsets. The control-plane tests beside them run the
// same code against a real API server.

var unitNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func unitOptions() Options {
	o := Options{Now: func() time.Time { return unitNow }}
	o.defaults()
	return o
}

func unitNode(name, itype string, pods int64, labels map[string]string) corev1.Node {
	l := map[string]string{corev1.LabelInstanceTypeStable: itype}
	for k, v := range labels {
		l[k] = v
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: l},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.31.2", OSImage: "Amazon Linux 2023.6.20250115"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func unitFacts(nodes ...corev1.Node) *Facts {
	return &Facts{Settings: unitOptions().Settings(), Now: unitNow, Server: "v1.31.4", Nodes: nodes,
		AWSNode: AWSNodeFacts{Resource: "daemonset/kube-system/aws-node", Found: true, Container: true, Env: map[string]string{"CLUSTER_ENDPOINT": "https://x"}}}
}

func runOne(c Check, f *Facts) *findings.Report {
	rep := findings.NewReport("doctor", "unit", unitNow, Sections...)
	RunChecks(rep, f, []Check{c})
	return rep
}

// TestMissingFactSkipsOnce: a check that needs a missing fact is reported skipped under its rule
// with the fact's reason, once, and does not run; an optional need only adds the skip.
func TestMissingFactSkipsOnce(t *testing.T) {
	f := unitFacts(unitNode("a", "m5.large", 29, nil))
	f.miss(FactNodes, "nodes", "needs list on nodes")
	rep := findings.NewReport("doctor", "unit", unitNow, Sections...)
	RunChecks(rep, f, []Check{versionSkewCheck{}, kubeletConfigCheck{}, podCapacityCheck{}, versionSkewCheck{}})
	got := findingstest.ReportCodes(rep)
	if want := []string{"NK103:skipped", "NK205:skipped", "NK301:skipped"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, fd := range rep.Findings() {
		if fd.Resource != "nodes" || fd.Message != "skipped: needs list on nodes" {
			t.Errorf("skip finding %+v", fd)
		}
	}

	// Events missing: the stuck pods are still reported, and the skip says so.
	f = unitFacts(unitNode("a", "m5.large", 29, nil))
	f.Pods = PodFacts{Stuck: map[string]*StuckPod{"app/p": {Namespace: "app", Name: "p", Node: "a", Since: unitNow.Add(-time.Hour), Cause: CauseNoEvent}}}
	f.miss(FactEvents, "events", "needs list on events")
	rep = runOne(stuckPodsCheck{}, f)
	got = findingstest.ReportCodes(rep)
	if want := []string{"NK705:skipped", "NK706:warning", "NK707:info"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if fd := rep.Findings()[len(rep.Findings())-1]; fd.Code == "NK705" && !strings.Contains(fd.Message, "without their cause") {
		t.Errorf("NK705 skip: %s", fd.Message)
	}
}

func TestCheckUnits(t *testing.T) {
	cn := map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "CLUSTER_ENDPOINT": "https://x"}
	runCheckCases(t, []checkCase{
		{"versions: too old and leaking", versionSkewCheck{}, func() *Facts {
			n := unitNode("a", "m5.large", 29, nil)
			n.Status.NodeInfo.KubeletVersion = "v1.27.1"
			return unitFacts(n)
		}, []string{"NK301:error", "NK302:warning"}},
		{"kubelet: defaults and an unreadable node", kubeletConfigCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "m5.large", 29, nil), unitNode("b", "m5.large", 29, nil))
			f.Configz = map[string]clusterread.ConfigzResult{"a": {Config: &rules.KubeletConfig{}}, "b": {Err: "HTTP 502"}}
			return f
		}, []string{"NK201:warning", "NK205:skipped"}},
		{"aws-node: not found", awsNodeCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode = AWSNodeFacts{Resource: "daemonset/kube-system/aws-node"}
			return f
		}, []string{"NK411:info"}},
		{"aws-node: no CLUSTER_ENDPOINT", awsNodeCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode.Env = map[string]string{}
			return f
		}, []string{"NK401:info"}},
		{"capacity: custom networking without max pods", podCapacityCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "t3.small", 11, nil))
			f.AWSNode.Env = cn
			return f
		}, []string{"NK101:error", "NK409:error"}},
		{"capacity: mode unknown checks nothing", podCapacityCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "t3.small", 11, nil))
			f.AWSNode = AWSNodeFacts{Resource: "daemonset/kube-system/aws-node"}
			return f
		}, nil},
		{"karpenter: no reserved ENI with custom networking", karpenterCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode.Env = cn
			f.Karpenter = KarpenterFacts{Found: true, Source: "deployment/karpenter/karpenter"}
			return f
		}, []string{"NK713:error"}},
		{"heartbeats: a node without its lease, a leaked lease", heartbeatCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "m5.large", 29, nil))
			f.Leases = []coordinationv1.Lease{{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: corev1.NamespaceNodeLease},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("gone"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: unitNow.Add(-time.Hour)}}}}
			return f
		}, []string{"NK313:warning", "NK316:warning"}},
		{"apf: rejections", apfCheck{}, func() *Facts {
			f := unitFacts()
			f.APF = []clusterread.Sample{{Name: rejectedMetric, Labels: map[string]string{"priority_level": "workload-low", "flow_schema": "service-accounts", "reason": "queue-full"}, Value: 12}}
			return f
		}, []string{"NK501:warning"}},
		{"eniconfig: incomplete, and a node selecting a missing one", eniConfigCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "m5.large", 29, map[string]string{LabelENIConfig: "us-east-1b"}))
			f.AWSNode.Env = cn
			f.ENIConfigs = ENIConfigFacts{Served: true, Items: []ENIConfig{{Name: "us-east-1a", Subnet: "subnet-1"}}}
			return f
		}, []string{"NK711:error", "NK712:error"}},
		{"eniconfig: CRD missing with custom networking", eniConfigCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode.Env = cn
			return f
		}, []string{"NK711:error"}},
		{"csinodes: owned and leaked", csiNodeCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "m5.large", 29, nil))
			f.CSINodes = []NodeScoped{{Name: "a"}, {Name: "b", Owners: []metav1.OwnerReference{{Kind: "Node", Name: "b", UID: "u"}}}, {Name: "c"}}
			return f
		}, []string{"NK731:info", "NK731:warning"}},
		{"cninodes: leaked", cniNodeCheck{}, func() *Facts {
			f := unitFacts()
			f.CNINodes = NodeScopedFacts{Served: true, Items: []NodeScoped{{Name: "gone"}}}
			return f
		}, []string{"NK732:warning"}},
	})
}

// checkCase is one check run over hand-built facts and the "CODE:severity" list it must report.
type checkCase struct {
	name  string
	check Check
	facts func() *Facts
	want  []string
}

func runCheckCases(t *testing.T, tests []checkCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := findingstest.ReportCodes(runOne(tc.check, tc.facts())); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestServingCSRRequesters: only requests a kubelet sent (system:node:NAME in system:nodes) are
// NK721; the others are NK722 at info level, which a --fail-on warning gate lets through.
func TestServingCSRRequesters(t *testing.T) {
	old := unitNow.Add(-time.Hour)
	f := unitFacts(unitNode("ip-10-0-0-1.ec2.internal", "m5.large", 29, nil))
	f.CSRs = []ServingCSR{
		{Name: "csr-kubelet", Username: "system:node:ip-10-0-0-1.ec2.internal", Groups: []string{"system:nodes", "system:authenticated"}, Created: old},
		{Name: "csr-admin", Username: "admin", Groups: []string{"system:masters"}, Created: old},
		{Name: "csr-no-group", Username: "system:node:x", Groups: []string{"system:authenticated"}, Created: old, Approved: true},
		{Name: "csr-young", Username: "system:node:y", Groups: []string{"system:nodes"}, Created: unitNow.Add(-time.Minute)},
	}
	rep := runOne(servingCSRCheck{}, f)
	if got, want := findingstest.ReportCodes(rep), []string{"NK721:error", "NK722:info", "NK722:info"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	var res []string
	for _, fd := range rep.Findings() {
		res = append(res, fd.Code+" "+fd.Resource)
	}
	for _, want := range []string{"NK721 node/ip-10-0-0-1.ec2.internal", "NK722 user/admin", "NK722 user/system:node:x"} {
		if !slices.Contains(res, want) {
			t.Errorf("missing %q in %q", want, res)
		}
	}
	// Without the kubelet's request the report passes a --fail-on warning gate.
	f.CSRs = f.CSRs[1:]
	if rep := runOne(servingCSRCheck{}, f); findings.ExitCodeAt(rep.MaxSeverity(), findings.Warning) != findings.ExitOK {
		t.Errorf("foreign requests fail the gate: %v", findingstest.ReportCodes(rep))
	}
}

// fakeDeps are Deps over one fake clientset (no raw client: configz and /metrics are missing).
func fakeDeps(objs ...runtime.Object) (Deps, *fake.Clientset) {
	cs := fake.NewSimpleClientset(objs...)
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.31.4"}
	return Deps{Client: cs, Bulk: cs}, cs
}

// runFake runs doctor with the unit options over deps (a fake clientset); an error fails the test.
func runFake(t *testing.T, deps Deps) *findings.Report {
	t.Helper()
	rep, err := Run(context.Background(), deps, unitOptions())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// forbid makes cs refuse verb on each of resources as RBAC does.
func forbid(cs *fake.Clientset, verb string, resources ...string) {
	for _, res := range resources {
		cs.PrependReactor(verb, res, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: res}, "", nil)
		})
	}
}

// TestGatherForbidden: a forbidden LIST leaves its fact missing with the verb and resource, and
// the run goes on; the checks that need it are skipped with that reason.
func TestGatherForbidden(t *testing.T) {
	n := unitNode("a", "m5.large", 29, nil)
	deps, cs := fakeDeps(&n)
	forbid(cs, "list", "pods", "leases", "certificatesigningrequests", "csinodes")
	rep := runFake(t, deps)
	var skipped []string
	for _, fd := range rep.Findings() {
		if fd.Severity == findings.Skipped {
			skipped = append(skipped, fd.Code+" "+fd.Resource+" "+fd.Message)
		}
	}
	for _, want := range []string{
		"NK701 pods skipped: needs list on pods",
		"NK311 leases skipped: needs list on leases in kube-node-lease",
		"NK721 certificatesigningrequests skipped: needs list on certificatesigningrequests",
		"NK731 csinodes skipped: needs list on csinodes",
		"NK205 nodes/proxy skipped: no client for the node proxy",
		"NK502 apiserver skipped: no client for /metrics",
	} {
		if !slices.Contains(skipped, want) {
			t.Errorf("missing %q in:\n%s", want, strings.Join(skipped, "\n"))
		}
	}
	if s := findingstest.Section(rep, SectionVersions); s == nil || s.Checked != 1 {
		t.Errorf("the versions were not checked: %+v", s)
	}
}

// TestGatherListFailure: a LIST that fails for another reason than RBAC stops the run with the
// error, named by what was being read where the read says so.
func TestGatherListFailure(t *testing.T) {
	for _, tc := range []struct{ resource, want string }{
		{"nodes", "nodes: the server is currently unable"},
		{"leases", "leases: the server is currently unable"},
		{"certificatesigningrequests", "listing kubelet-serving certificate signing requests: "},
		{"csinodes", "csinodes: the server is currently unable"},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			n := unitNode("a", "m5.large", 29, nil)
			deps, cs := fakeDeps(&n)
			cs.PrependReactor("list", tc.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewServiceUnavailable(tc.resource + ": the server is currently unable")
			})
			_, err := Run(context.Background(), deps, unitOptions())
			textcheck.WantError(t, err, tc.want)
		})
	}
}

// TestGatherBoundsEventPages: pods and events are listed in pages of --chunk-size (their bound
// in bytes, MaxPageBytes, is the real transport's: TestPageBudgetHalves), and each stuck pod
// keeps one clipped message.
func TestGatherBoundsEventPages(t *testing.T) {
	n := unitNode("a", "m5.large", 29, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "p", CreationTimestamp: metav1.NewTime(unitNow.Add(-time.Hour))},
		Spec: corev1.PodSpec{NodeName: "a"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}
	objs := []runtime.Object{&n, pod}
	big := strings.Repeat("é", 100_000) + " failed to assign an IP address to container"
	for i := range 3 {
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "e" + string(rune('a'+i))}, Reason: reasonSandboxFailed,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "app", Name: "p"}, Message: big, Count: 1,
			LastTimestamp: metav1.NewTime(unitNow.Add(-time.Duration(i) * time.Minute))})
	}
	f, limits := gatherPageSizes(t, objs...)
	if limits["pods"] != unitChunk || limits["events"] != unitChunk {
		t.Errorf("page sizes %v, want pods and events in pages of --chunk-size %d", limits, unitChunk)
	}
	sp := f.Pods.Stuck["app/p"]
	if sp == nil || sp.Cause != CauseIPAMNoAddress || sp.Events != 3 {
		t.Fatalf("stuck pod %+v", sp)
	}
	if r := []rune(sp.Message); len(r) > maxSandboxMessage+1 {
		t.Errorf("kept message of %d characters", len(r))
	}
}

// unitChunk is the --chunk-size gatherPageSizes reads with.
const unitChunk = 200

// gatherPageSizes gathers the facts of a fake cluster holding objs with --chunk-size unitChunk and
// returns them with the largest page size asked for of pods and of events.
func gatherPageSizes(t *testing.T, objs ...runtime.Object) (*Facts, map[string]int64) {
	t.Helper()
	deps, cs := fakeDeps(objs...)
	limits := map[string]int64{}
	for _, res := range []string{"pods", "events"} {
		cs.PrependReactor("list", res, func(a k8stesting.Action) (bool, runtime.Object, error) {
			limits[res] = max(limits[res], a.(k8stesting.ListActionImpl).GetListOptions().Limit)
			return false, nil, nil
		})
	}
	o := unitOptions()
	o.ChunkSize = unitChunk
	f, err := Gather(context.Background(), deps, o)
	if err != nil {
		t.Fatal(err)
	}
	return f, limits
}

// TestGatherCSRIdentity: the gather keeps who asked, so the check can tell kubelets from others.
func TestGatherCSRIdentity(t *testing.T) {
	n := unitNode("a", "m5.large", 29, nil)
	csr := func(name, user string, groups ...string) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(unitNow.Add(-time.Hour))},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: kubeletServingSigner, Username: user, Groups: groups}}
	}
	deps, _ := fakeDeps(&n, csr("k", "system:node:gone", "system:nodes"), csr("x", "admin", "system:masters"))
	rep := runFake(t, deps)
	var got []string
	for _, fd := range rep.Findings() {
		if strings.HasPrefix(fd.Code, "NK72") {
			got = append(got, fd.Code+" "+fd.Severity.String()+" "+fd.Resource)
		}
	}
	slices.Sort(got)
	if want := []string{"NK721 error node/gone", "NK722 info user/admin"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestFactsAreData: Facts holds what was read and the settings it is judged by, nothing that
// acts: no function, channel or interface (a client, an options callback) anywhere in it, so
// that a run's facts can be kept, compared and handed to checks elsewhere (the controller's).
func TestFactsAreData(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		switch ty.Kind() {
		case reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
			t.Errorf("%s is a %s (%s): Facts must be data only", path, ty.Kind(), ty)
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(path+"[]", ty.Elem())
		case reflect.Map:
			walk(path+"[key]", ty.Key())
			walk(path+"[]", ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				f := ty.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	walk("Facts", reflect.TypeFor[Facts]())
}
