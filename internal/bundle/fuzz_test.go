package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/golden"
)

// fuzzLimits keep each input small enough for many executions a second.
var fuzzLimits = Limits{MaxMemberSize: 1 << 20, MaxTotalSize: 4 << 20, MaxMembers: 1000}

// Allocation budget of one analysis: a fixed part (gzip and flate state, the 64 KiB line buffer,
// the report) plus a bounded amount per byte of input and per byte the input inflates to. The
// inflated size is itself capped by MaxTotalSize, so no input, however crafted, makes the reader
// allocate more than fuzzFixedAlloc + fuzzPerInflated*MaxTotalSize + fuzzPerInput*len(input).
const (
	fuzzFixedAlloc  = 2 << 20
	fuzzPerInput    = 64
	fuzzPerInflated = 32
)

// inflatedSize is how many bytes data decompresses to (all gzip members), at most max+1.
func inflatedSize(data []byte, max int64) int64 {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return 0
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(zr, max+1))
	return n
}

// fuzzSeeds are real, hostile and cut-short bundles; testdata/fuzz/FuzzAnalyze holds the same
// inputs as files (written with -update) so that `go test` replays them without -fuzz.
func fuzzSeeds(t testing.TB) map[string][]byte {
	seed := tarGz(t, collectorLayout(seedFiles()))
	return map[string][]byte{
		"seed002":        seed,
		"seed002-cut":    seed[:len(seed)/2],
		"dotdot":         tarGz(t, []member{{Name: "../x", Body: "x"}}),
		"symlink":        tarGz(t, []member{{Name: "./l", Typeflag: tar.TypeSymlink, Link: "/"}}),
		"gzip-header":    {0x1f, 0x8b, 0x08, 0x00},
		"long-pax-names": paxNameArchive(t, 3, 10_000),
		"many-small-logs": func() []byte {
			var ms []member
			for i := 0; i < 300; i++ {
				ms = append(ms, member{Name: fmt.Sprintf("./var_log/aws-routed-eni/plugin-%d.log", i), Body: "connect: connection refused 127.0.0.1:50051\n"})
			}
			return tarGz(t, ms)
		}(),
		"boot-logs": tarGz(t, collectorLayout(map[string]string{
			pCloudInitOut: al2023Stage + al2023Removed + al2Failed + "/var/lib/cloud/instance/scripts/part-001: line 4: jq: command not found\n",
			pCloudInitLog: al2023Failed, "nodeadm/nodeadm-config.log": nodeadmConfigFailed, pIOThrottling: "1 (kubelet) 9000\n",
			"var_log/aws-routed-eni/plugin.log": `{"ts":"2024-03-04T09:11:31.512Z","msg":"dial tcp 127.0.0.1:50051: connect: connection refused"}` + "\n",
		})),
		"hostile-evidence": tarGz(t, collectorLayout(map[string]string{"kubelet/kubelet.log": "\"pull QPS exceeded\" \x1b]0;x\x07 " + strings.Repeat("語", 400) + "\n"})),
	}
}

// TestWriteFuzzCorpus writes the seed corpus files with -update.
func TestWriteFuzzCorpus(t *testing.T) {
	if !golden.Updating() {
		t.Skip("run with -update to rewrite testdata/fuzz/FuzzAnalyze")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzAnalyze")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzAnalyze feeds arbitrary bytes to the bundle reader. For every input it must return a report
// or an ErrUnsafeArchive error, never panic, never write a file (the working directory stays
// empty), and allocate no more than the budget above.
//
//	go test -run '^$' -fuzz '^FuzzAnalyze$' -fuzztime 10s ./internal/bundle/
func FuzzAnalyze(f *testing.F) {
	for _, data := range fuzzSeeds(f) {
		f.Add(data)
	}
	dir := f.TempDir()
	f.Chdir(dir)
	f.Fuzz(func(t *testing.T, data []byte) {
		inflated := inflatedSize(data, fuzzLimits.MaxTotalSize)
		budget := uint64(fuzzFixedAlloc + fuzzPerInput*int64(len(data)) + fuzzPerInflated*inflated)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rep, err := Analyze(bytes.NewReader(data), "fuzz", Options{Limits: fuzzLimits, Now: testNow})
		runtime.ReadMemStats(&after)
		if err == nil && rep == nil {
			t.Fatal("no report and no error")
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > budget {
			t.Fatalf("%d input bytes (%d inflated) allocated %d bytes, above the budget of %d", len(data), inflated, got, budget)
		}
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if len(entries) != 0 {
			t.Fatalf("the reader wrote %s into the working directory", entries[0].Name())
		}
	})
}
