package doctor

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// requestCounter counts the requests a client sends by verb and resource path (query dropped),
// LIST pages counted one by one.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

type countingRT struct {
	rt http.RoundTripper
	c  *requestCounter
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Method + " " + r.URL.Path
	// Collapse names so that per-object requests show up as one line each per kind.
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) > 4 && parts[0] == "api" && parts[2] == "nodes" {
		key = r.Method + " /api/v1/nodes/NAME/" + strings.Join(parts[4:], "/")
	}
	if len(parts) > 6 && parts[0] == "api" && parts[2] == "namespaces" && parts[4] == "pods" {
		key = r.Method + " /api/v1/namespaces/" + parts[3] + "/pods/NAME/" + strings.Join(parts[6:], "/")
	}
	c.c.mu.Lock()
	c.c.n[key]++
	c.c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

func (c *requestCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k := range c.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %5d %s\n", c.n[k], k)
	}
	return b.String()
}

func (c *requestCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// BenchmarkDoctorPodNetworking runs doctor on 2,000 Nodes with 20,000 pods (2,000 of them stuck
// in ContainerCreating) and 50,000 events (10,000 FailedCreatePodSandBox for the stuck pods, the
// rest the Scheduled/Pulled/Created/Started of the running ones), and an aws-node pod on every
// node whose ipamd serves real-format metrics from a network namespace: once without the pod
// networking section (the doctor before it), once with it (the doctor before the CNI metrics),
// and once with the CNI metrics too; the last two again at the CLI's default rate limit. It reports the wall
// time of each and the requests by verb and path, and fails if the section's pod and event reads
// are not a bounded number of LIST pages (kube.DefaultChunkSize objects each), if an
// aws-node pod gets other than exactly one metrics request, or if more metrics requests were in
// flight at once than CNIMetricsWorkers.
//
//	go test ./internal/doctor -run '^$' -bench DoctorPodNetworking -benchtime 1x -timeout 60m
//	go test ./internal/doctor -run '^$' -bench 'DoctorPodNetworking/with-' -benchtime 1x -timeout 60m  # make bench doctor-cni
func BenchmarkDoctorPodNetworking(b *testing.B) {
	const (
		nodes       = 2000
		podsPerNode = 10
		stuckEvery  = 10 // one pod in ten is stuck: 2,000
		events      = 50000
	)
	ctx := context.Background()
	admin := env.AdminClient()
	setup := time.Now()
	names := make([]string, nodes)
	err := parallel(nodes, 32, func(i int) error {
		names[i] = fmt.Sprintf("ip-10-80-%d-%d.ec2.internal", i/250, i%250+1)
		n := podnetNode(names[i], []string{"Amazon Linux 2", "Amazon Linux 2023.5.20240701", "Bottlerocket OS 1.20.0 (aws-k8s-1.29)"}[i%3], map[string]string{benchLabel: "true"})
		n.Labels["nodekeeper.io/test"] = "podnet-bench"
		created, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		if err != nil {
			return err
		}
		created.Status = n.Status
		_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "nodekeeper-bench"})
		return err
	})
	b.Cleanup(func() { cleanupPodnetBench(admin) })
	if err != nil {
		b.Fatal(err)
	}
	const ns = "podnet-bench"
	if err := kubeletsim.EnsureNamespace(ctx, admin, ns); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	stuckPods := make([]*corev1.Pod, 0, nodes*podsPerNode/stuckEvery)
	var mu sync.Mutex
	err = parallel(nodes*podsPerNode, 32, func(i int) error {
		spec := kubeletsim.PodSpec{Namespace: ns, Name: fmt.Sprintf("app-%05d", i), Node: names[i%nodes], ScheduledAt: now.Add(-20 * time.Minute)}
		if i%stuckEvery == 0 {
			p, err := kubeletsim.CreateStuckPod(ctx, admin, spec)
			if err == nil {
				mu.Lock()
				stuckPods = append(stuckPods, p)
				mu.Unlock()
			}
			return err
		}
		_, err := kubeletsim.CreateRunningPod(ctx, admin, spec, fmt.Sprintf("100.%d.%d.%d", 64+i/65536, i/256%256, i%256))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []string{sandboxMessage(msgNoAddress), sandboxMessage(msgIPAMDRefused), sandboxMessage(msgSubnet), sandboxMessage(msgThrottled), msgOtherSandbox}
	sandboxEvents := len(stuckPods) * 5
	err = parallel(events, 32, func(i int) error {
		if i < sandboxEvents {
			p := stuckPods[i/5]
			_, err := kubeletsim.RecordSandboxFailure(ctx, admin, p, msgs[(i/5)%len(msgs)], int32(1+i%5), now.Add(-15*time.Minute), now.Add(-time.Duration(i%5)*time.Minute))
			return err
		}
		// Ordinary events of the running pods.
		reason := []string{"Scheduled", "Pulled", "Created", "Started"}[i%4]
		e := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("ev-%06d", i), Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("app-%05d", i%(nodes*podsPerNode))},
			Reason:         reason, Message: reason + " container app", Type: corev1.EventTypeNormal, Count: 1,
			FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Source: corev1.EventSource{Component: "kubelet"},
		}
		_, err := admin.CoreV1().Events(ns).Create(ctx, e, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	ds := env.CreateAWSNode(b, "aws-node-podnet-bench", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.1-eksbuild.1",
		map[string]string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1"})
	// Every node's aws-node pod, Ready, its ipamd on a port of its own at the namespace's address.
	netns := newNetns(b)
	ipamd := startIPAMD(b, netns, make([]int, nodes), func(int) []byte { return ipamdMetricsBody(b, healthyIPAMD) })
	eps := ipamd.Endpoints()
	if err := parallel(nodes, 32, func(i int) error {
		_, err := newAWSNodePod(ctx, admin, ds, names[i], netns.NSIP, eps[i].Port, true)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d nodes, %d pods (%d stuck), %d events, %d aws-node pods in %s", nodes, nodes*podsPerNode, len(stuckPods), events, nodes, time.Since(setup).Round(time.Second))

	// The first three without a client-side rate limit (the proxy path and the server's work),
	// the last two at the CLI's default --qps 100 --burst 300 (as users run it, where the
	// request count sets a floor).
	for _, run := range []struct {
		name                   string
		podNetworking, metrics bool
		limit                  kube.RateLimit
	}{
		{"without-pod-networking", false, false, kube.RateLimit{}},
		{"with-pod-networking", true, false, kube.RateLimit{}},
		{"with-cni-metrics", true, true, kube.RateLimit{}},
		{"with-pod-networking-default-qps", true, false, DefaultRateLimit},
		{"with-cni-metrics-default-qps", true, true, DefaultRateLimit},
	} {
		name, withSection := run.name, run.podNetworking
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				counter := &requestCounter{n: map[string]int{}}
				cfg := env.AdminConfig()
				cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt: rt, c: counter} })
				hits := ipamd.TotalHits()
				before := make([]int64, len(eps))
				for i, ep := range eps {
					before[i] = ep.Hits()
				}
				o := Options{AWSNodeName: ds.Name, SkipPodNetworking: !withSection, SkipCNIMetrics: !run.metrics}
				start := time.Now()
				rep, err := runLimited(ctx, cfg, run.limit, o)
				el := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(el.Seconds(), "s/run")
				b.ReportMetric(float64(rep.Stats[StatAPIRequests]), "api-requests/op")
				b.Logf("%s: %s, %d API requests, %d findings, stats %v\nrequests by verb and path:\n%s",
					name, el.Round(time.Millisecond), rep.Stats[StatAPIRequests], len(rep.Findings()), rep.Stats, counter)
				if withSection {
					pods, evs := counter.get("GET /api/v1/pods"), counter.get("GET /api/v1/events")
					// 20,000 pods and the 2,000 aws-node pods in two field-selected lists and
					// 10,000 matching events, in pages of kube.DefaultChunkSize, plus the
					// add-on section's one page of reason=Failed events (none here).
					if pods > (nodes*podsPerNode+nodes)/int(kube.DefaultChunkSize)+2 || evs > 10_000/int(kube.DefaultChunkSize)+2 || rep.Stats[StatStuckPods] != int64(len(stuckPods)) {
						b.Fatalf("pod list pages %d, event list pages %d, stuck pods %d (want %d)", pods, evs, rep.Stats[StatStuckPods], len(stuckPods))
					}
					b.ReportMetric(float64(pods), "pod-list-pages/op")
					b.ReportMetric(float64(evs), "event-list-pages/op")
				}
				metrics := ipamd.TotalHits() - hits
				b.ReportMetric(float64(metrics), "cni-metrics-requests/op")
				if !run.metrics {
					continue
				}
				for i, ep := range eps {
					if n := ep.Hits() - before[i]; n != 1 {
						b.Fatalf("aws-node pod of %s: %d metrics requests in a run, want 1", names[i], n)
					}
				}
				if metrics != nodes || rep.Stats[StatCNIMetricsRequests] != nodes || rep.Stats[StatCNIMetricsErrors] != 0 {
					b.Fatalf("metrics requests %d, stats %v", metrics, rep.Stats)
				}
				if m, bound := ipamd.MaxInFlight(), int64(DefaultWorkers); m > bound {
					b.Fatalf("%d metrics requests in flight at once, more than CNIMetricsWorkers %d", m, bound)
				}
			}
		})
	}
}

func cleanupPodnetBench(admin kubernetes.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = admin.CoreV1().Pods("podnet-bench").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	_ = admin.CoreV1().Events("podnet-bench").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = admin.CoreV1().Namespaces().Delete(ctx, "podnet-bench", metav1.DeleteOptions{})
	_ = admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "nodekeeper.io/test=podnet-bench"})
	_ = admin.CoreV1().Pods(metav1.NamespaceSystem).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: "k8s-app=aws-node-podnet-bench"})
}
