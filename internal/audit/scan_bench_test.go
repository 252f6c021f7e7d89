package audit

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scanNeedle is the fixed string grep -c -F looks for: every event of writeKubeletLog's logs
// holds it once, so the scan reads the whole file and counts every line, the least work any
// reader of the log can do.
const scanNeedle = `"stage":"ResponseComplete"`

// procRun is one whole-process run: wall-clock time, CPU time (user and system) and peak
// resident set size.
type procRun struct {
	wall, cpu time.Duration
	rss       int64 // bytes
}

// measuredRun runs a whole process with stdout to a pipe that is read and dropped, and returns
// its wall-clock time and peak RSS. Not the null device: GNU grep, seeing its output go there,
// stops at the first match, and would not scan the file at all.
func measuredRun(tb testing.TB, name string, args ...string) procRun {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	wall := time.Since(start)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		tb.Fatal("no rusage")
	}
	return procRun{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), rss: ru.Maxrss * 1024} // Linux reports KiB
}

// pairedVsScan runs audit (auditArgs) and the scan (scanArgs) in turns, audit first in even
// pairs and the scan first in odd ones, so that load from elsewhere on the machine falls on
// both alike; it returns the median audit time, the median scan time, the median of the pair
// ratios audit/scan, the median of the CPU-time ratios, and the largest peak RSS of audit.
func pairedVsScan(b *testing.B, label string, pairs int, bin string, auditArgs []string, grep string, scanArgs []string) (audit, scan time.Duration, ratio, cpuRatio float64, peak int64) {
	b.Helper()
	var audits, scans []time.Duration
	var ratios, cpuRatios []float64
	for p := range pairs {
		var a, s procRun
		if p%2 == 0 {
			a = measuredRun(b, bin, auditArgs...)
			s = measuredRun(b, grep, scanArgs...)
		} else {
			s = measuredRun(b, grep, scanArgs...)
			a = measuredRun(b, bin, auditArgs...)
		}
		audits, scans = append(audits, a.wall), append(scans, s.wall)
		ratios = append(ratios, a.wall.Seconds()/s.wall.Seconds())
		cpuRatios = append(cpuRatios, a.cpu.Seconds()/max(s.cpu.Seconds(), 1e-3))
		peak = max(peak, a.rss)
		fmt.Fprintf(os.Stderr, "BenchmarkAuditVsScan: %s pair %d: audit %s (CPU %s, peak %.0f MiB), scan %s (CPU %s): %.2fx\n", label, p+1,
			a.wall.Round(time.Millisecond), a.cpu.Round(time.Millisecond), float64(a.rss)/(1<<20), s.wall.Round(time.Millisecond), s.cpu.Round(time.Millisecond), ratios[len(ratios)-1])
	}
	slices.Sort(audits)
	slices.Sort(scans)
	slices.Sort(ratios)
	slices.Sort(cpuRatios)
	return audits[len(audits)/2], scans[len(scans)/2], ratios[len(ratios)/2], cpuRatios[len(cpuRatios)/2], peak
}

// BenchmarkAuditVsScan is issue 32's floor: `nodekeeper audit` (the real binary, whole process)
// against `grep -c -F` of a string every event holds, on the same file: the leak-heavy log of
// BenchmarkAuditLeakyJSONVsJQ (NODEKEEPER_AUDIT_BENCH_LEAKY events, default 300,000, 7,500 leaks,
// about 390 MB). The scan reads every byte and looks at every line, which is the least any
// analysis of the log must do. After one warm-up of each (page cache, binary), the text report
// and then -o json each take NODEKEEPER_AUDIT_BENCH_PAIRS (default 5) alternating pairs with the
// scan. It reports the median times (audit-s, scan-s, json-s), the median of the per-pair ratios
// audit/scan (x-scan, x-scan-json; the target is at most 2) and the peak RSS of each form
// (audit-peak-MiB, json-peak-MiB); x-scan-cpu is the median ratio of CPU times (audit uses both
// cores, grep one), which a loaded machine blurs less than wall-clock time. Run it once:
//
//	go test -run '^$' -bench 'BenchmarkAuditVsScan$' -benchtime 1x ./internal/audit/
func BenchmarkAuditVsScan(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("grep not found")
	}
	n, pairs, path, size, bin, leaks, report := leakyBench(b)
	scanArgs := []string{"-c", "-F", scanNeedle, path}
	count, err := exec.Command(grep, scanArgs...).Output()
	if err != nil {
		b.Fatal(err)
	}
	if c, _ := strconv.Atoi(strings.TrimSpace(string(count))); c != n {
		b.Fatalf("grep -c -F %q counted %d lines, want %d", scanNeedle, c, n)
	}
	textArgs := []string{"audit", path}
	jsonArgs := []string{"audit", "-o", "json", path}
	measuredRun(b, bin, textArgs...) // warm-up
	measuredRun(b, grep, scanArgs...)

	b.ResetTimer()
	audit, scan, ratio, cpuRatio, peak := pairedVsScan(b, "text", pairs, bin, textArgs, grep, scanArgs)
	js, jscan, jratio, _, jpeak := pairedVsScan(b, "-o json", pairs, bin, jsonArgs, grep, scanArgs)
	b.StopTimer()

	fmt.Fprintf(os.Stderr, "BenchmarkAuditVsScan: %d events, %.0f MB, %d leaks: audit median %s against grep -c -F median %s, %.2fx (median of %d pair ratios), peak %.0f MiB; "+
		"audit -o json (a %.1f MB report) median %s against %s, %.2fx, peak %.0f MiB\n",
		n, float64(size)/1e6, leaks, audit.Round(time.Millisecond), scan.Round(time.Millisecond), ratio, pairs, float64(peak)/(1<<20),
		float64(report)/1e6, js.Round(time.Millisecond), jscan.Round(time.Millisecond), jratio, float64(jpeak)/(1<<20))
	b.ReportMetric(audit.Seconds(), "audit-s")
	b.ReportMetric(scan.Seconds(), "scan-s")
	b.ReportMetric(ratio, "x-scan")
	b.ReportMetric(cpuRatio, "x-scan-cpu")
	b.ReportMetric(float64(peak)/(1<<20), "audit-peak-MiB")
	b.ReportMetric(js.Seconds(), "json-s")
	b.ReportMetric(jratio, "x-scan-json")
	b.ReportMetric(float64(jpeak)/(1<<20), "json-peak-MiB")
}
