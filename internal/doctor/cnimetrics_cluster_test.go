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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/doctor/kubeletstub"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
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
// runs here): a pod from the DaemonSet's template, owned by it, bound to the node, then its
// status: Running at ip (aws-node is hostNetwork: the node's address), Ready or not. port, when
// not 0, replaces the aws-node container's "metrics" port, so that several simulated nodes share
// one namespace address.
func createAWSNodePod(ctx context.Context, t *testing.T, c kubernetes.Interface, ds *appsv1.DaemonSet, node, ip string, port int, ready bool) *corev1.Pod {
	t.Helper()
	tmpl := ds.Spec.Template.DeepCopy()
	p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	p.Name, p.Namespace = ds.Name+"-"+strings.ReplaceAll(node, ".", "-"), ds.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	p.Spec.NodeName, p.Spec.HostNetwork = node, true
	if ctr := awsNodeContainerIn(p.Spec.Containers); ctr != nil && port != 0 {
		ctr.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(port)}}
	}
	created, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: kubeletsim.PodFieldManager})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
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
	updated, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: kubeletsim.PodFieldManager})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

// cniFindings are the findings of the aws-node and cni-metrics sections, and any warning or error
// of another section, about the resources keep accepts, as "CODE:severity" by resource.
func cniFindings(rep *findings.Report, keep func(string) bool) map[string][]string {
	out := map[string][]string{}
	for _, f := range rep.Findings() {
		if !keep(f.Resource) {
			continue
		}
		if f.Section == SectionAWSNode || f.Section == SectionCNIMetrics || f.Severity >= findings.Warning {
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
	ns, kubelets := newStub(t, 1, func(int) []byte { return configz(t, tuned) })
	ipamd := startIPAMD(t, ns, []int{kubeletstub.IPAMDMetricsPort}, func(int) []byte { return ipamdMetricsBody(t, healthyIPAMD) })
	fleet := kubeletsim.NewFleet(func(n string) *rest.Config { return env.UserConfig("system:node:"+n, "system:nodes") })
	t.Cleanup(fleet.StopAll)
	if _, err := fleet.Start(ctx, kubeletsim.Config{
		Name: node, InstanceType: "m5.large", MaxPods: 29, KubeletVersion: fmt.Sprintf("v%d.%d.0-eks-1", sv.Major(), sv.Minor()),
		InternalIP: ns.NSIP, KubeletPort: int32(kubelets.Endpoints()[0].Port),
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })

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
			})
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
