package gc

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/gobuild"
)

// benchLeases is the size of the gc benchmark (override with NODEKEEPER_BENCH_LEASES).
func benchLeases(def int) int {
	if s := os.Getenv("NODEKEEPER_BENCH_LEASES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// refRaw is the raw configuration gc's default flags are held to (issue 11: >= 0.9 of it).
const refRaw = "protobuf-64"

// rawSelected reports whether NODEKEEPER_BENCH_RAW (a comma-separated list; empty: all) keeps the
// raw configuration name; the reference is always kept.
func rawSelected(name string) bool {
	sel := os.Getenv("NODEKEEPER_BENCH_RAW")
	return sel == "" || name == refRaw || slices.Contains(strings.Split(sel, ","), name)
}

// rawConfig is one way to send plain parallel DELETEs.
type rawConfig struct {
	name        string
	protobuf    bool
	workers     int
	connections int // distinct HTTP/2 connections, workers spread over them
}

// separateConnections returns n client configurations that do not share a transport, so each
// gets its own HTTP/2 connection (a config with a Proxy function is never taken from client-go's
// transport cache).
func separateConnections(cfg *rest.Config, n int) []*rest.Config {
	out := make([]*rest.Config, n)
	for i := range out {
		c := rest.CopyConfig(cfg)
		c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		out[i] = c
	}
	return out
}

// rawDelete deletes names with plain DELETEs (no Node check, no preconditions): the API server's
// ceiling for lease deletes with this client configuration. Returns deletes per second.
func rawDelete(b *testing.B, rc rawConfig, names []string) float64 {
	cfg := env.AdminConfig()
	cfg.QPS = -1
	return rawDeleteWith(b, cfg, rc, names)
}

func rawDeleteWith(b *testing.B, cfg *rest.Config, rc rawConfig, names []string) float64 {
	b.Helper()
	if rc.protobuf {
		cfg = kube.Protobuf(cfg)
	}
	conns := max(rc.connections, 1)
	var clients []kubernetes.Interface
	for _, c := range separateConnections(cfg, conns) {
		clients = append(clients, kubernetes.NewForConfigOrDie(c))
	}
	var next, failed atomic.Int64
	cpu0 := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range rc.workers {
		c := clients[w%conns].CoordinationV1().Leases(lease.NodeLeaseNamespace)
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				if err := c.Delete(context.Background(), names[i], metav1.DeleteOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	b.Logf("raw %s used %s of client CPU (%.0f µs per lease)", rc.name, (processCPU() - cpu0).Round(time.Millisecond),
		float64((processCPU()-cpu0).Microseconds())/float64(len(names)))
	if failed.Load() > 0 {
		b.Fatalf("raw %s: %d deletes failed", rc.name, failed.Load())
	}
	return float64(len(names)) / took.Seconds()
}

// BenchmarkGCvsRaw measures, in one run against one local API server, on the same number of
// leaked leases: the raw parallel DELETE rate of several client configurations (protobuf-64 is
// the reference of issue 11; the best is the API server's ceiling), `nodekeeper gc --yes` with its
// default flags (the real binary: default --workers and --qps) end to end and its delete phase
// alone, and the seed's `kubectl | jq | xargs kubectl delete` pipeline (on 2,000 leases: it runs at
// ~100/s). It reports rates and the ratios gc/raw and gc/pipeline. Run it once:
// -run '^$' -bench BenchmarkGCvsRaw -benchtime 1x. NODEKEEPER_BENCH_RAW=protobuf-64,protobuf-512
// keeps only those raw configurations (a shorter run).
func BenchmarkGCvsRaw(b *testing.B) {
	n := benchLeases(20000)
	pipelineN := min(n, 2000) // the pipeline runs at ~100/s; 2,000 leases measure it well enough
	b.ReportAllocs()
	for range b.N {
		reset(b)
		best, bestName, ref := 0.0, "", 0.0
		for _, rc := range []rawConfig{
			{name: "json-16", workers: 16},
			{name: "protobuf-16", protobuf: true, workers: 16},
			{name: "protobuf-64", protobuf: true, workers: 64},
			{name: "protobuf-256", protobuf: true, workers: 256},
			{name: "protobuf-512", protobuf: true, workers: 512},
			{name: "protobuf-128x4conn", protobuf: true, workers: 128, connections: 4},
		} {
			if !rawSelected(rc.name) {
				continue
			}
			names := seed(b, "ip-10-90-"+rc.name, n)
			rate := rawDelete(b, rc, names)
			fmt.Fprintf(os.Stderr, "BenchmarkGCvsRaw: raw DELETE %-20s %6.0f leases/s\n", rc.name, rate)
			b.ReportMetric(rate, "raw-"+rc.name+"/s")
			if rate > best {
				best, bestName = rate, rc.name
			}
			if rc.name == refRaw {
				ref = rate
			}
		}
		if ref == 0 {
			b.Fatalf("the reference raw configuration %s was not run", refRaw)
		}

		// nodekeeper gc, the real binary, as a user runs it: default flags.
		seed(b, "ip-10-91-gc", n)
		kc := filepath.Join(b.TempDir(), "kubeconfig")
		if err := env.WriteKubeconfig(kc, env.AdminConfig()); err != nil {
			b.Fatal(err)
		}
		bin := gobuild.Must(b, buildNodekeeper) // built before the clock starts
		cmd := exec.Command(bin, "gc", "--kubeconfig", kc, "--yes", "-o", "json")
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("nodekeeper gc: %v", err)
		}
		endToEnd := float64(n) / time.Since(start).Seconds()
		gcCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		fmt.Fprintf(os.Stderr, "BenchmarkGCvsRaw: nodekeeper gc used %s of CPU (%.0f µs per lease)\n", gcCPU.Round(time.Millisecond), float64(gcCPU.Microseconds())/float64(n))
		rep, err := parseReport(out)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Outcomes[deleter.Deleted] != n {
			b.Fatalf("nodekeeper gc deleted %d of %d", rep.Outcomes[deleter.Deleted], n)
		}
		deletePhase := float64(n) / rep.Seconds

		// The seed's pipeline, verbatim but for the kubeconfig.
		seed(b, "ip-10-92-pipe", pipelineN)
		script := fmt.Sprintf(`kubectl --kubeconfig %[1]s get lease -n kube-node-lease -o json | jq -r '.items | map(select(.metadata.ownerReferences == null ) | .metadata.name) | .[]' | xargs -n 10 kubectl --kubeconfig %[1]s delete lease -n kube-node-lease >/dev/null`, kc)
		start = time.Now()
		if out, err := exec.Command("bash", "-o", "pipefail", "-c", script).CombinedOutput(); err != nil {
			b.Fatalf("pipeline: %v\n%s", err, out)
		}
		pipeline := float64(pipelineN) / time.Since(start).Seconds()

		// Printed, not only logged: go test shortens a benchmark's log.
		fmt.Fprintf(os.Stderr, "BenchmarkGCvsRaw: %d leaked leases; best raw DELETE %s: %.0f/s; nodekeeper gc: %.0f/s delete phase, %.0f/s end to end (list, classify, delete: %d requests); kubectl|jq|xargs pipeline on %d leases: %.0f/s\n",
			n, bestName, best, deletePhase, endToEnd, rep.Requests, pipelineN, pipeline)
		fmt.Fprintf(os.Stderr, "BenchmarkGCvsRaw: default flags: gc delete phase / raw %s (%.0f/s) = %.2f, gc end to end / raw %s = %.2f\n",
			refRaw, ref, deletePhase/ref, refRaw, endToEnd/ref)
		fmt.Fprintf(os.Stderr, "BenchmarkGCvsRaw: ratios: gc delete phase / best raw = %.2f, gc end to end / best raw = %.2f, gc end to end / pipeline = %.1fx\n",
			deletePhase/best, endToEnd/best, endToEnd/pipeline)
		b.ReportMetric(best, "raw-best/s")
		b.ReportMetric(deletePhase, "gc-delete-phase/s")
		b.ReportMetric(endToEnd, "gc-end-to-end/s")
		b.ReportMetric(pipeline, "pipeline/s")
		b.ReportMetric(deletePhase/ref, "gc/raw-"+refRaw)
		b.ReportMetric(deletePhase/best, "gc/raw")
		b.ReportMetric(endToEnd/best, "gc-e2e/raw")
		b.ReportMetric(endToEnd/pipeline, "gc-e2e/pipeline")
	}
}

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// buildNodekeeper builds cmd/nodekeeper for the benchmarks, which measure the real process (its
// CPU time included) as a user runs it; buildRaw builds their reference process, ./rawdelete. The
// tests run the CLI in-process (cli_test.go).
var (
	buildNodekeeper = gobuild.Once("../../cmd/nodekeeper", "nodekeeper")
	buildRaw        = gobuild.Once("../test/rawdelete", "rawdelete")
)
