package doctor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

const benchLabel = "nodekeeper.io/doctor-bench"

// parallel runs fn(i) for i in [0, n) with at most workers in flight and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// benchNode is a Ready m5.large Node whose kubelet endpoint is a stub port in the namespace.
func benchNode(name, ip string, port int, kubeletVersion string) *corev1.Node {
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			benchLabel: "true", corev1.LabelInstanceTypeStable: "m5.large", "kubernetes.io/os": "linux",
		}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourcePods: resource.MustParse("29"), corev1.ResourceCPU: resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("7Gi"),
			},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: kubeletVersion},
		},
	}
}

// BenchmarkDoctor2000Nodes runs doctor against 2,000 Nodes whose kubelets answer /configz from a
// network namespace, through the real API server's node proxy. It reports the run time, the
// configz requests per run (must equal the node count: one per node, no retries) and the API
// requests per run, and fails if any node got more than one configz request in a run.
//
//	go test ./internal/doctor -run '^$' -bench Doctor2000 -benchtime 1x
func BenchmarkDoctor2000Nodes(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	admin := env.AdminClient()
	sv := serverVersion(b, admin)
	kubeletVersion := fmt.Sprintf("v%d.%d.0-eks-1", sv.Major(), sv.Minor())

	ns, srv := newStub(b, n, func(i int) []byte {
		cfg := kubeletDefaults(29)
		if i%10 == 0 { // every tenth node with the seed's fix, so the report is not uniform
			cfg["registryPullQPS"], cfg["registryBurst"] = 50, 100
		}
		return configz(b, cfg)
	})
	eps := srv.Endpoints()
	names := make([]string, n)
	uids := make([]string, n)
	setup := time.Now()
	// Creating 4,000 objects is setup, not the measured run: many writers at once.
	err := parallel(n, 32, func(i int) error {
		names[i] = fmt.Sprintf("ip-10-70-%d-%d.ec2.internal", i/250, i%250+1)
		node := benchNode(names[i], ns.NSIP, eps[i].Port, kubeletVersion)
		created, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		if err != nil {
			return err
		}
		uids[i] = string(created.UID)
		if created.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 { // status dropped on create
			created.Status = node.Status
			if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "nodekeeper-bench"}); err != nil {
				return err
			}
		}
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: "kube-node-lease", Labels: map[string]string{benchLabel: "true"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: names[i], UID: created.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(names[i]), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		_, err = admin.CoordinationV1().Leases("kube-node-lease").Create(ctx, l, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		return err
	})
	b.Cleanup(func() { cleanupBench(admin) })
	if err != nil {
		b.Fatal(err)
	}
	env.CreateAWSNode(b, "aws-node-bench", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.1-eksbuild.1",
		map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1"})
	b.Logf("setup: %d nodes and leases in %s", n, time.Since(setup).Round(time.Millisecond))

	// The client's rate limit bounds the run (one request per node): the default, and a higher
	// one to show where the API server and the proxy path themselves stand.
	for _, qps := range []float32{100, 400} {
		b.Run(fmt.Sprintf("qps=%.0f", qps), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				before := make([]int64, n)
				for j, e := range eps {
					before[j] = e.Hits()
				}
				start := time.Now()
				rep, err := runLimited(ctx, env.AdminConfig(), kube.RateLimit{QPS: qps, Burst: int(3 * qps)}, Options{AWSNodeName: "aws-node-bench"})
				el := time.Since(start)
				total += el
				if err != nil {
					b.Fatal(err)
				}
				for j, e := range eps {
					if d := e.Hits() - before[j]; d != 1 {
						b.Fatalf("node %s: %d configz requests in one run, want exactly 1", names[j], d)
					}
				}
				if rep.Stats[StatConfigzErrors] != 0 {
					b.Fatalf("%d configz errors", rep.Stats[StatConfigzErrors])
				}
				b.ReportMetric(float64(rep.Stats[StatConfigzRequests]), "configz-requests/op")
				b.ReportMetric(float64(rep.Stats[StatAPIRequests]), "api-requests/op")
				b.Logf("run %d: %d nodes in %s, %d configz requests, %d API requests, %d findings",
					i, rep.Stats[StatNodes], el.Round(time.Millisecond), rep.Stats[StatConfigzRequests], rep.Stats[StatAPIRequests], len(rep.Findings()))
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/run")
		})
	}
}

func cleanupBench(admin kubernetes.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: benchLabel + "=true"}
	_ = admin.CoordinationV1().Leases("kube-node-lease").DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
	_ = admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
}
