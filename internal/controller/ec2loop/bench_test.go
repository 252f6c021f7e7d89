package ec2loop_test

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekeeper/nodekeeper/internal/controller/ec2loop"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// BenchmarkEC2Loop5000 is one EC2 scan of a cluster of 5,000 running instances against awsfake:
// 4,000 of managed node groups (tagged kubernetes.io/cluster/NAME and eks:cluster-name) and
// 1,000 of Karpenter (kubernetes.io/cluster/NAME, karpenter.sh/nodepool, eks:eks-cluster-name),
// 4,990 of them with a Node, 10 without. It reports the DescribeInstances calls per scan (pages
// of the three tag filters at EC2's 1,000 a page; no per-instance call), the Node LIST
// requests, the allocations of a scan and the size of the instance structs it holds at its peak. The Nodes come from
// client-go's fake clientset, which answers a LIST in one page whatever its limit, and the
// allocations include awsfake's own work of filtering 5,000 instances for each page.
func BenchmarkEC2Loop5000(b *testing.B) {
	const n, orphans = 5000, 10
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cloud := awsfake.New()
	client := fake.NewClientset()
	for i := range n {
		id, dns := fmt.Sprintf("i-%017x", i), fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", i/65536, i/256%256, i%256)
		tags := []string{"eks:cluster-name", "prod", "eks:nodegroup-name", fmt.Sprintf("ng-%d", i%8)}
		if i >= 4000 {
			tags = []string{"karpenter.sh/nodepool", "default", "eks:eks-cluster-name", "prod"}
		}
		inst := tagged(id, dns, now.Add(-time.Hour), tags...) // tagged kubernetes.io/cluster/prod too
		cloud.Instances = append(cloud.Instances, inst)
		if i < n-orphans {
			if err := client.Tracker().Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: dns},
				Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	loop, err := ec2loop.New(ec2loop.Deps{EC2: cloud, Client: client, Recorder: events.NewFakeRecorder(n), Clock: clocktesting.NewFakeClock(now)},
		ec2loop.Options{Cluster: "prod", Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	nodeLists := func() int {
		count := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "list" && a.GetResource() == (schema.GroupVersionResource{Version: "v1", Resource: "nodes"}) {
				count++
			}
		}
		return count
	}
	// scan: the whole scan, the fakes' work included.
	b.Run("scan", func(b *testing.B) {
		callsBefore, listsBefore := cloud.Calls(instances.PermDescribeInstances), nodeLists()
		b.ReportAllocs()
		var s ec2loop.Scan
		for range b.N {
			s = loop.ScanOnce(ctx)
		}
		b.StopTimer()
		if s.Err != nil || len(s.WithoutNode) != orphans || s.Running != n {
			b.Fatalf("scan: %v, %d running, %d without Node", s.Err, s.Running, len(s.WithoutNode))
		}
		calls := cloud.Calls(instances.PermDescribeInstances) - callsBefore
		if calls != s.Calls*b.N {
			b.Fatalf("awsfake counted %d DescribeInstances calls, the scans %d", calls, s.Calls*b.N)
		}
		b.ReportMetric(float64(calls)/float64(b.N), "DescribeInstances/scan")
		b.ReportMetric(float64(nodeLists()-listsBefore)/float64(b.N), "NodeLISTs/scan")
		// The listing a scan holds at its peak: every running instance's struct (shallow; the
		// strings and tags it points to are the SDK's decoded answer).
		b.ReportMetric(float64(s.Running)*float64(unsafe.Sizeof(ec2types.Instance{})), "B-listing-structs")
	})
	// compare: the loop's own work on what was read, without the fakes: indexing 5,000 Nodes
	// and finding the instances without one.
	b.Run("compare", func(b *testing.B) {
		listing, err := instances.ListRunning(ctx, cloud, "prod")
		if err != nil {
			b.Fatal(err)
		}
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			set := instances.NewNodeSet(0)
			for i := range nodes.Items {
				set.Add(instances.Node{Name: nodes.Items[i].Name, ProviderID: nodes.Items[i].Spec.ProviderID})
			}
			if got := instances.WithoutNode(listing.Running, set, now, ec2loop.DefaultRegisterGrace); len(got) != orphans {
				b.Fatalf("%d without Node, want %d", len(got), orphans)
			}
		}
	})
}
