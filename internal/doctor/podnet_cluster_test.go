package doctor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/golden"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

// podnetNode is a Node as an EKS node of the given OS and provisioner registers it. It is not
// Ready, so doctor does not ask its kubelet for /configz.
func podnetNode(name, osImage string, labels map[string]string) *corev1.Node {
	l := map[string]string{
		corev1.LabelInstanceTypeStable: "t3.small", "kubernetes.io/os": "linux",
		corev1.LabelTopologyZone: "us-west-2a", "nodekeeper.io/test": "podnet",
	}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourcePods: resource.MustParse("11"), corev1.ResourceCPU: resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("2Gi"),
			},
			NodeInfo: corev1.NodeSystemInfo{OSImage: osImage, KubeletVersion: kubeletsim.ModernKubeletVersion, OperatingSystem: "linux"},
		},
	}
}

func createNode(ctx context.Context, t *testing.T, c kubernetes.Interface, n *corev1.Node) {
	t.Helper()
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	created.Status = n.Status
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
}

// approveCSR adds the Approved condition through the approval subresource, as an approver would.
func approveCSR(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	admin := env.AdminClient()
	c, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "NodeTest", Message: "approved by the test",
	})
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, c, metav1.UpdateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
}

// servingCSR creates a kubelet-serving CSR for node as user in groups: as the node's kubelet
// would with system:node:NODE in system:nodes, or as anyone else allowed to create CSRs.
func servingCSR(ctx context.Context, t *testing.T, node, user string, groups ...string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		DNSNames: []string{node},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-" + strings.ReplaceAll(node, ".", "-")},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: kubeletServingSigner,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}
	// The API server sets spec.username and spec.groups from the requester.
	nc := kubernetes.NewForConfigOrDie(env.UserConfig(user, groups...))
	created, err := nc.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{FieldManager: "nodekeeper-test"})
	if err != nil {
		t.Fatal(err)
	}
	admin := env.AdminClient()
	t.Cleanup(func() {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	})
	return created.Name
}

// podnetReport keeps the pod networking findings of the test's own objects, in a report with a
// fixed header so that it can be compared with golden files.
func podnetReport(rep *findings.Report, keep func(string) bool) *findings.Report {
	return sectionReport(rep, findings.SectionSpec{Name: SectionPodNet, Title: "Pod networking"}, keep)
}

var volatileAge = regexp.MustCompile(`((?:pending|signed), oldest )[0-9hms]+`)

// assertGolden compares got, its volatile ages replaced, with testdata/NAME (golden.Assert;
// -update rewrites it).
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), volatileAge.ReplaceAll(got, []byte("${1}AGE")))
}

// TestDoctorPodNetworking reproduces seed 002's failure on a real control plane: custom
// networking on t3.small nodes whose kubelets admit 11 pods while the CNI has 6 addresses for
// pods, pods stuck in ContainerCreating with real-format FailedCreatePodSandBox events of each
// cause, a node selecting an ENIConfig that does not exist, an ENIConfig without a subnet, an
// unapproved kubelet-serving CSR of a node with a hard-coded hostname and a leaked CSINode. The
// same cluster is checked healthy first: no pod networking finding at all.
func TestDoctorPodNetworking(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	dyn := dynamic.NewForConfigOrDie(env.AdminConfig())
	env.InstallCRD(t, "testdata/eniconfig-crd.yaml", clusterread.GVRENIConfig)
	env.InstallCRD(t, "testdata/cninode-crd.yaml", gvrCNINode)
	env.CreateENIConfig(t, "us-west-2a", "subnet-0a1b2c3d4e5f60718", "sg-0123456789abcdef0")

	env.CreateAWSNode(t, "aws-node-podnet", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.1-eksbuild.1", map[string]string{
		"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "ENI_CONFIG_LABEL_DEF": corev1.LabelTopologyZone,
		"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1",
	})

	// One node per OS image and provisioner, and one more AL2 node for the other causes.
	const prefix = "ip-10-64-"
	al2, al2023, bottlerocket, karpenter, mixed := prefix+"0-1.ec2.internal", prefix+"0-2.ec2.internal", prefix+"0-3.ec2.internal", prefix+"0-4.ec2.internal", prefix+"0-5.ec2.internal"
	nodes := []*corev1.Node{
		podnetNode(al2, "Amazon Linux 2", map[string]string{rules.LabelEksctlNodegroup: "ng-al2"}),
		podnetNode(al2023, "Amazon Linux 2023.5.20240701", map[string]string{rules.LabelEKSNodegroup: "mng-al2023"}),
		podnetNode(bottlerocket, "Bottlerocket OS 1.20.0 (aws-k8s-1.29)", nil),
		podnetNode(karpenter, "Amazon Linux 2023.5.20240701", map[string]string{rules.LabelKarpenterNodePool: "default"}),
		podnetNode(mixed, "Amazon Linux 2", map[string]string{rules.LabelEksctlNodegroup: "ng-al2"}),
	}
	for _, n := range nodes {
		createNode(ctx, t, admin, n)
	}
	ns := "podnet-team-a"
	testNamespace(ctx, t, admin, ns)
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	opts := Options{AWSNodeName: "aws-node-podnet", Workers: 4, Now: func() time.Time { return base }, CSRPendingAfter: time.Minute}
	// Every node runs five pods with VPC addresses and kube-proxy on the host network.
	ip := 0
	for i, n := range nodes {
		for j := 0; j < 5; j++ {
			ip++
			if _, err := kubeletsim.CreateRunningPod(ctx, admin, kubeletsim.PodSpec{Namespace: ns, Name: fmt.Sprintf("web-%d-%d", i, j), Node: n.Name, ScheduledAt: base.Add(-2 * time.Hour)},
				fmt.Sprintf("100.64.%d.%d", ip/250, ip%250+1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := kubeletsim.CreateRunningPod(ctx, admin, kubeletsim.PodSpec{Namespace: ns, Name: fmt.Sprintf("kube-proxy-%d", i), Node: n.Name, HostNetwork: true, ScheduledAt: base.Add(-2 * time.Hour)},
			fmt.Sprintf("10.64.0.%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	keep := func(res string) bool {
		return strings.Contains(res, prefix) || strings.Contains(res, ns) || strings.Contains(res, "aws-node-podnet") ||
			strings.HasPrefix(res, "eniconfig/") || strings.Contains(res, "myhost.corp.example") || strings.Contains(res, "ip-10-64-9-") || res == "karpenter" || res == "user/admin"
	}

	t.Run("healthy", func(t *testing.T) {
		rep, err := runOn(ctx, env.AdminConfig(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if fs := podnetReport(rep, keep).Findings(); len(fs) != 0 {
			t.Fatalf("a healthy cluster has pod networking findings: %v", fs)
		}
	})

	// The failures. The sixth pod with an address fills each of the first four nodes (6 of 6).
	for i, n := range nodes[:4] {
		ip++
		if _, err := kubeletsim.CreateRunningPod(ctx, admin, kubeletsim.PodSpec{Namespace: ns, Name: fmt.Sprintf("web-%d-5", i), Node: n.Name, ScheduledAt: base.Add(-time.Hour)},
			fmt.Sprintf("100.64.%d.%d", ip/250, ip%250+1)); err != nil {
			t.Fatal(err)
		}
	}
	stuck := func(name, node string, ago time.Duration, msgs ...string) {
		t.Helper()
		p, err := kubeletsim.CreateStuckPod(ctx, admin, kubeletsim.PodSpec{Namespace: ns, Name: name, Node: node, ScheduledAt: base.Add(-ago)})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			last := base.Add(-ago + time.Duration(i+1)*time.Minute)
			if _, err := kubeletsim.RecordSandboxFailure(ctx, admin, p, m, 5, base.Add(-ago), last); err != nil {
				t.Fatal(err)
			}
		}
	}
	stuck("api-1", al2, 12*time.Minute, sandboxMessage(msgNoAddress))
	stuck("api-2", al2, 10*time.Minute, sandboxMessage(msgIPAMDRefused), sandboxMessage(msgNoAddress)) // newest wins
	stuck("api-3", al2023, 9*time.Minute, sandboxMessage(msgNoAddress))
	stuck("api-4", bottlerocket, 8*time.Minute, sandboxMessage(msgNoAddress))
	stuck("api-5", karpenter, 7*time.Minute, sandboxMessage(msgNoAddress))
	stuck("ipamd-1", mixed, 6*time.Minute, sandboxMessage(msgIPAMDRefused))
	stuck("subnet-1", mixed, 5*time.Minute, sandboxMessage(msgSubnet))
	stuck("throttled-1", mixed, 4*time.Minute, sandboxMessage(msgThrottled))
	stuck("other-1", mixed, 3*time.Minute, msgOtherSandbox)
	stuck("quiet-1", mixed, 3*time.Minute)
	stuck("young-1", mixed, time.Minute, sandboxMessage(msgNoAddress)) // not stuck yet

	// Custom networking objects: a node selecting a missing ENIConfig, an ENIConfig without subnet.
	orphanENI := prefix + "0-6.ec2.internal"
	createNode(ctx, t, admin, podnetNode(orphanENI, "Amazon Linux 2", map[string]string{LabelENIConfig: "us-west-2z-pods"}))
	env.CreateENIConfig(t, "spare", "", "sg-0123456789abcdef0")

	// A node registered under a hard-coded hostname whose serving certificate nobody approves.
	hardcoded := "myhost.corp.example"
	hn := podnetNode(hardcoded, "Amazon Linux 2", map[string]string{rules.LabelEksctlNodegroup: "ng-al2"})
	hn.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalDNS, Address: prefix + "0-7.ec2.internal"}}
	createNode(ctx, t, admin, hn)
	csrName := servingCSR(ctx, t, hardcoded, "system:node:"+hardcoded, "system:nodes")
	// The same request from an administrator: no kubelet waits for it (info, NK722).
	servingCSR(ctx, t, "admin", "admin", "system:masters")
	// Approved as EKS's approver does, but never signed (EKS does not sign names it cannot verify
	// against the instance; no signer runs here): the kubelet still has no serving certificate.
	approveCSR(ctx, t, csrName)

	// A CSINode left behind by a deleted Node, without an owner: leaked.
	leakedCSI := prefix + "9-9.ec2.internal"
	if _, err := admin.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: leakedCSI}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}}},
		metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.StorageV1().CSINodes().Delete(context.Background(), leakedCSI, metav1.DeleteOptions{})
	})

	// A CNINode still owned by a Node that was deleted: the garbage collector's job (info).
	ownedCNI := prefix + "9-8.ec2.internal"
	if _, err := dyn.Resource(gvrCNINode).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "vpcresources.k8s.aws/v1alpha1", "kind": "CNINode",
		"metadata": map[string]any{"name": ownedCNI, "ownerReferences": []any{map[string]any{
			"apiVersion": "v1", "kind": "Node", "name": ownedCNI, "uid": "6f1d8c2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f"}}},
		"spec": map[string]any{"features": []any{map[string]any{"name": "SecurityGroupsForPods"}}},
	}}, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}

	// Karpenter with custom networking and no reserved ENI (the seed's recommendation was 1).
	kl := map[string]string{"app.kubernetes.io/name": "karpenter"}
	if _, err := admin.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "karpenter", Labels: kl},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: kl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: kl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "controller", Image: "public.ecr.aws/karpenter/controller:1.0.6",
				Env: []corev1.EnvVar{{Name: "RESERVED_ENIS", Value: "0"}, {Name: "CLUSTER_NAME", Value: "seed"}},
			}}}},
		},
	}, metav1.CreateOptions{FieldManager: "nodekeeper-test"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.AppsV1().Deployments(ns).Delete(context.Background(), "karpenter", metav1.DeleteOptions{})
	})

	rep, err := runOn(ctx, env.AdminConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	pn := podnetReport(rep, keep)
	got := map[string][]findings.Finding{}
	for _, f := range pn.Findings() {
		got[f.Code+" "+f.Resource] = append(got[f.Code+" "+f.Resource], f)
	}
	want := map[string]string{ // finding -> text its message must contain
		"NK701 node/" + al2:          "2 pods stuck",
		"NK701 node/" + al2023:       "1 pod stuck",
		"NK701 node/" + bottlerocket: "1 pod stuck",
		"NK701 node/" + karpenter:    "1 pod stuck",
		"NK702 node/" + mixed:        "subnet-1",
		"NK703 node/" + mixed:        "ipamd-1",
		"NK704 node/" + mixed:        "throttled-1",
		"NK705 node/" + mixed:        "other-1",
		"NK706 node/" + mixed:        "quiet-1",
		"NK707 namespace/" + ns:      "10 pods stuck on 5 nodes",
		"NK708 node/" + al2:          "6 pods hold VPC addresses",
		"NK708 node/" + al2023:       "6 pods hold VPC addresses",
		"NK708 node/" + bottlerocket: "6 pods hold VPC addresses",
		"NK708 node/" + karpenter:    "6 pods hold VPC addresses",
		"NK711 node/" + orphanENI:    `"us-west-2z-pods"`,
		"NK712 eniconfig/spare":      "no spec.subnet",
		"NK721 node/" + hardcoded:    "1 kubelet-serving certificate request approved but never signed",
		"NK722 user/admin":           "from a requester that is not a kubelet",
		"NK731 csinode/" + leakedCSI: "leaked",
		"NK713 karpenter":            "deployment/" + ns + "/karpenter RESERVED_ENIS=0",
		"NK732 cninode/" + ownedCNI:  "owned by the deleted Node",
	}
	for key, text := range want {
		fs := got[key]
		if len(fs) != 1 {
			t.Errorf("%s: %d findings, want exactly 1", key, len(fs))
			continue
		}
		if all := fs[0].Message + "\n" + strings.Join(fs[0].Evidence, "\n"); !strings.Contains(all, text) {
			t.Errorf("%s: %q lacks %q", key, all, text)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected finding %s: %v", key, got[key])
		}
	}
	// Each OS and provisioner gets its own fix, with the node's address capacity (8 = 6 + 2).
	fixes := map[string][]string{
		al2:          {"Amazon Linux 2, self-managed node group", "--use-max-pods false --kubelet-extra-args '--max-pods=8'"},
		al2023:       {"Amazon Linux 2023, managed node group", "launch template", "spec.kubelet.config.maxPods: 8", "ignores custom networking"},
		bottlerocket: {"Bottlerocket, unknown provisioner", "settings.kubernetes.max-pods = 8"},
		karpenter:    {"Amazon Linux 2023, Karpenter", "EC2NodeClass", "spec.kubelet.maxPods: 8", "reservedENIs to 1"},
	}
	for node, texts := range fixes {
		for _, code := range []string{"NK708", "NK101"} {
			var f *findings.Finding
			for _, x := range rep.Findings() {
				if x.Code == code && x.Resource == "node/"+node {
					x := x
					f = &x
				}
			}
			if f == nil {
				t.Errorf("%s: no %s finding", node, code)
				continue
			}
			ev := strings.Join(f.Evidence, "\n")
			for _, s := range texts {
				if !strings.Contains(ev, s) {
					t.Errorf("%s %s fix lacks %q:\n%s", code, node, s, ev)
				}
			}
			for other, ot := range fixes {
				if other != node && strings.Contains(ev, ot[len(ot)-1]) && ot[len(ot)-1] != texts[len(texts)-1] {
					t.Errorf("%s %s fix carries %s's text %q", code, node, other, ot[len(ot)-1])
				}
			}
		}
	}
	if f := got["NK732 cninode/"+ownedCNI]; len(f) == 1 && f[0].Severity != findings.Info {
		t.Errorf("an owned CNINode is the garbage collector's: %s, want info", f[0].Severity)
	}
	if f := got["NK731 csinode/"+leakedCSI]; len(f) == 1 && f[0].Severity != findings.Warning {
		t.Errorf("a leaked CSINode: %s, want warning", f[0].Severity)
	}
	if f := got["NK721 node/"+hardcoded]; len(f) == 1 {
		ev := strings.Join(f[0].Evidence, "\n")
		if !strings.Contains(ev, csrName) || !strings.Contains(ev, "NK631") || !strings.Contains(ev, prefix+"0-7.ec2.internal") {
			t.Errorf("NK721 evidence: %s", ev)
		}
		if !strings.Contains(f[0].Message, "approved but never signed") {
			t.Errorf("NK721 message does not say the request was approved but never signed: %s", f[0].Message)
		}
	}
	// Bounded requests: two pod lists and one event list, one page each at the default
	// --chunk-size (45 pods: 10 Pending, 35 Running; 11 events).
	if rep.Stats[StatPodListPages] != 2 || rep.Stats[StatEventListPages] != 1 {
		t.Errorf("list pages: %v", rep.Stats)
	}

	var text, js bytes.Buffer
	if err := findings.PrintText(&text, pn, findings.PrintOptions{MaxPerRule: 20, Catalog: catalog}); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "podnet.txt", text.Bytes())
	if err := findings.PrintJSON(&js, pn); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "podnet.json", js.Bytes())
	checkJSONSchema(t, js.Bytes())
	schematest.Validate(t, "DoctorReport", js.Bytes())
}

// checkJSONSchema pins the JSON field names of the report and of each finding: scripts and CI
// gates read them, so a rename is a breaking change.
func checkJSONSchema(t *testing.T, raw []byte) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	if got, want := keys(doc), "apiVersion,counts,exitCode,generated,kind,maxSeverity,sections,target,tool"; got != want {
		t.Errorf("report keys %s, want %s", got, want)
	}
	sec := doc["sections"].([]any)[0].(map[string]any)
	if got, want := keys(sec), "checked,counts,findings,name,title"; got != want {
		t.Errorf("section keys %s, want %s", got, want)
	}
	for _, f := range sec["findings"].([]any) {
		m := f.(map[string]any)
		got := keys(m)
		if got != "code,doc,evidence,message,name,remediation,resource,section,severity" && got != "code,doc,message,name,remediation,resource,section,severity" {
			t.Errorf("finding keys %s", got)
		}
	}
}
