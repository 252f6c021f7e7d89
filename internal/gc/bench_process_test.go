package gc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/gobuild"
)

// benchPairs is how many paired runs BenchmarkGCProcessVsRaw makes (NODEKEEPER_BENCH_PAIRS).
func benchPairs() int {
	if n, err := strconv.Atoi(os.Getenv("NODEKEEPER_BENCH_PAIRS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// processRun is one timed whole process.
type processRun struct {
	wall, cpu time.Duration
}

// timeProcess runs bin with args to completion and returns its wall-clock and CPU time.
func timeProcess(b *testing.B, bin string, args ...string) processRun {
	b.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr // stdout to the null device, as a user's redirect
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, stderr.String())
	}
	return processRun{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

// BenchmarkGCProcessVsRaw is issue 20's throughput figure, whole process against whole process:
// `nodekeeper gc --yes` with its default flags against ./rawdelete (list the leases, then 64
// protobuf DELETEs in flight, no checks), each on the same number of freshly seeded leaked
// leases (20,000; NODEKEEPER_BENCH_LEASES), in pairs whose order alternates (raw first, then gc
// first, ...), so that a machine whose speed drifts affects both sides alike. It prints every
// pair's times and the median of the per-pair ratios raw time / gc time (the "fraction of raw"
// the issue quotes; 1 is raw's speed). Run it once:
// -run '^$' -bench BenchmarkGCProcessVsRaw -benchtime 1x (NODEKEEPER_BENCH_PAIRS, default 3;
// NODEKEEPER_BENCH_GC_BIN runs another build of nodekeeper instead of this tree's, to compare).
func BenchmarkGCProcessVsRaw(b *testing.B) {
	n := benchLeases(20000)
	pairs := benchPairs()
	gcBin, rawBin := os.Getenv("NODEKEEPER_BENCH_GC_BIN"), gobuild.Must(b, buildRaw)
	if gcBin == "" {
		gcBin = gobuild.Must(b, buildNodekeeper)
	}
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kc, env.AdminConfig()); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		reset(b)
		var ratios []float64
		var gcRuns, rawRuns []processRun
		for p := range pairs {
			sides := []string{"raw", "gc"}
			if p%2 == 1 {
				sides = []string{"gc", "raw"}
			}
			runs := map[string]processRun{}
			for _, side := range sides {
				seed(b, fmt.Sprintf("ip-10-93-%s-%d", side, p), n)
				if side == "raw" {
					runs[side] = timeProcess(b, rawBin, "--kubeconfig", kc)
				} else {
					runs[side] = timeProcess(b, gcBin, "gc", "--kubeconfig", kc, "--yes")
				}
				if left := leaseCount(b); left != 0 {
					b.Fatalf("%s left %d leases in %s", side, left, lease.NodeLeaseNamespace)
				}
			}
			r := runs["raw"].wall.Seconds() / runs["gc"].wall.Seconds()
			ratios = append(ratios, r)
			gcRuns, rawRuns = append(gcRuns, runs["gc"]), append(rawRuns, runs["raw"])
			fmt.Fprintf(os.Stderr, "BenchmarkGCProcessVsRaw: pair %d (%s first): raw %.2fs (CPU %.2fs), gc %.2fs (CPU %.2fs): gc = %.2f of raw\n",
				p+1, sides[0], runs["raw"].wall.Seconds(), runs["raw"].cpu.Seconds(), runs["gc"].wall.Seconds(), runs["gc"].cpu.Seconds(), r)
		}
		med := median(ratios)
		gcWall := medianDuration(gcRuns, func(r processRun) time.Duration { return r.wall })
		rawWall := medianDuration(rawRuns, func(r processRun) time.Duration { return r.wall })
		fmt.Fprintf(os.Stderr, "BenchmarkGCProcessVsRaw: %d leaked leases, %d pairs: median gc %.2fs (%.0f/s), raw %.2fs (%.0f/s); median of pair ratios: gc = %.2f of raw\n",
			n, pairs, gcWall.Seconds(), float64(n)/gcWall.Seconds(), rawWall.Seconds(), float64(n)/rawWall.Seconds(), med)
		b.ReportMetric(med, "gc/raw")
		b.ReportMetric(float64(n)/gcWall.Seconds(), "gc-leases/s")
		b.ReportMetric(float64(n)/rawWall.Seconds(), "raw-leases/s")
	}
}

func leaseCount(b *testing.B) int {
	b.Helper()
	l, err := env.AdminClient().CoordinationV1().Leases(lease.NodeLeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return len(l.Items)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDuration(runs []processRun, f func(processRun) time.Duration) time.Duration {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = float64(f(r))
	}
	return time.Duration(median(xs))
}
