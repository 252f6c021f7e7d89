package audit

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

func jsonReader(s string) io.Reader { return strings.NewReader(s) }

func genLog(t testing.TB, cfg auditgen.Config) ([]byte, auditgen.Truth) {
	t.Helper()
	var b bytes.Buffer
	tr, err := auditgen.Generate(&b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), tr
}

func badCounts(r *analyze.Report) map[string]int64 {
	m := map[string]int64{}
	for _, in := range r.Inputs {
		for _, b := range in.Bad {
			m[b.Kind] += b.Count
		}
	}
	return m
}

func badLines(r *analyze.Report, kind string) []int64 {
	var out []int64
	for _, in := range r.Inputs {
		for _, b := range in.Bad {
			if b.Kind == kind {
				for _, e := range b.Examples {
					out = append(out, e.Line)
				}
			}
		}
	}
	return out
}

// Bad lines are counted by kind with their line numbers, and everything else still counts.
func TestBadLinesCountedWithLineNumbers(t *testing.T) {
	data, err := os.ReadFile("testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	seed := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	big := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","stage":"ResponseComplete","verb":"list",` +
		`"user":{"username":"admin"},"objectRef":{"resource":"configmaps"},"responseStatus":{"code":200},"responseObject":{"items":["` +
		strings.Repeat("x", 300<<10) + `"]},"requestReceivedTimestamp":"2024-04-05T06:00:00.000000Z","stageTimestamp":"2024-04-05T06:00:01.000000Z"}`
	huge := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"list","requestObject":"` +
		strings.Repeat("y", 3<<20) + `","requestReceivedTimestamp":"2024-04-05T06:00:03Z"}`
	lines := []string{
		string(seed[0]),                    // 1
		"this is not json",                 // 2
		string(seed[1]),                    // 3
		`{"kind":"Pod","apiVersion":"v1"}`, // 4 valid JSON, not audit
		"",                                 // 5 blank
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get"}`, // 6 no timestamp
		string(seed[2]), // 7
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"RequestReceived","verb":"get","requestReceivedTimestamp":"2024-04-05T06:00:00Z"}`, // 8
		big,  // 9: 300 KiB, parsed
		huge, // 10: over the 1 MiB limit of this test
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"get","unknownField":{"a":[1,2,3]},"stage":"ResponseComplete","requestReceivedTimestamp":"2024-04-05T06:00:02Z"}`, // 11
		`{"kind":"Event", "verb": "get"`, // 12 truncated
		string(seed[3]),                  // 13
	}
	for _, opts := range []read.Options{{}, {ChunkSize: 64 << 10, MaxLineSize: 1 << 20}} {
		r, err := analyze.AnalyzeReader("bad.log", jsonReader(strings.Join(lines, "\n")+"\n"), analyze.Options{ReadOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		in := r.Inputs[0]
		wantTooLong := int64(0)
		wantEvents := int64(6)
		if opts.MaxLineSize == 1<<20 {
			wantTooLong = 1
		} else {
			wantEvents++ // the 3 MiB line is read (with the default 16 MiB limit)
		}
		if in.Lines != 13 || in.Events != wantEvents || in.SkipStage != 1 || in.Blank != 1 {
			t.Errorf("opts %+v: lines %d events %d skipped %d blank %d", opts, in.Lines, in.Events, in.SkipStage, in.Blank)
		}
		got := badCounts(r)
		want := map[string]int64{"malformed": 2, "not-audit": 1, "no-timestamp": 1}
		if wantTooLong > 0 {
			want["too-long"] = 1
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("opts %+v: bad %v, want %v", opts, got, want)
		}
		if l := badLines(r, "malformed"); fmt.Sprint(l) != "[2 12]" {
			t.Errorf("malformed lines %v", l)
		}
		if l := badLines(r, "not-audit"); fmt.Sprint(l) != "[4]" {
			t.Errorf("not-audit lines %v", l)
		}
		if l := badLines(r, "no-timestamp"); fmt.Sprint(l) != "[6]" {
			t.Errorf("no-timestamp lines %v", l)
		}
		if wantTooLong > 0 {
			if l := badLines(r, "too-long"); fmt.Sprint(l) != "[10]" {
				t.Errorf("too-long lines %v", l)
			}
		}
		// The story around the good lines is intact: the deletion is line 1, the lease delete line 3.
		if len(r.NodeDeletions) != 1 || !strings.HasSuffix(r.NodeDeletions[0].Event.Where, ":line 1") ||
			r.NodeDeletions[0].LeaseDeleted == nil {
			t.Errorf("deletions %+v", r.NodeDeletions)
		}
	}
}

// A gzip stream cut short: the error names the file and the offset, and every complete line
// before the cut is counted.
func TestTruncatedGzip(t *testing.T) {
	data, _ := genLog(t, auditgen.Config{Nodes: 40, Duration: 3 * time.Minute, Seed: 7})
	z := gzipped.Bytes(t, data)
	cut := z[:len(z)*6/10]
	path := filepath.Join(t.TempDir(), "audit.log.gz")
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	prefix, rerr := io.ReadAll(zr)
	if rerr == nil {
		t.Fatal("the cut stream decompressed without error")
	}
	complete := int64(bytes.Count(prefix, []byte("\n")))

	r, err := analyzeFiles(t, analyze.Options{}, path)
	if err == nil {
		t.Fatal("no error for a truncated gzip stream")
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, "truncated at compressed offset") {
		t.Fatalf("error %q does not name the file and offset", msg)
	}
	if len(r.Errors) != 1 || r.Inputs[0].Error == "" || !r.Inputs[0].Gzip {
		t.Fatalf("report errors %v inputs %+v", r.Errors, r.Inputs)
	}
	if r.Totals.Events != complete {
		t.Fatalf("counted %d events, want the %d complete lines before the cut", r.Totals.Events, complete)
	}
	if int64(len(prefix)) != r.Inputs[0].Bytes {
		t.Fatalf("read %d decompressed bytes, the stream holds %d", r.Inputs[0].Bytes, len(prefix))
	}
}

// Rotated files given in any order, overlapping files of two API servers, and the same file
// twice all tell the same story as the single file.
func TestFilesMergedInTimeOrder(t *testing.T) {
	data, truth := genLog(t, auditgen.Config{Nodes: 60, Duration: 6 * time.Minute, Seed: 3, ThrottledClient: true})
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.log")
	os.WriteFile(whole, data, 0o644)
	base, err := analyzeFiles(t, analyze.Options{}, whole)
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Zombies) != len(truth.Zombies) || len(base.Leaks) != len(truth.Leaked) {
		t.Fatalf("baseline: %d zombies %d leaks, truth %v %v", len(base.Zombies), len(base.Leaks), truth.Zombies, truth.Leaked)
	}
	want := story(t, base)
	lines := bytes.SplitAfter(data, []byte("\n"))

	// Rotated: three consecutive parts, named so that lexical order is the wrong order.
	n := len(lines)
	parts := [][]byte{bytes.Join(lines[:n/3], nil), bytes.Join(lines[n/3:2*n/3], nil), bytes.Join(lines[2*n/3:], nil)}
	rot := filepath.Join(dir, "rotated")
	os.Mkdir(rot, 0o755)
	for i, p := range parts {
		os.WriteFile(filepath.Join(rot, fmt.Sprintf("audit-%d.log", 3-i)), p, 0o644)
	}
	// Two API servers: events alternate between two files, one of them gzipped.
	var a, b bytes.Buffer
	for i, l := range lines {
		if i%2 == 0 {
			a.Write(l)
		} else {
			b.Write(l)
		}
	}
	ha := filepath.Join(dir, "apiserver-a.log")
	os.WriteFile(ha, a.Bytes(), 0o644)
	hb := filepath.Join(dir, "apiserver-b.log.gz")
	os.WriteFile(hb, gzipped.Bytes(t, b.Bytes()), 0o644)

	for _, tc := range []struct {
		name  string
		args  []string
		dups  int64
		files int
	}{
		{"rotated directory", []string{rot}, 0, 3},
		{"rotated glob", []string{filepath.Join(rot, "audit-*.log")}, 0, 3},
		{"two api servers", []string{hb, ha}, 0, 2},
		{"same file twice", []string{whole, filepath.Join(dir, ".", "whole.log") + "x"}, base.Totals.Events, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "same file twice" {
				os.WriteFile(tc.args[1], data, 0o644)
			}
			r, err := analyzeFiles(t, analyze.Options{}, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Inputs) != tc.files {
				t.Fatalf("%d inputs", len(r.Inputs))
			}
			if r.Totals.Duplicates != tc.dups || r.Totals.Events != base.Totals.Events {
				t.Fatalf("duplicates %d events %d, want %d and %d", r.Totals.Duplicates, r.Totals.Events, tc.dups, base.Totals.Events)
			}
			got := story(t, r)
			if got != want {
				t.Fatalf("story differs:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub", ".hidden"), 0o755)
	for _, f := range []string{"b.log", "a.log", "sub/c.log.gz", "sub/.hidden/x.log", ".dot.log"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	names := func(in []read.Input) []string {
		var out []string
		for _, i := range in {
			rel, _ := filepath.Rel(dir, i.Name)
			if i.Name == "-" {
				rel = "-"
			}
			out = append(out, rel)
		}
		return out
	}
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{dir}, "[a.log b.log sub/c.log.gz]", ""},
		{[]string{filepath.Join(dir, "*.log")}, "[a.log b.log]", ""},
		{[]string{filepath.Join(dir, "b.log"), dir}, "[b.log a.log sub/c.log.gz]", ""},
		{nil, "[-]", ""},
		{[]string{"-"}, "[-]", ""},
		{[]string{filepath.Join(dir, "nope.log")}, "", "no such file"},
		{[]string{filepath.Join(dir, "*.nothing")}, "", "no file matches"},
	} {
		t.Run(strings.ReplaceAll(fmt.Sprint(tc.args), dir, "DIR"), func(t *testing.T) {
			in, err := read.ExpandInputs(tc.args, strings.NewReader(""))
			if textcheck.WantError(t, err, tc.wantErr) {
				return
			}
			if got := fmt.Sprint(names(in)); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}

// Standard input works like a file, gzip included.
func TestStdin(t *testing.T) {
	data, err := os.ReadFile("testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in, err := read.ExpandInputs(nil, bytes.NewReader(gzipped.Bytes(t, data)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.Analyze(in, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Totals.Events != 6 || !r.Inputs[0].Gzip || len(r.NodeDeletions) != 1 {
		t.Fatalf("%+v", r.Totals)
	}
}

func TestSinceUntil(t *testing.T) {
	since, _ := read.ParseTimeFlag("2024-04-05 06:00")
	until, _ := read.ParseTimeFlag("2024-04-05T10:00:00Z")
	r, err := analyzeFiles(t, analyze.Options{ReadOptions: read.Options{Since: since, Until: until}}, "testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Left: the 404 GET (06:04), the update (06:26), the create (09:38).
	if r.Totals.Events != 3 || r.Totals.OutsideWindow != 3 || len(r.NodeDeletions) != 0 {
		t.Fatalf("%+v", r.Totals)
	}
	if _, err := read.ParseTimeFlag("yesterday"); err == nil {
		t.Fatal("no error for a bad time")
	}
}

// Many inputs read side by side share a small chunk budget; with small chunks the readers
// compete for tokens all the time, and the story must still come out whole, without deadlock.
func TestManyOverlappingInputsSmallChunks(t *testing.T) {
	data, _ := genLog(t, auditgen.Config{Nodes: 60, Duration: 5 * time.Minute, Seed: 5, ThrottledClient: true})
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.log")
	os.WriteFile(whole, data, 0o644)
	opts := analyze.Options{ReadOptions: read.Options{ChunkSize: 16 << 10, MaxLineSize: 64 << 10}}
	base, err := analyzeFiles(t, opts, whole)
	if err != nil {
		t.Fatal(err)
	}
	parts := make([]bytes.Buffer, 9)
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		parts[i%len(parts)].Write(l)
	}
	var args []string
	for i := range parts {
		p := filepath.Join(dir, fmt.Sprintf("stream-%d.log", i))
		os.WriteFile(p, parts[i].Bytes(), 0o644)
		args = append(args, p)
	}
	done := make(chan struct{})
	var r *analyze.Report
	go func() {
		defer close(done)
		r, err = analyzeFiles(t, opts, args...)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("reading 9 overlapping inputs did not finish (deadlock?)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Totals.Events != base.Totals.Events || story(t, r) != story(t, base) {
		t.Fatalf("9 inputs: %d events, story differs from the single file's (%d events)", r.Totals.Events, base.Totals.Events)
	}
}
