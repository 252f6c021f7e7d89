package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// pullQPSMessage is the kubelet's event message for a pull its limiter refused: kubernetes
// v1.36.3 pkg/kubelet/images/image_manager.go records fmt.Sprintf("Failed to pull image %q: %v",
// image, err) with reason "Failed" (pkg/kubelet/events/event.go FailedToPullImage), and err is
// fmt.Errorf("pull QPS exceeded") from pkg/kubelet/images/helpers.go throttledImageService.
const pullQPSMessage = `Failed to pull image "public.ecr.aws/docker/library/busybox:1.36": pull QPS exceeded`

// pullEvent is the event the kubelet on node records for pod (source kubelet/NODE, as
// cmd/kubelet/app/server.go's recorder sets it), counted count times.
func pullEvent(ns, pod, node, message string, count int32, last time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%x", pod, last.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, APIVersion: "v1", FieldPath: "spec.containers{app}"},
		Reason:         reasonPullFailed, Message: message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: node},
		FirstTimestamp: metav1.NewTime(last.Add(-time.Minute)), LastTimestamp: metav1.NewTime(last), Count: count,
		ReportingController: "kubelet", ReportingInstance: node,
	}
}

// restartingPod is an add-on pod whose container last terminated with reason and code at when,
// after restarts restarts; crashLoop puts it in CrashLoopBackOff.
func restartingPod(name, node string, labels map[string]string, container, reason string, code, restarts int32, at time.Time, crashLoop bool) *corev1.Pod {
	cs := corev1.ContainerStatus{Name: container, RestartCount: restarts, Ready: !crashLoop,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
	if crashLoop {
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	}
	if restarts > 0 {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, FinishedAt: metav1.NewTime(at)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: labels},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: container, Image: "x"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}}}
}

func TestAddonChecksUnits(t *testing.T) {
	healthy := []AddonFacts{
		{Name: "aws-node", Resource: "daemonset/kube-system/aws-node", Found: true, Desired: 3, Available: 3, Pods: 3},
		{Name: "kube-proxy", Resource: "daemonset/kube-system/kube-proxy", Found: true, Desired: 3, Available: 3, Pods: 3},
		{Name: "coredns", Resource: "deployment/kube-system/coredns", Found: true, Desired: 2, Available: 2, Pods: 2},
	}
	withAddons := func(mod func([]AddonFacts)) func() *Facts {
		return func() *Facts {
			f := unitFacts()
			f.Addons = slices.Clone(healthy)
			mod(f.Addons)
			return f
		}
	}
	tuned := &rules.KubeletConfig{RegistryPullQPS: ptr.To[int32](5), RegistryBurst: ptr.To[int32](10)}
	runCheckCases(t, []checkCase{
		{"availability: healthy", addonAvailabilityCheck{}, withAddons(func([]AddonFacts) {}), nil},
		{"availability: not installed says nothing", addonAvailabilityCheck{}, func() *Facts {
			f := unitFacts()
			f.Addons = []AddonFacts{{Name: "kube-proxy", Resource: "daemonset/kube-system/kube-proxy"}}
			return f
		}, nil},
		{"availability: some and all unavailable", addonAvailabilityCheck{}, withAddons(func(a []AddonFacts) {
			a[0].Available, a[0].Unavailable = 2, 1
			a[2].Available, a[2].Unavailable = 0, 2
		}), []string{"NK752:error", "NK752:warning"}},
		{"restarts: healthy", addonRestartsCheck{}, withAddons(func([]AddonFacts) {}), nil},
		{"restarts: aws-node restarting", addonRestartsCheck{}, withAddons(func(a []AddonFacts) {
			a[0].Restarting = 2
			a[0].Restarts = []*RestartGroup{{Container: "aws-node", Reason: "Error", ExitCode: 1, Pods: 2, Restarts: 9, Last: unitNow.Add(-time.Minute)}}
		}), []string{"NK753:warning"}},
		{"cni version: current for 1.31", cniVersionCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode.Version = &eni.Version{Major: 1, Minor: 20, Patch: 1}
			return f
		}, nil},
		{"cni version: below the EKS add-on version", cniVersionCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode.Version = &eni.Version{Major: 1, Minor: 19, Patch: 2}
			return f
		}, []string{"NK754:info"}},
		{"cni version: below the oldest recommended for 1.31", cniVersionCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode.Version = &eni.Version{Major: 1, Minor: 16, Patch: 3}
			return f
		}, []string{"NK754:warning"}},
		{"cni version: no aws-node", cniVersionCheck{}, func() *Facts {
			f := unitFacts()
			f.AWSNode = AWSNodeFacts{Resource: "daemonset/kube-system/aws-node"}
			return f
		}, nil},
		{"pull qps: none refused", pullQPSCheck{}, func() *Facts { return unitFacts(unitNode("a", "m5.large", 29, nil)) }, nil},
		{"pull qps: refusals on a node", pullQPSCheck{}, func() *Facts {
			f := unitFacts(unitNode("a", "m5.large", 29, nil))
			f.Configz = map[string]clusterread.ConfigzResult{"a": {Config: tuned}}
			f.PullQPS = map[string]*PullQPSNode{"a": {Events: 3, Refusals: 7, Last: unitNow.Add(-time.Minute)}}
			return f
		}, []string{"NK751:warning"}},
		{"karpenter: v1.0.6 collects", karpenterLeaseGCCheck{}, func() *Facts {
			f := unitFacts()
			f.LeaseCollectors.Karpenter = []ControllerDeployment{{Resource: "deployment/karpenter/karpenter", Version: "1.0.6", VersionFrom: "label"}}
			return f
		}, []string{"NK755:warning"}},
		{"karpenter: v1.1.0 does not", karpenterLeaseGCCheck{}, func() *Facts {
			f := unitFacts()
			f.LeaseCollectors.Karpenter = []ControllerDeployment{{Resource: "deployment/karpenter/karpenter", Version: "1.1.0"}}
			return f
		}, nil},
		{"karpenter: unknown version", karpenterLeaseGCCheck{}, func() *Facts {
			f := unitFacts()
			f.LeaseCollectors.Karpenter = []ControllerDeployment{{Resource: "deployment/karpenter/karpenter"}}
			return f
		}, []string{"NK755:info"}},
	})
}

// TestKarpenterCollects pins the versions with the lease collector: v0.30.0 (its first release)
// to v1.0.x (v1.0.9 still registers it); v1.1.0 dropped it.
func TestKarpenterCollects(t *testing.T) {
	tests := []struct {
		version         string
		collects, known bool
	}{
		{"v0.29.2", false, true},
		{"v0.30.0-rc.0", true, true},
		{"v0.30.0", true, true},
		{"0.37.0", true, true},
		{"1.0.0", true, true},
		{"1.0.9", true, true},
		{"1.1.0", false, true},
		{"1.14.1", false, true},
		{"latest", false, false},
		{"", false, false},
	}
	for _, tc := range tests {
		collects, known := karpenterCollects(tc.version)
		if collects != tc.collects || known != tc.known {
			t.Errorf("%q: collects %v known %v, want %v %v", tc.version, collects, known, tc.collects, tc.known)
		}
	}
}

// TestCNITables: a minor in the table is judged by its row, a newer one by the newest row (and
// the text says so), an older one not at all.
func TestCNITables(t *testing.T) {
	tests := []struct {
		table   cniTable
		minor   int
		want    string
		row     int
		ok      bool
		newRows bool
	}{
		{cniTableOldest, 29, "1.14.1", 29, true, false},
		{cniTableOldest, 36, "1.17.1", 33, true, true},
		{cniTableOldest, 21, "", 0, false, false},
		{cniTableEKS, 33, "1.20.1", 33, true, false},
		{cniTableEKS, 26, "", 0, false, false},
	}
	for _, tc := range tests {
		v, row, ok := tc.table.forMinor(tc.minor)
		if ok != tc.ok || row != tc.row || (ok && v.String() != tc.want) {
			t.Errorf("%s 1.%d: %v row %d ok %v", tc.table.name, tc.minor, v, row, ok)
			continue
		}
		if ok {
			text := tc.table.describe(tc.minor, v, row)
			if got := strings.Contains(text, "the newest the table lists"); got != tc.newRows {
				t.Errorf("%s 1.%d: %q", tc.table.name, tc.minor, text)
			}
		}
	}
}

// TestPullQPSFinding: the finding joins the refusals with the node's configz values and says
// what to set where for the node's OS and provisioner.
func TestPullQPSFinding(t *testing.T) {
	al2023 := unitNode("ip-10-0-0-1.ec2.internal", "m5.large", 110, map[string]string{rules.LabelEKSNodegroup: "ng"})
	br := unitNode("ip-10-0-0-2.ec2.internal", "m5.large", 58, map[string]string{rules.LabelKarpenterNodePool: "default"})
	br.Status.NodeInfo.OSImage = "Bottlerocket OS 1.20.0 (aws-k8s-1.31)"
	f := unitFacts(al2023, br)
	f.Configz = map[string]clusterread.ConfigzResult{
		al2023.Name: {Config: &rules.KubeletConfig{RegistryPullQPS: ptr.To[int32](5), RegistryBurst: ptr.To[int32](10)}},
		br.Name:     {Err: "HTTP 502: bad gateway"},
	}
	f.PullQPS = map[string]*PullQPSNode{
		al2023.Name: {Events: 40, Refusals: 95, Last: unitNow.Add(-2 * time.Minute), Examples: []string{"app/web-1: " + pullQPSMessage}},
		br.Name:     {Events: 1, Refusals: 1, Last: unitNow.Add(-time.Minute)},
	}
	rep := runOne(pullQPSCheck{}, f)
	fs := rep.Findings()
	if len(fs) != 2 {
		t.Fatalf("findings %v", findingstest.ReportCodes(rep))
	}
	all := func(i int) string { return fs[i].Message + "\n" + strings.Join(fs[i].Evidence, "\n") }
	for _, want := range []string{"95 image pulls refused", "40 pod images", "registryPullQPS 5, registryBurst 10", "up to 110 pods",
		"set registryPullQPS 50 and registryBurst 110", "spec.kubelet.config.registryPullQPS: 50", "launch template", pullQPSMessage} {
		if !strings.Contains(all(0), want) {
			t.Errorf("AL2023 finding lacks %q:\n%s", want, all(0))
		}
	}
	for _, want := range []string{"1 image pull refused", "could not be read (HTTP 502: bad gateway)"} {
		if !strings.Contains(all(1), want) {
			t.Errorf("Bottlerocket finding lacks %q:\n%s", want, all(1))
		}
	}
	if fix := pullLimitFix(&br, 50, 58); !strings.Contains(fix, "settings.kubernetes.registry-burst = 58") || !strings.Contains(fix, "EC2NodeClass") {
		t.Errorf("Bottlerocket on Karpenter: %s", fix)
	}
}

// TestGatherAddons runs the gather over a fake clientset: add-on status and restarting pods,
// refused pulls per node in pages of --chunk-size, and the lease collectors' versions.
func TestGatherAddons(t *testing.T) {
	n := unitNode("a", "m5.large", 29, nil)
	awsLabels := map[string]string{"k8s-app": "aws-node"}
	ds := func(name string, l map[string]string, desired, available int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name},
			Spec:   appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: l}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, NumberAvailable: available, NumberUnavailable: desired - available}}
	}
	dep := func(ns, name string, l map[string]string, image string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: image}}}}}}
	}
	objs := []runtime.Object{&n,
		ds("aws-node", awsLabels, 3, 2),
		restartingPod("aws-node-1", "a", awsLabels, "aws-node", "OOMKilled", 137, 4, unitNow.Add(-10*time.Minute), false),
		restartingPod("aws-node-2", "b", awsLabels, "aws-node", "Error", 1, 7, unitNow.Add(-3*time.Hour), true),
		restartingPod("aws-node-3", "c", awsLabels, "aws-node", "Error", 1, 2, unitNow.Add(-3*time.Hour), false), // long ago: settled
		restartingPod("other", "a", map[string]string{"k8s-app": "other"}, "x", "Error", 1, 5, unitNow, false),   // not the add-on's
		dep("karpenter", "karpenter", map[string]string{labelAppName: "karpenter"}, "public.ecr.aws/karpenter/controller:1.0.6@sha256:0123"),
		dep("nodekeeper", "nodekeeper-controller", map[string]string{labelAppName: "nodekeeper", labelAppVersion: "0.9.0"}, "ghcr.io/nodekeeper/nodekeeper:v0.9.0"),
	}
	for i := range 20 {
		objs = append(objs, pullEvent("app", fmt.Sprintf("web-%d", i), "a", pullQPSMessage, 2, unitNow.Add(-time.Duration(i)*time.Minute)))
	}
	objs = append(objs, pullEvent("app", "web-x", "a", `Failed to pull image "x": rpc error: code = NotFound`, 1, unitNow)) // another failure
	// Hosts that are no Node of the cluster share one entry.
	for i := range 3 {
		objs = append(objs, pullEvent("app", fmt.Sprintf("web-y%d", i), fmt.Sprintf("not-a-node-%d", i), pullQPSMessage, 1, unitNow))
	}
	f, limits := gatherPageSizes(t, objs...)
	if limits["pods"] != unitChunk || limits["events"] != unitChunk {
		t.Errorf("page sizes %v, want pods and events in pages of --chunk-size %d", limits, unitChunk)
	}
	if len(f.Addons) != 3 || !f.Addons[0].Found || f.Addons[1].Found || f.Addons[2].Found {
		t.Fatalf("addons %+v", f.Addons)
	}
	a := f.Addons[0]
	if a.Desired != 3 || a.Unavailable != 1 || a.Pods != 3 || a.Restarting != 2 || len(a.Restarts) != 2 {
		t.Fatalf("aws-node %+v", a)
	}
	p := f.PullQPS["a"]
	if p == nil || p.Events != 20 || p.Refusals != 40 || len(p.Examples) != maxPodsPerFinding || !p.Last.Equal(unitNow) {
		t.Fatalf("refused pulls %+v", p)
	}
	if u := f.PullQPS[""]; len(f.PullQPS) != 2 || u == nil || u.Events != 3 {
		t.Fatalf("refused pulls from unknown hosts: %d entries, %+v", len(f.PullQPS), u)
	}
	lc := f.LeaseCollectors
	if len(lc.Karpenter) != 1 || lc.Karpenter[0].Version != "1.0.6" || len(lc.Nodekeeper) != 1 || lc.Nodekeeper[0].Version != "0.9.0" {
		t.Fatalf("lease collectors %+v", lc)
	}
	got := findingstest.ReportCodes(runOne(addonRestartsCheck{}, f))
	if !slices.Equal(got, []string{"NK753:warning"}) {
		t.Errorf("restarts: %v", got)
	}
}

// TestGatherAddonsForbidden: each read of the section that is forbidden leaves its fact missing
// with the verb and resource, and its checks are skipped with that reason.
func TestGatherAddonsForbidden(t *testing.T) {
	n := unitNode("a", "m5.large", 29, nil)
	deps, cs := fakeDeps(&n)
	forbid(cs, "get", "daemonsets")
	forbid(cs, "list", "events", "deployments")
	rep := runFake(t, deps)
	var skipped []string
	for _, fd := range rep.Findings() {
		if strings.HasPrefix(fd.Code, "NK75") {
			skipped = append(skipped, fd.Code+" "+fd.Severity.String()+" "+fd.Resource+" "+fd.Message)
		}
	}
	want := []string{
		"NK751 skipped events skipped: needs list on events",
		"NK752 skipped daemonsets skipped: needs get on daemonsets in kube-system",
		"NK753 skipped daemonsets skipped: needs get on daemonsets in kube-system",
		// aws-node itself could not be read (gather.go's awsNode).
		"NK754 skipped daemonset/kube-system/aws-node skipped: needs get on daemonsets in kube-system",
		"NK755 skipped deployments skipped: needs list on deployments",
		"NK756 skipped daemonsets skipped: needs get on daemonsets in kube-system",
		"NK757 skipped daemonsets skipped: needs get on daemonsets in kube-system",
	}
	slices.Sort(skipped)
	if !slices.Equal(skipped, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(skipped, "\n"), strings.Join(want, "\n"))
	}
}

// TestAddonFindingsEscapeWrittenText: a termination reason (written by the node), a refused pull's
// message (by anyone who may create Events) and a Karpenter version label (by anyone who may edit
// its Deployment) reach the findings as written and the terminal only escaped.
func TestAddonFindingsEscapeWrittenText(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\u202e"
	f := unitFacts(unitNode("a", "m5.large", 29, nil))
	f.Addons = []AddonFacts{{Name: "aws-node", Resource: "daemonset/kube-system/aws-node", Found: true, Desired: 1, Available: 1, Pods: 1, Restarting: 1,
		Restarts: []*RestartGroup{{Container: "aws-node", Reason: "Error" + evil, ExitCode: 2, Pods: 1, Restarts: 3, Last: unitNow}}}}
	f.PullQPS = map[string]*PullQPSNode{"a": {Events: 1, Refusals: 1, Last: unitNow, Examples: []string{"app/web: " + pullQPSMessage + evil}}}
	f.LeaseCollectors.Karpenter = []ControllerDeployment{{Resource: "deployment/karpenter/karpenter", Version: "1.0.6" + evil, VersionFrom: "label " + labelAppVersion}}
	rep := findings.NewReport("doctor", "unit", unitNow, Sections...)
	RunChecks(rep, f, []Check{addonRestartsCheck{}, pullQPSCheck{}, karpenterLeaseGCCheck{}})
	if got := findingstest.ReportCodes(rep); !slices.Equal(got, []string{"NK751:warning", "NK753:warning", "NK755:warning"}) {
		t.Fatalf("findings %v", got)
	}
	out := findingstest.SafeText(t, "text", rep, findings.PrintOptions{Catalog: catalog})
	if n := strings.Count(out, `\x1b]0;pwned\x07\u202e`); n != 3 {
		t.Errorf("the written text is shown escaped %d times, want 3:\n%s", n, out)
	}
}

// TestAWSNodePodsListedOnce: the add-on section and the CNI metrics read need the same aws-node
// pods; they are listed once (one page here) and both see them, and the DaemonSet the settings
// and the add-on section read is read once. When that list is forbidden the
// CNI metrics are missing with the verb and resource, as the add-on pods are.
func TestAWSNodePodsListedOnce(t *testing.T) {
	awsLabels := map[string]string{"k8s-app": "aws-node"}
	objects := func() []runtime.Object {
		n := unitNode("a", "m5.large", 29, nil)
		return []runtime.Object{&n,
			&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "aws-node"},
				Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: awsLabels},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "aws-node", Image: "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.5"}}}}},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberAvailable: 2}},
			restartingPod("aws-node-a", "a", awsLabels, "aws-node", "", 0, 0, unitNow, false),
			restartingPod("aws-node-b", "b", awsLabels, "aws-node", "", 0, 0, unitNow, false),
		}
	}
	awsNodeLists := func(cs *fake.Clientset) (n int) {
		for _, a := range cs.Actions() {
			if l, ok := a.(k8stesting.ListActionImpl); ok && l.GetResource().Resource == "pods" &&
				l.GetNamespace() == metav1.NamespaceSystem && l.GetListOptions().LabelSelector == "k8s-app=aws-node" {
				n++
			}
		}
		return n
	}

	deps, cs := fakeDeps(objects()...)
	f, err := Gather(context.Background(), deps, unitOptions())
	if err != nil {
		t.Fatal(err)
	}
	if n := awsNodeLists(cs); n != 1 {
		t.Errorf("aws-node's pods listed %d times, want once", n)
	}
	gets := 0
	for _, a := range cs.Actions() {
		if g, ok := a.(k8stesting.GetActionImpl); ok && g.GetResource().Resource == "daemonsets" && g.GetName() == "aws-node" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("the aws-node DaemonSet was read %d times, want once (settings and add-on health share it)", gets)
	}
	if a := f.Addons[0]; !a.Found || a.Pods != 2 {
		t.Errorf("add-on aws-node %+v", a)
	}
	if len(f.CNI.Nodes) != 2 || f.CNI.Nodes["a"] == nil || f.CNI.Nodes["a"].Pod != "kube-system/aws-node-a" {
		t.Errorf("CNI nodes %+v", f.CNI.Nodes)
	}

	deps, cs = fakeDeps(objects()...)
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != metav1.NamespaceSystem {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	})
	if f, err = Gather(context.Background(), deps, unitOptions()); err != nil {
		t.Fatal(err)
	}
	for _, fact := range []Fact{FactAddonPods, FactCNIMetrics} {
		if m, ok := f.Missing[fact]; !ok || m.Reason != "needs list on pods in kube-system" {
			t.Errorf("%s: missing %+v (%v)", fact, m, ok)
		}
	}
}

// TestRestartGroupsOverflow: past maxRestartGroups, further (container, reason, exit code)
// combinations share one group that names none of them, so no pod shows under another
// container's reason.
func TestRestartGroupsOverflow(t *testing.T) {
	var a AddonFacts
	for i := range maxRestartGroups + 3 {
		a.addPod(restartingPod(fmt.Sprintf("p%d", i), "a", nil, fmt.Sprintf("c%d", i), "Error", int32(i), 2, unitNow.Add(-time.Minute), false), unitNow)
	}
	if len(a.Restarts) != maxRestartGroups || a.Restarting != maxRestartGroups+3 {
		t.Fatalf("%d groups, %d restarting pods", len(a.Restarts), a.Restarting)
	}
	other := a.Restarts[maxRestartGroups-1]
	if !other.Other || other.Container != "" || other.ExitCode != 0 || other.Pods != 4 {
		t.Fatalf("overflow group %+v", other)
	}
	for _, g := range a.Restarts[:maxRestartGroups-1] {
		if g.Other || g.Pods != 1 {
			t.Errorf("group %+v", g)
		}
	}
	f := &Facts{Now: unitNow, Addons: []AddonFacts{{Name: "kube-proxy", Found: true, Resource: "daemonset/kube-system/kube-proxy", Pods: a.Pods, Restarting: a.Restarting, Restarts: a.Restarts}}}
	ev := strings.Join(runOne(addonRestartsCheck{}, f).Findings()[0].Evidence, "\n")
	if !strings.Contains(ev, "other containers, reasons and exit codes: 4 pods") || strings.Contains(ev, "container c7:") {
		t.Errorf("evidence:\n%s", ev)
	}
}
