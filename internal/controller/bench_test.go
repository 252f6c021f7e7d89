package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// The benchmarks run on a control plane of their own whose audit log records only the
// controller's requests (at Metadata level), so the counts come from the API server and the audit
// costs the API server next to nothing. Run them one at a time with -run '^$' -benchtime 1x.
const benchAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["nodekeeper-replica"]
- level: None
`

// benchEnv starts a dedicated control plane for one benchmark and points the package's helpers
// at it until the benchmark ends.
func benchEnv(b *testing.B) {
	b.Helper()
	e, err := testenv.Start(context.Background(), testenv.Options{AuditPolicy: benchAuditPolicy, StartTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	prev := env
	env = e
	b.Cleanup(func() {
		env = prev
		e.Stop()
	})
	if _, err := adminClient().CoreV1().Namespaces().Create(context.Background(), nsObject("nodekeeper-test"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// scrape returns the samples of the replica's /metrics at addr by series: name{labels} → value.
func scrape(addr string) (map[string]float64, error) {
	samples, err := promscrape.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(samples))
	for _, s := range samples {
		out[s.Series()] = s.Value
	}
	return out, nil
}

func waitMetric(b *testing.B, addr, series string, timeout time.Duration, ok func(float64) bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m, err := scrape(addr); err == nil {
			if v, found := m[series]; found && ok(v) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%s did not reach the expected value within %s", series, timeout)
}

// auditCounts counts the replica's requests by verb and resource at or after since.
func auditCounts(b *testing.B, since time.Time) map[string]int {
	b.Helper()
	out := map[string]int{}
	for _, e := range readAudit(b) {
		if e.User.Username == "nodekeeper-replica" && !e.Received.Before(since) {
			out[e.Verb+" "+e.Resource()]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// BenchmarkControllerConverge: 20,000 leaked leases beside 2,000 live simulated kubelets. It
// reports the time from the controller's start to the last leaked lease deleted and the requests
// the controller sent (from the API server's audit log), and checks that no other lease was
// touched. NODEKEEPER_BENCH_LEAKED / NODEKEEPER_BENCH_NODES / NODEKEEPER_BENCH_QPS override the sizes
// and the controller's client QPS (default 0: no client limit) ; workers: NODEKEEPER_BENCH_WORKERS (16).
func BenchmarkControllerConverge(b *testing.B) {
	leaked, nodes := envInt("NODEKEEPER_BENCH_LEAKED", 20000), envInt("NODEKEEPER_BENCH_NODES", 2000)
	qps, workers := envInt("NODEKEEPER_BENCH_QPS", 0), envInt("NODEKEEPER_BENCH_WORKERS", 16)
	for range b.N {
		benchEnv(b)
		start := time.Now()
		startKubelets(b, nodes)
		benchLog(b, "%d kubelets started in %s", nodes, time.Since(start).Round(time.Second))
		names := seedLeaked(b, "ip-10-250-0", leaked, 2*time.Hour)
		benchLog(b, "%d leaked leases seeded", len(names))

		addr := testenv.FreeAddr(b)
		start = time.Now()
		r := startReplica(b, replicaConfig{Identity: "converge", Grace: time.Hour, Workers: workers, QPS: float32(qps), Burst: max(qps, 1), MetricsAddr: addr})
		waitMetric(b, addr, "nodekeeper_cache_synced", 10*time.Minute, func(v float64) bool { return v == 1 })
		waitMetric(b, addr, `nodekeeper_lease_deletions_total{result="deleted"}`, 30*time.Minute, func(v float64) bool { return v >= float64(leaked) })
		converged := time.Since(start)
		m, err := scrape(addr)
		if err != nil {
			b.Fatal(err)
		}
		r.terminate(b)
		counts := auditCounts(b, start)
		benchLog(b, "converged in %s: %d leaked leases deleted beside %d live nodes (%.0f leases/s)",
			converged.Round(time.Millisecond), leaked, nodes, float64(leaked)/converged.Seconds())
		benchLog(b, "controller requests (audit): %d total: %v", total(counts), counts)
		benchLog(b, "controller metrics: deleted=%v healthy=%v", m[`nodekeeper_lease_deletions_total{result="deleted"}`], m[`nodekeeper_leases{class="healthy"}`])

		// No other lease touched: every live node's lease is still there, owned, and the only
		// writes the controller sent were the DELETEs of the leaked ones.
		list, err := adminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list.Items) != nodes {
			b.Errorf("%d leases left, want the %d live nodes' leases", len(list.Items), nodes)
		}
		for _, l := range list.Items {
			if len(l.OwnerReferences) != 1 {
				b.Errorf("live lease %s lost its owner", l.Name)
			}
		}
		if counts["delete leases"] != leaked || counts["patch leases"] != 0 || counts["update leases"] != 0 {
			b.Errorf("writes: %d deletes (want %d), %d patches, %d updates", counts["delete leases"], leaked, counts["patch leases"], counts["update leases"])
		}
		b.ReportMetric(converged.Seconds(), "converge-s")
		b.ReportMetric(float64(total(counts)), "requests")
		b.ReportMetric(float64(leaked)/converged.Seconds(), "leases/s")
	}
}

// startKubelets starts n simulated kubelets with the default configuration, 32 at a time; they
// stop when the benchmark ends.
func startKubelets(b *testing.B, n int) {
	b.Helper()
	fleet := env.NewFleet(b)
	cfgs := make([]kubeletsim.Config, n)
	for i := range cfgs {
		cfgs[i] = kubeletsim.Config{Name: kubeletsim.NodeName(i)}
	}
	if _, err := fleet.StartAll(context.Background(), cfgs, 32); err != nil {
		b.Fatal(err)
	}
}

// realisticNodes creates n Nodes shaped like EKS nodes registered by a kubelet (labels,
// annotations, capacity, conditions, addresses, node info and 50 images: 10–20 KB each), by
// registering one simulated kubelet and cloning its Node under n names.
func realisticNodes(b *testing.B, n int) []*corev1.Node {
	b.Helper()
	ctx := context.Background()
	fleet := kubeletsim.NewFleet(env.NodeConfig)
	tmplName := "ip-10-255-255-254.us-west-2.compute.internal"
	k, err := fleet.Start(ctx, kubeletsim.Config{Name: tmplName})
	if err != nil {
		b.Fatal(err)
	}
	k.Stop()
	tmpl, err := adminClient().CoreV1().Nodes().Get(ctx, tmplName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tmpl.ObjectMeta = metav1.ObjectMeta{Name: tmpl.Name, Labels: tmpl.Labels, Annotations: tmpl.Annotations}
	raw, err := json.Marshal(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	benchLog(b, "template Node: %d bytes of JSON", len(raw))
	out := make([]*corev1.Node, n)
	if err := testenv.Parallel(n, 64, func(i int) error {
		name := kubeletsim.NodeName(i)
		var node corev1.Node
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), tmplName, name)), &node); err != nil {
			return err
		}
		created, err := adminClient().CoreV1().Nodes().Create(ctx, &node, metav1.CreateOptions{})
		out[i] = created
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if err := adminClient().CoreV1().Nodes().Delete(ctx, tmplName, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkControllerMemory compares the resident memory of the controller (Nodes cached as
// metadata, name and UID only) with the same controller caching whole Node objects, on 5,000
// realistic Nodes and 50,000 leases (the Nodes' own leases plus ownerless leases of dead kubelets
// still within the grace period, so that neither controller acts). Each controller runs in its
// own process; RSS is read from /proc after the caches have synced and the process has settled.
// NODEKEEPER_BENCH_NODES / NODEKEEPER_BENCH_LEASES override the sizes.
func BenchmarkControllerMemory(b *testing.B) {
	nodes, leases := envInt("NODEKEEPER_BENCH_NODES", 5000), envInt("NODEKEEPER_BENCH_LEASES", 50000)
	for range b.N {
		benchEnv(b)
		ctx := context.Background()
		created := realisticNodes(b, nodes)
		now := metav1.NowMicro()
		if err := testenv.Parallel(leases, 64, func(i int) error {
			l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}
			if i < nodes {
				n := created[i]
				l.Name = n.Name
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
			} else {
				l.Name = kubeletsim.NodeName(i)
				old := metav1.NewMicroTime(now.Add(-2 * time.Hour))
				l.Spec.RenewTime = &old
			}
			l.Spec.HolderIdentity = ptr.To(l.Name)
			_, err := adminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).Create(ctx, l, metav1.CreateOptions{FieldManager: "kubelet"})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		benchLog(b, "%d realistic Nodes and %d leases created", nodes, leases)

		measure := func(full bool) (rssKiB, anonKiB, peakKiB int, heap float64) {
			addr := testenv.FreeAddr(b)
			// A grace period of a year: the ownerless leases are zombies of stopped kubelets, so
			// neither controller deletes anything while it is measured.
			r := startReplica(b, replicaConfig{Identity: fmt.Sprintf("memory-full-%v", full), Grace: 365 * 24 * time.Hour,
				Workers: 4, FullNodes: full, MetricsAddr: addr})
			waitMetric(b, addr, "nodekeeper_cache_synced", 10*time.Minute, func(v float64) bool { return v == 1 })
			waitMetric(b, addr, `nodekeeper_leases{class="zombie"}`, time.Minute, func(v float64) bool { return v == float64(leases-nodes) })
			time.Sleep(30 * time.Second) // let the work queue drain and the runtime return what the initial sync freed
			rssKiB, anonKiB, peakKiB = r.rssKiB(b)
			if dir := os.Getenv("NODEKEEPER_BENCH_PROFILE_DIR"); dir != "" {
				if resp, err := http.Get("http://" + addr + "/debug/pprof/heap"); err == nil {
					f, _ := os.Create(fmt.Sprintf("%s/heap-full-%v.pprof", dir, full))
					_, _ = io.Copy(f, resp.Body)
					f.Close()
					resp.Body.Close()
				}
			}
			m, err := scrape(addr)
			if err != nil {
				b.Fatal(err)
			}
			heap = m["go_memstats_heap_inuse_bytes"]
			r.terminate(b)
			return rssKiB, anonKiB, peakKiB, heap
		}
		metaRSS, metaAnon, metaPeak, metaHeap := measure(false)
		fullRSS, fullAnon, fullPeak, fullHeap := measure(true)
		benchLog(b, "metadata-only Node cache: RSS %.1f MiB (anonymous %.1f MiB, peak %.1f MiB), heap in use %.1f MiB",
			float64(metaRSS)/1024, float64(metaAnon)/1024, float64(metaPeak)/1024, metaHeap/(1<<20))
		benchLog(b, "full Node cache:          RSS %.1f MiB (anonymous %.1f MiB, peak %.1f MiB), heap in use %.1f MiB",
			float64(fullRSS)/1024, float64(fullAnon)/1024, float64(fullPeak)/1024, fullHeap/(1<<20))
		benchLog(b, "ratio metadata/full: RSS %.2f, anonymous RSS %.2f, peak RSS %.2f, heap %.2f (target: RSS at most 0.33)",
			float64(metaRSS)/float64(fullRSS), float64(metaAnon)/float64(fullAnon), float64(metaPeak)/float64(fullPeak), metaHeap/fullHeap)
		b.ReportMetric(float64(metaRSS)/1024, "meta-rss-MiB")
		b.ReportMetric(float64(fullRSS)/1024, "full-rss-MiB")
		b.ReportMetric(float64(metaRSS)/float64(fullRSS), "meta/full-rss")
		b.ReportMetric(float64(metaAnon)/float64(fullAnon), "meta/full-anon")
		b.ReportMetric(float64(metaPeak)/float64(fullPeak), "meta/full-peak")
	}
}

// BenchmarkIdleListRequests counts the controller's LIST requests (from the API server's audit
// log) during an idle period after its initial sync, with live kubelets renewing their leases.
// The period is 5 minutes (NODEKEEPER_BENCH_IDLE_SECONDS overrides it); the expected count is 0.
func BenchmarkIdleListRequests(b *testing.B) {
	idle := time.Duration(envInt("NODEKEEPER_BENCH_IDLE_SECONDS", 300)) * time.Second
	nodes := envInt("NODEKEEPER_BENCH_NODES", 100)
	for range b.N {
		benchEnv(b)
		startKubelets(b, nodes)
		seedLeaked(b, "ip-10-251-0", 10, 2*time.Hour)
		addr := testenv.FreeAddr(b)
		start := time.Now()
		r := startReplica(b, replicaConfig{Identity: "idle", Grace: time.Hour, Workers: 4, QPS: 20, Burst: 50, MetricsAddr: addr})
		waitMetric(b, addr, "nodekeeper_cache_synced", 5*time.Minute, func(v float64) bool { return v == 1 })
		waitMetric(b, addr, `nodekeeper_leases{class="leaked"}`, time.Minute, func(v float64) bool { return v == 0 })
		synced := time.Now()
		time.Sleep(idle)
		r.terminate(b)
		initial := auditCounts(b, start)
		after := auditCounts(b, synced)
		lists := after["list leases"] + after["list nodes"]
		benchLog(b, "whole run: %v", initial)
		benchLog(b, "%s idle after the initial sync, %d kubelets renewing: %d LIST requests, %d requests in all: %v",
			idle, nodes, lists, total(after), after)
		if lists != 0 {
			b.Errorf("%d LIST requests after the initial sync", lists)
		}
		b.ReportMetric(float64(lists), "lists-after-sync")
		b.ReportMetric(float64(total(after)), "requests-after-sync")
	}
}

// benchLog logs and prints: go test shortens a benchmark's log, and these are the figures.
func benchLog(b *testing.B, format string, args ...any) {
	b.Helper()
	b.Logf(format, args...)
	fmt.Fprintf(os.Stderr, "%s: %s\n", b.Name(), fmt.Sprintf(format, args...))
}
