package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
	"github.com/nodekeeper/nodekeeper/internal/test/gobuild"
)

// The benchmarks generate a realistic audit log (mostly kubelet lease renewals, some gets,
// lists, watches, 404s, 429s with APF waits, node deletions with zombies and leaks) of at
// least NODEKEEPER_AUDIT_BENCH_SIZE bytes (default 1 GiB; suffixes K, M, G), then in the same
// run measure jq's selection of lease creates on it, nodekeeper's full analysis (in process,
// all cores), and the peak RSS of a separate process analysing it. Run them once:
//
//	go test -run '^$' -bench 'BenchmarkAudit(VsJQ|PeakRSS)$' -benchtime 1x ./internal/audit/
//
// NODEKEEPER_AUDIT_BENCH_RSS_SIZES (e.g. "1G,4G") also measures peak RSS at those sizes.
// Each benchmark writes its log to its own temporary directory and removes it.

const jqFilter = `select(.objectRef.resource=="leases" and .verb=="create")`

func benchSize(env string, def int64) int64 {
	s := strings.TrimSpace(os.Getenv(env))
	if s == "" {
		return def
	}
	return parseSize(s)
}

func parseSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return int64(n * float64(mult))
}

// writeLogFile creates path and lets fill write a log into it through a large buffer, then
// writes it back to disk, so that the disk is quiet while jq and the analysis read the file.
func writeLogFile(tb testing.TB, path string, fill func(w *bufio.Writer) error) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 4<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// writeEventLog writes n lines to path, line i as appendLine appends it to an empty buffer, and
// returns path and the bytes written.
func writeEventLog(tb testing.TB, path string, n int, appendLine func(line []byte, i int) []byte) (string, int64) {
	tb.Helper()
	var size int64
	writeLogFile(tb, path, func(w *bufio.Writer) error {
		var line []byte
		for i := 0; i < n; i++ {
			line = appendLine(line[:0], i)
			size += int64(len(line))
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
	return path, size
}

// writeBenchLog generates a log of at least size bytes into dir.
func writeBenchLog(tb testing.TB, dir string, size int64) (string, auditgen.Truth) {
	tb.Helper()
	path := filepath.Join(dir, fmt.Sprintf("audit-%d.log", size))
	t0 := time.Now()
	var tr auditgen.Truth
	writeLogFile(tb, path, func(w *bufio.Writer) (err error) {
		tr, err = auditgen.Generate(w, auditgen.Config{Bytes: size, ThrottledClient: true, Seed: 42})
		return err
	})
	tb.Logf("generated %s: %.0f MB, %d events in %s", path, float64(tr.Bytes)/1e6, tr.Events, time.Since(t0).Round(time.Millisecond))
	return path, tr
}

func BenchmarkAuditVsJQ(b *testing.B) {
	size := benchSize("NODEKEEPER_AUDIT_BENCH_SIZE", 1<<30)
	path, truth := writeBenchLog(b, b.TempDir(), size)
	mb := float64(truth.Bytes) / 1e6

	// The analysis must agree with what the generator played before its speed means anything.
	inputs, _ := read.ExpandInputs([]string{path}, nil)
	rep, err := analyze.Analyze(inputs, analyze.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if rep.Totals.Events != truth.Events || len(rep.Zombies) != len(truth.Zombies) || len(rep.Leaks) != len(truth.Leaked) {
		b.Fatalf("analysis disagrees with the generator: %d events (%d), %d zombies (%v), %d leaks (%v)",
			rep.Totals.Events, truth.Events, len(rep.Zombies), truth.Zombies, len(rep.Leaks), truth.Leaked)
	}

	fmt.Println("audit: " + compareWithJQ(b, path, mb, truth.Events))
}

// compareWithJQ lets jq's selection of lease creates and the full analysis (a separate process,
// as the command runs) take turns on the same file, twice, keeping the best time of each, so
// that a burst of load from elsewhere on the machine does not decide the ratio.
func compareWithJQ(b *testing.B, path string, mb float64, events int64) string {
	jq, jqErr := exec.LookPath("jq")
	if jqErr != nil {
		b.Logf("jq not found: skipping the jq baseline")
	}
	var best, jqBest time.Duration
	var rss int64
	b.ResetTimer()
	for round := 0; round < 2; round++ {
		if jqErr == nil {
			t0 := time.Now()
			if err := exec.Command(jq, "-c", jqFilter, path).Run(); err != nil {
				b.Fatalf("jq: %v", err)
			}
			if d := time.Since(t0); jqBest == 0 || d < jqBest {
				jqBest = d
			}
		}
		t0 := time.Now()
		r := childPeakRSS(b, path)
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
		rss = max(rss, r)
	}
	b.StopTimer()
	rate := mb / best.Seconds()
	b.ReportMetric(rate, "audit-MB/s")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	line := fmt.Sprintf("%.0f MB, %d events in %s = %.0f MB/s on %d cores (best of 2, separate process); peak RSS %.0f MiB",
		mb, events, best.Round(time.Millisecond), rate, runtime.GOMAXPROCS(0), float64(rss)/(1<<20))
	if jqErr == nil {
		jqRate := mb / jqBest.Seconds()
		b.ReportMetric(jqRate, "jq-MB/s")
		b.ReportMetric(rate/jqRate, "x-jq")
		line += fmt.Sprintf("; jq -c %q %s = %.0f MB/s (best of 2); ratio %.1fx", jqFilter, jqBest.Round(time.Millisecond), jqRate, rate/jqRate)
	}
	return line
}

// BenchmarkAuditPeakRSS measures the peak RSS of a separate analysing process at several
// input sizes, to show that memory does not grow with the input.
func BenchmarkAuditPeakRSS(b *testing.B) {
	s := os.Getenv("NODEKEEPER_AUDIT_BENCH_RSS_SIZES")
	if s == "" {
		b.Skip("set NODEKEEPER_AUDIT_BENCH_RSS_SIZES (e.g. 1G,4G) to measure peak RSS at several sizes; BenchmarkAuditVsJQ reports it at one")
	}
	var sizes []int64
	for _, f := range strings.Split(s, ",") {
		if n := parseSize(strings.TrimSpace(f)); n > 0 {
			sizes = append(sizes, n)
		}
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			dir := b.TempDir()
			path, truth := writeBenchLog(b, dir, size)
			b.ResetTimer()
			rss := childPeakRSS(b, path)
			b.StopTimer()
			os.Remove(path)
			b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			fmt.Printf("audit peak RSS at %.0f MB: %.0f MiB\n", float64(truth.Bytes)/1e6, float64(rss)/(1<<20))
		})
	}
}

// childPeakRSS runs the analysis of path in a separate process (this test binary running
// TestAuditChild) and returns its peak resident set size in bytes.
func childPeakRSS(tb testing.TB, path string) int64 {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAuditChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NODEKEEPER_AUDIT_CHILD_INPUT="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("child analysis: %v\n%s", err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		tb.Fatal("no rusage")
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}

// TestAuditChild is the child process of childPeakRSS; it does nothing in a normal test run.
func TestAuditChild(t *testing.T) {
	path := os.Getenv("NODEKEEPER_AUDIT_CHILD_INPUT")
	if path == "" {
		t.Skip("only runs as the child process of the peak-RSS benchmark")
	}
	inputs, err := read.ExpandInputs([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(inputs, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := render.WriteText(discard{}, rep); err != nil {
		t.Fatal(err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// writeDistinctLog writes n lease creations, each of its own lease (kube-node-lease/node-<i>) by
// its own user (user-<i>): the worst case for per-key state, every key new.
func writeDistinctLog(tb testing.TB, dir string, n int) (string, int64) {
	tb.Helper()
	t0 := time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)
	return writeEventLog(tb, filepath.Join(dir, fmt.Sprintf("distinct-%d.log", n)), n, func(line []byte, i int) []byte {
		at := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		id := strconv.Itoa(10000000 + i)
		line = append(line, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a-`...)
		line = append(line, id...)
		line = append(line, `","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases","verb":"create","user":{"username":"user-`...)
		line = append(line, id...)
		line = append(line, `","groups":["system:authenticated"]},"sourceIPs":["10.0.0.1"],"userAgent":"loadgen/1.0","objectRef":{"resource":"leases","namespace":"kube-node-lease","name":"node-`...)
		line = append(line, id...)
		line = append(line, `","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"`...)
		line = at.AppendFormat(line, time.RFC3339Nano)
		line = append(line, `","stageTimestamp":"`...)
		line = at.Add(2*time.Millisecond).AppendFormat(line, time.RFC3339Nano)
		return append(line, "\"}\n"...)
	})
}

// BenchmarkAuditDistinctKeys measures the peak RSS of a separate analysing process on a log
// where every event is a new lease and a new user (NODEKEEPER_AUDIT_BENCH_DISTINCT events,
// default 10 million): per-key state must stay bounded whatever the number of keys.
func BenchmarkAuditDistinctKeys(b *testing.B) {
	n := int(benchSize("NODEKEEPER_AUDIT_BENCH_DISTINCT", 10_000_000))
	path, size := writeDistinctLog(b, b.TempDir(), n)
	b.ResetTimer()
	t0 := time.Now()
	rss := childPeakRSS(b, path)
	d := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	fmt.Printf("audit on %d distinct leases and users (%.0f MB): %s, peak RSS %.0f MiB\n", n, float64(size)/1e6,
		d.Round(time.Millisecond), float64(rss)/(1<<20))
}

// writeWorstCaseLog writes n events of which every one is a kubelet's lease or Node request, the
// case where no event can be skipped: 400 kubelets renewing their leases (get, update), reading
// and patching their Node status, each event about 1 KB at Metadata level as EKS logs them, in
// stageTimestamp order. Every 1,000th event is a lease create answered 409 (so jq selects some).
func writeWorstCaseLog(tb testing.TB, dir string, n int) (string, int64) {
	tb.Helper()
	const nodes = 400
	return writeKubeletLog(tb, filepath.Join(dir, fmt.Sprintf("worst-%d.log", n)), n, func(i int) (int, kubeletRequest) {
		return i % nodes, healthyKubelet(i, kubeletNode(i%nodes))
	})
}

// healthyKubelet is the request of the worst-case log's event i, by the kubelet of node: it
// renews and reads its lease, reads its Node and patches its status, and once in a while tries
// to create its lease again (409).
func healthyKubelet(i int, node string) kubeletRequest {
	verb, res, uri, code := "update", "leases", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"+node+"?timeout=10s", "200"
	switch {
	case i%1000 == 999:
		verb, uri, code = "create", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?timeout=10s", "409"
	case i%4 == 1:
		verb = "get"
	case i%4 == 2:
		verb, res, uri = "get", "nodes", "/api/v1/nodes/"+node+"?resourceVersion=0&timeout=10s"
	case i%4 == 3:
		verb, res, uri = "patch", "nodes", "/api/v1/nodes/"+node+"/status?timeout=10s"
	}
	return kubeletRequest{verb: verb, res: res, uri: uri, code: code, ua: "kubelet/v1.29.3 (linux/amd64) kubernetes/6813625"}
}

// writeLeakyLog writes issue 20's audit log: n events, every one a kubelet's lease or Node
// request, where nearly every lease leaks. One event in 20 comes from one of n/40 kubelets older
// than 1.29 whose Nodes are gone: each GETs its Node (404), then creates its lease (the
// create-on-update leak) and is not heard of again; the other 19 are the worst-case log's 400
// healthy kubelets. On 300,000 events: 7,500 leaks of 7,900 leases, a report of about 11 MB
// with -o json, the leak list about half of it.
func writeLeakyLog(tb testing.TB, dir string, n int) (string, int64) {
	tb.Helper()
	const healthy = 400
	return writeKubeletLog(tb, filepath.Join(dir, fmt.Sprintf("leaky-%d.log", n)), n, func(i int) (int, kubeletRequest) {
		if i%20 != 0 {
			return i % healthy, healthyKubelet(i, kubeletNode(i%healthy))
		}
		j := i / 20
		k := healthy + j/2
		node := kubeletNode(k)
		r := kubeletRequest{verb: "get", res: "nodes", uri: "/api/v1/nodes/" + node + "?resourceVersion=0&timeout=10s", code: "404",
			ua: "kubelet/v1.27.9 (linux/amd64) kubernetes/d15213f"}
		if j%2 == 1 {
			r.verb, r.res, r.uri, r.code = "create", "leases", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?timeout=10s", "201"
		}
		return k, r
	})
}

// kubeletNode is the name of kubelet k's node.
func kubeletNode(k int) string {
	return "ip-10-" + strconv.Itoa(k/62500) + "-" + strconv.Itoa(k/250%250) + "-" + strconv.Itoa(k%250) + ".us-west-2.compute.internal"
}

// kubeletRequest is what one event of writeKubeletLog's logs asks.
type kubeletRequest struct{ verb, res, uri, code, ua string }

// writeKubeletLog writes n Metadata-level events of kubelets, 250 µs apart, in stageTimestamp
// order: event i is by kubelet k (node kubeletNode(k)) asking req, as plan(i) says. It returns the
// path and size.
func writeKubeletLog(tb testing.TB, path string, n int, plan func(i int) (k int, req kubeletRequest)) (string, int64) {
	tb.Helper()
	t0 := time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)
	return writeEventLog(tb, path, n, func(line []byte, i int) []byte {
		k, req := plan(i)
		node := kubeletNode(k)
		done := t0.Add(time.Duration(i) * 250 * time.Microsecond)
		recv := done.Add(-time.Duration(2+i%7) * time.Millisecond)
		line = append(line, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"`...)
		line = strconv.AppendInt(line, int64(0x5a000000+i), 16)
		line = append(line, `-4c1e-4b8a-9f0e-1d2c3b4a5968","stage":"ResponseComplete","requestURI":"`...)
		line = append(line, req.uri...)
		line = append(line, `","verb":"`...)
		line = append(line, req.verb...)
		line = append(line, `","user":{"username":"system:node:`...)
		line = append(line, node...)
		line = append(line, `","uid":"aws-iam-authenticator:123456789012:AROAEXAMPLEROLEID","groups":["system:bootstrappers","system:nodes","system:authenticated"],"extra":{"accessKeyId":["ASIAEXAMPLEKEYID"],"arn":["arn:aws:sts::123456789012:assumed-role/eks-node-role/i-0`...)
		line = strconv.AppendInt(line, int64(0x1000000+k), 16)
		line = append(line, `"],"canonicalArn":["arn:aws:iam::123456789012:role/eks-node-role"],"principalId":["AROAEXAMPLEROLEID"],"sessionName":["i-0`...)
		line = strconv.AppendInt(line, int64(0x1000000+k), 16)
		line = append(line, `"]}},"sourceIPs":["10.0.`...)
		line = strconv.AppendInt(line, int64(k/250%250), 10)
		line = append(line, '.')
		line = strconv.AppendInt(line, int64(k%250), 10)
		line = append(line, `"],"userAgent":"`...)
		line = append(line, req.ua...)
		line = append(line, `","objectRef":{"resource":"`...)
		line = append(line, req.res...)
		if req.res == "leases" {
			line = append(line, `","namespace":"kube-node-lease","name":"`...)
			line = append(line, node...)
			line = append(line, `","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":`...)
		} else {
			line = append(line, `","name":"`...)
			line = append(line, node...)
			if req.verb == "patch" {
				line = append(line, `","subresource":"status`...)
			}
			line = append(line, `","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":`...)
		}
		line = append(line, req.code...)
		line = append(line, `},"requestReceivedTimestamp":"`...)
		line = recv.AppendFormat(line, "2006-01-02T15:04:05.000000Z")
		line = append(line, `","stageTimestamp":"`...)
		line = done.AppendFormat(line, "2006-01-02T15:04:05.000000Z")
		return append(line, `","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"","apiserver.latency.k8s.io/etcd":"1.52ms","apiserver.latency.k8s.io/total":"2.9ms"}}`+"\n"...)
	})
}

// BenchmarkAuditWorstCaseVsJQ is BenchmarkAuditVsJQ on the worst case for the fast path: every
// event is a kubelet lease or Node request (NODEKEEPER_AUDIT_BENCH_WORST events, default 1
// million, about 1 GB, 400 nodes, stageTimestamp order).
func BenchmarkAuditWorstCaseVsJQ(b *testing.B) {
	n := int(benchSize("NODEKEEPER_AUDIT_BENCH_WORST", 1_000_000))
	path, size := writeWorstCaseLog(b, b.TempDir(), n)
	inputs, _ := read.ExpandInputs([]string{path}, nil)
	rep, err := analyze.Analyze(inputs, analyze.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if rep.Totals.Events != int64(n) || rep.Totals.NodeRequests != int64(n) || rep.Totals.Bad != 0 || !rep.Bounds.Exact() {
		b.Fatalf("analysis of the worst-case log: %+v, bounds %+v", rep.Totals, rep.Bounds)
	}
	fmt.Println("audit worst case: " + compareWithJQ(b, path, float64(size)/1e6, int64(n)))
}

// buildNodekeeper builds cmd/nodekeeper for the benchmarks that time the real command.
var buildNodekeeper = gobuild.Once("../../cmd/nodekeeper", "nodekeeper")

// timedRun runs a whole process with stdout to the null device and returns its wall-clock and
// CPU time.
func timedRun(tb testing.TB, name string, args ...string) (wall, cpu time.Duration) {
	tb.Helper()
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkAuditLeakyJSONVsJQ is issue 20's figure: `nodekeeper audit -o json` (the real binary,
// whole process) against jq's select on the same log, where every event is a kubelet lease or
// Node request and nearly every lease leaks (writeLeakyLog; NODEKEEPER_AUDIT_BENCH_LEAKY events,
// default 300,000, about 390 MB), so the JSON report is large (its leak list most of it). Runs
// alternate, audit then jq then jq then audit..., NODEKEEPER_AUDIT_BENCH_PAIRS pairs (default
// 5) after one warm-up of each, and it prints each pair and the median of the per-pair ratios jq
// time / audit time (wall and CPU). Run it once: -run '^$' -bench BenchmarkAuditLeakyJSONVsJQ
// -benchtime 1x.
// leakyBench is the setup the leaky-log benchmarks share: the log of
// NODEKEEPER_AUDIT_BENCH_LEAKY events (n) written once, the number of paired runs, the built
// binary, and a first `audit -o json` of the log that must count every event and leak, so that
// the timed runs compare work that read the whole log; leaks and report are that report's leak
// count and size in bytes.
func leakyBench(b *testing.B) (n, pairs int, path string, size int64, bin string, leaks, report int) {
	b.Helper()
	n = int(benchSize("NODEKEEPER_AUDIT_BENCH_LEAKY", 300_000))
	pairs = int(benchSize("NODEKEEPER_AUDIT_BENCH_PAIRS", 5))
	path, size = writeLeakyLog(b, b.TempDir(), n)
	bin = gobuild.Must(b, buildNodekeeper)
	out, err := exec.Command(bin, "audit", "-o", "json", path).Output()
	if err != nil {
		b.Fatal(err)
	}
	var rep struct {
		Totals struct{ Events int64 } `json:"totals"`
		Leaks  []json.RawMessage      `json:"leaks"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		b.Fatal(err)
	}
	if rep.Totals.Events != int64(n) || len(rep.Leaks) != n/40 {
		b.Fatalf("report of the leaky log: %d events (want %d), %d leaks (want %d)", rep.Totals.Events, n, len(rep.Leaks), n/40)
	}
	return n, pairs, path, size, bin, len(rep.Leaks), len(out)
}

func BenchmarkAuditLeakyJSONVsJQ(b *testing.B) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		b.Skip("jq not found")
	}
	n, pairs, path, size, bin, leaks, report := leakyBench(b)
	auditArgs := []string{"audit", "-o", "json", path}
	jqArgs := []string{"-c", jqFilter, path}
	timedRun(b, bin, auditArgs...) // warm-up: page cache, binary
	timedRun(b, jq, jqArgs...)
	b.ResetTimer()
	var wallRatios, cpuRatios []float64
	var audits []time.Duration
	for p := range pairs {
		var aw, ac, jw, jc time.Duration
		if p%2 == 0 {
			aw, ac = timedRun(b, bin, auditArgs...)
			jw, jc = timedRun(b, jq, jqArgs...)
		} else {
			jw, jc = timedRun(b, jq, jqArgs...)
			aw, ac = timedRun(b, bin, auditArgs...)
		}
		wallRatios = append(wallRatios, jw.Seconds()/aw.Seconds())
		cpuRatios = append(cpuRatios, jc.Seconds()/ac.Seconds())
		audits = append(audits, aw)
		fmt.Fprintf(os.Stderr, "BenchmarkAuditLeakyJSONVsJQ: pair %d: audit -o json %s (CPU %s), jq %s (CPU %s): %.1fx\n", p+1,
			aw.Round(time.Millisecond), ac.Round(time.Millisecond), jw.Round(time.Millisecond), jc.Round(time.Millisecond), jw.Seconds()/aw.Seconds())
	}
	b.StopTimer()
	slices.Sort(wallRatios)
	slices.Sort(cpuRatios)
	slices.Sort(audits)
	wall, cpu, med := wallRatios[len(wallRatios)/2], cpuRatios[len(cpuRatios)/2], audits[len(audits)/2]
	fmt.Fprintf(os.Stderr, "BenchmarkAuditLeakyJSONVsJQ: %d events, %.0f MB, %d leaks, a %.1f MB report: audit -o json median %s; median of pair ratios jq/audit: %.1fx wall, %.1fx CPU\n",
		n, float64(size)/1e6, leaks, float64(report)/1e6, med.Round(time.Millisecond), wall, cpu)
	b.ReportMetric(wall, "x-jq")
	b.ReportMetric(cpu, "x-jq-cpu")
}
