package audit

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

// The progress callback counts the bytes taken from the inputs as stored (compressed for gzip)
// and the events read: the reports never go back, there are several on an input of several
// chunks, and the last one equals the final totals exactly (the inputs' size, the report's events).
func TestAnalyzeProgress(t *testing.T) {
	data, _ := genLog(t, auditgen.Config{Nodes: 40, Duration: 3 * time.Minute, Seed: 7})
	dir := t.TempDir()
	plain := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(plain, data, 0o600); err != nil {
		t.Fatal(err)
	}
	gzData := gzipped.Bytes(t, data)
	zipped := filepath.Join(dir, "audit.log.gz")
	if err := os.WriteFile(zipped, gzData, 0o600); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, "half.log") // overlaps audit.log: its events are duplicates
	halfData := data[:bytes.LastIndexByte(data[:len(data)/2], '\n')+1]
	if err := os.WriteFile(half, halfData, 0o600); err != nil {
		t.Fatal(err)
	}
	stdin := read.Input{Name: "-", Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}

	for _, tc := range []struct {
		name      string
		inputs    []read.Input
		wantTotal int64 // InputsSize: 0 when not known in advance
		wantBytes int64 // the last report's bytes
	}{
		{"plain file", []read.Input{{Name: plain}}, int64(len(data)), int64(len(data))},
		{"gzip counts compressed bytes", []read.Input{{Name: zipped}}, int64(len(gzData)), int64(len(gzData))},
		{"overlapping files, duplicates removed", []read.Input{{Name: plain}, {Name: half}},
			int64(len(data) + len(halfData)), int64(len(data) + len(halfData))},
		{"standard input has no total", []read.Input{stdin}, 0, int64(len(data))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := read.InputsSize(tc.inputs); got != tc.wantTotal {
				t.Errorf("InputsSize = %d, want %d", got, tc.wantTotal)
			}
			var reports []read.Progress
			opts := analyze.Options{ReadOptions: read.Options{ChunkSize: 64 << 10,
				Progress: func(p read.Progress) { reports = append(reports, p) }}}
			rep, err := analyze.Analyze(tc.inputs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) < 3 {
				t.Fatalf("%d progress reports for %d bytes in 64 KiB chunks, want several", len(reports), len(data))
			}
			for i := 1; i < len(reports); i++ {
				if reports[i].Bytes < reports[i-1].Bytes || reports[i].Events < reports[i-1].Events {
					t.Fatalf("report %d %+v went back from %+v", i, reports[i], reports[i-1])
				}
			}
			last := reports[len(reports)-1]
			if want := (read.Progress{Bytes: tc.wantBytes, Events: rep.Totals.Events}); last != want {
				t.Errorf("last report %+v, want the final totals %+v", last, want)
			}
		})
	}
}
