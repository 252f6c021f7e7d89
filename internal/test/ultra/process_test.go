//go:build linux

package ultra

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The whole-process side of the benchmark: building the release binaries, timing a process to its
// end, reading a running one's memory and CPU from /proc, and running another package's benchmark.

// run is one timed whole process.
type run struct {
	wall, cpu time.Duration
	peakKiB   int64 // ru_maxrss
}

// timeProcess runs bin with args to completion, stdout and stderr to the null device as a user's
// redirect (stderr is kept for the failure), and returns its wall time, CPU time and peak RSS.
func timeProcess(b *testing.B, bin string, args ...string) run {
	b.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// kubectl's discovery cache would make its second run cheaper than its first.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+b.TempDir())
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s: %v\n%.2000s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	r := run{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peakKiB = ru.Maxrss // KiB on Linux
	}
	return r
}

// medianWall and maxPeak summarise paired runs: the median wall time, the highest peak RSS.
func medianWall(runs []run) time.Duration {
	w := make([]time.Duration, len(runs))
	for i, r := range runs {
		w[i] = r.wall
	}
	slices.Sort(w)
	return w[len(w)/2]
}

func maxPeak(runs []run) int64 {
	var m int64
	for _, r := range runs {
		m = max(m, r.peakKiB)
	}
	return m
}

// buildRelease builds the main package pkg with the release flags (as `make build` and
// .goreleaser.yaml: CGO_ENABLED=0, -trimpath, -ldflags '-s -w') into dir and returns its path and size.
func buildRelease(b *testing.B, dir, pkg string) (string, int64) {
	b.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	return bin, fi.Size()
}

// procStatus reads fields of /proc/PID/status in KiB (VmRSS, VmHWM).
func procStatus(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's CPU times; 100 on every Linux build Go runs on.
const clockTick = 100

// procCPU is the user plus system CPU time of a running process, from /proc/PID/stat.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count fields after its closing parenthesis,
	// where utime and stime are the 12th and 13th.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / clockTick
}

// goBench runs `go test -run '^$' -benchtime 1x -bench bench pkg extra...` (another package's
// benchmark, with its own control plane) with output to log, and returns the metrics of its
// result line by unit; nil when the benchmark does not exist (yet) or printed no result.
func goBench(b *testing.B, log, pkg, bench string, extra ...string) map[string]float64 {
	b.Helper()
	args := append([]string{"test", "-run", "^$", "-benchtime", "1x", "-timeout", "120m", "-bench", bench, pkg}, extra...)
	cmd := exec.Command("go", args...)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(log, out, 0o644)
	if err != nil {
		progress("go %s failed (%v); its output is in %s", strings.Join(args, " "), err, log)
	}
	return benchMetrics(out)
}

var benchLine = regexp.MustCompile(`(?m)^Benchmark\S*\s+\d+\s+(.*)$`)

// benchMetrics parses the "value unit" pairs of the last benchmark result line in out.
func benchMetrics(out []byte) map[string]float64 {
	lines := benchLine.FindAllSubmatch(out, -1)
	if len(lines) == 0 {
		return nil
	}
	f := strings.Fields(string(lines[len(lines)-1][1]))
	m := map[string]float64{}
	for i := 0; i+1 < len(f); i += 2 {
		if v, err := strconv.ParseFloat(f[i], 64); err == nil {
			m[f[i+1]] = v
		}
	}
	return m
}

// progress prints a timestamped line on stderr: a 100,000-node run takes tens of minutes and
// go test prints a benchmark's log only at its end.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s ultra: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
