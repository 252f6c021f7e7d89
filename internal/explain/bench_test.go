package explain

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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

const benchLabel = "nodekeeper.io/explain-bench"

// BenchmarkExplain2000Nodes tells one node's story on a cluster of 2,000 Nodes with their leases
// and 4,000 pods (two a node), the node explained by name: its reads must stay those of one node
// (issue 29: at most 20 API requests, under 2 s). It reports the requests and the wall time of
// a story, with the CLI's rate limit (20 QPS, burst 40).
//
//	go test ./internal/explain -run '^$' -bench Explain2000 -benchtime 5x
func BenchmarkExplain2000Nodes(b *testing.B) {
	const n = 2000
	ctx := context.Background()
	admin := env.AdminClient()
	const team = "explain-bench"
	if err := kubeletsim.EnsureNamespace(ctx, admin, team); err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	setup := time.Now()
	err := parallelDo(n, 32, func(i int) error {
		names[i] = fmt.Sprintf("ip-10-71-%d-%d.us-west-2.compute.internal", i/250, i%250+1)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{benchLabel: "true"}},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///us-west-2a/i-0%016x", i+1)}}
		created, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		// kube-controller-manager's node lifecycle controller writes the new Node too (its taints).
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := admin.CoreV1().Nodes().Get(ctx, names[i], metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")}
			cur.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.71.%d.%d", i/250, i%250+1)}}
			_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: "kube-node-lease", Labels: map[string]string{benchLabel: "true"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: names[i], UID: created.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(names[i]), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		if _, err := admin.CoordinationV1().Leases("kube-node-lease").Create(ctx, l, metav1.CreateOptions{}); err != nil {
			return err
		}
		for j := range 2 {
			if _, err := kubeletsim.CreateRunningPod(ctx, admin, kubeletsim.PodSpec{Namespace: team, Name: fmt.Sprintf("web-%d-%d", i, j), Node: names[i]},
				fmt.Sprintf("100.71.%d.%d", (2*i+j)/250, (2*i+j)%250+1)); err != nil {
				return err
			}
		}
		return nil
	})
	b.Cleanup(func() {
		bg := context.Background()
		sel := metav1.ListOptions{LabelSelector: benchLabel}
		_ = admin.CoreV1().Pods(team).DeleteCollection(bg, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		_ = admin.CoordinationV1().Leases("kube-node-lease").DeleteCollection(bg, metav1.DeleteOptions{}, sel)
		_ = admin.CoreV1().Nodes().DeleteCollection(bg, metav1.DeleteOptions{}, sel)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d Nodes, leases and %d pods in %s", n, 2*n, time.Since(setup).Round(time.Millisecond))
	cfg := env.AdminConfig()
	cfg.QPS, cfg.Burst = 20, 40
	var requests int64
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := depsFor(b, cfg)
		start := time.Now()
		s, err := Tell(ctx, d, Options{Target: names[n/2]})
		total += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if !s.Target.NodeExists {
			b.Fatalf("target %+v", s.Target)
		}
		requests = s.Requests.Kubernetes
		if requests > 20 {
			b.Errorf("%d API requests for one node, more than 20", requests)
		}
	}
	b.ReportMetric(float64(requests), "requests/op")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/story")
}

// parallelDo runs fn(i) for i in [0, n) with at most workers in flight and returns the first error.
func parallelDo(n, workers int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range workers {
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
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
