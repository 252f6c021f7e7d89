package audit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

// repeatReader yields n copies of one byte without holding them.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for i := range p {
		p[i] = r.c
	}
	r.n -= int64(len(p))
	return len(p), nil
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hugeRecordInputs builds, for every layout that is not JSON lines, an input holding one record
// of huge bytes (streamed, never in memory) followed by one ordinary audit event.
func hugeRecordInputs(t *testing.T, huge int64) map[string]func() io.Reader {
	good := hostileEvent(t, time.Second, map[string]any{"verb": "get", "user": map[string]any{"username": "alice"},
		"responseStatus": map[string]any{"code": 200}})
	pretty, _ := json.MarshalIndent(json.RawMessage(good), "", "  ")
	const eventHead = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"create","requestReceivedTimestamp":"2024-04-05T06:00:00Z","requestObject":{"data":"`
	a := func() io.Reader { return &repeatReader{'A', huge} }
	s := strings.NewReader
	return map[string]func() io.Reader{
		"json-stream": func() io.Reader {
			return io.MultiReader(s("{\n  \"kind\": \"Event\",\n  \"requestObject\": {\"data\": \""), a(), s("\"}\n}\n"), bytes.NewReader(pretty))
		},
		"json-array": func() io.Reader {
			return io.MultiReader(s("[\n"+eventHead), a(), s("\"}},\n"), bytes.NewReader(pretty), s("\n]\n"))
		},
		"filter-log-events": func() io.Reader {
			return io.MultiReader(s(`{"events":[{"timestamp":1712296800000,"eventId":"1","message":"`), a(),
				s(`"},{"timestamp":1712296801000,"eventId":"2","message":`+quoteJSON(good)+`}],"nextToken":"x"}`))
		},
		"logs-insights-json": func() io.Reader {
			return io.MultiReader(s(`[{"@timestamp":"2024-04-05 06:00:00.000","@message":"`), a(),
				s(`"},{"@timestamp":"2024-04-05 06:00:01.000","@message":`+quoteJSON(good)+`}]`))
		},
		"logs-insights-results": func() io.Reader {
			return io.MultiReader(s(`{"results":[[{"field":"@message","value":"`), a(),
				s(`"}],[{"field":"@timestamp","value":"2024-04-05 06:00:01.000"},{"field":"@message","value":`+quoteJSON(good)+`}]],"status":"Complete"}`))
		},
		"logs-insights-csv": func() io.Reader {
			csvq := func(x string) string { return `"` + strings.ReplaceAll(x, `"`, `""`) + `"` }
			return io.MultiReader(s("@timestamp,@message\n2024-04-05 06:00:00.000,\""), a(),
				s("\"\n2024-04-05 06:00:01.000,"+csvq(good)+"\n"))
		},
		"cloudwatch-subscription": func() io.Reader {
			return io.MultiReader(s(`{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":"s","logEvents":[{"id":"1","timestamp":1712296800000,"message":"`), a(),
				s(`"},{"id":"2","timestamp":1712296801000,"message":`+quoteJSON(good)+`}]}`))
		},
	}
}

// measureAlloc returns the bytes allocated while fn ran.
func measureAlloc(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A record longer than --max-line-size in any export layout is skimmed, counted as too long
// with its record number, and the record after it is read; memory does not grow with it.
func TestOversizedRecordsBounded(t *testing.T) {
	const limit = 64 << 10
	const huge = 48 << 20
	opts := analyze.Options{ReadOptions: read.Options{ChunkSize: limit, MaxLineSize: limit}}
	for name, mk := range hugeRecordInputs(t, huge) {
		t.Run(name, func(t *testing.T) {
			var r *analyze.Report
			var err error
			alloc := measureAlloc(func() { r, err = analyze.AnalyzeReader(name, mk(), opts) })
			if err != nil {
				t.Fatal(err)
			}
			in := r.Inputs[0]
			if in.Format != strings.TrimSuffix(name, "-results") && !(name == "logs-insights-results" && in.Format == "logs-insights-json") {
				t.Fatalf("read as %s", in.Format)
			}
			if in.Events != 1 || len(in.Bad) != 1 || in.Bad[0].Kind != "too-long" || in.Bad[0].Count != 1 || in.Bad[0].Examples[0].Record != 1 {
				t.Errorf("events %d, bad %+v: want the huge record 1 too long and the next event read", in.Events, in.Bad)
			}
			// Generous: the limit, buffers and the analysis, far below the record's 48 MiB.
			if alloc > 16<<20 {
				t.Errorf("allocated %d MiB reading a %d MiB record with a %d KiB limit", alloc>>20, huge>>20, limit>>10)
			}
		})
	}
}

// A base64 subscription payload whose decompressed size is over the bound is counted as too
// long; the next payload is read.
func TestOversizedSubscriptionPayload(t *testing.T) {
	const limit = 64 << 10
	good := hostileEvent(t, time.Second, map[string]any{"verb": "get", "user": map[string]any{"username": "alice"},
		"responseStatus": map[string]any{"code": 200}})
	bomb := gzipped.From(t, io.MultiReader(strings.NewReader(`{"messageType":"DATA_MESSAGE","logEvents":[{"id":"1","timestamp":1,"message":"`),
		&repeatReader{'A', 8 << 20}, strings.NewReader(`"}]}`)))
	ok := gzipped.From(t, strings.NewReader(`{"messageType":"DATA_MESSAGE","logEvents":[{"id":"2","timestamp":1712296801000,"message":`+quoteJSON(good)+`}]}`))
	tooLongLine := strings.Repeat("H4sI", limit) // over the line limit itself
	input := base64.StdEncoding.EncodeToString(bomb) + "\n" + tooLongLine + "\n" + base64.StdEncoding.EncodeToString(ok) + "\n"
	var r *analyze.Report
	var err error
	alloc := measureAlloc(func() {
		r, err = analyze.AnalyzeReader("b64", strings.NewReader(input), analyze.Options{ReadOptions: read.Options{ChunkSize: limit, MaxLineSize: limit}})
	})
	if err != nil {
		t.Fatal(err)
	}
	in := r.Inputs[0]
	if in.Format != "cloudwatch-subscription" || in.Events != 1 || len(in.Bad) != 1 || in.Bad[0].Kind != "too-long" || in.Bad[0].Count != 2 {
		t.Errorf("%+v", in)
	}
	if alloc > 16<<20 {
		t.Errorf("allocated %d MiB", alloc>>20)
	}
}
