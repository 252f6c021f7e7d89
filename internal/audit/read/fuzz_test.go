package read

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"testing"
)

// One fuzz target per input layout. Each reads what the fuzzer made with the layout's own reader,
// parses every message as an event (nothing may panic), and asserts the memory bound the readers
// promise: bytes allocated grow with the input, never with what a record claims to hold (a
// record over the limit is skimmed, not kept). The seed corpora are the export samples in
// ../testdata/eks and ../testdata/seed001, and the files in testdata/fuzz/<target>. The targets
// that run the whole analysis are in fuzz_pipeline_test.go.

const (
	fuzzLimit = 64 << 10 // --max-line-size for the fuzz runs (and the chunk size)
	// allocPerByte and allocBase bound TotalAlloc: generous (decoding a record into Go values
	// costs a few times its size, and each reader has fixed buffers) but real: a reader that
	// kept a whole oversized record, or grew without bound, fails it.
	allocPerByte = 64
	allocBase    = 8 << 20
)

func addSeedFiles(f *testing.F, files ...string) {
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkAllocBound runs fn and fails when it allocated more than the bound for n input bytes.
func checkAllocBound(t *testing.T, n int, fn func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(allocBase+allocPerByte*n); got > bound {
		t.Fatalf("allocated %d bytes for %d input bytes (bound %d)", got, n, bound)
	}
}

// fuzzFormat reads data as layout f and converts every message it yields.
func fuzzFormat(t *testing.T, f format, data []byte) {
	checkAllocBound(t, len(data), func() {
		c := &converter{li: newLocalInterner(newInterner())}
		var rec Record
		d := &decodedInput{r: bufio.NewReaderSize(bytes.NewReader(data), 64<<10), format: f}
		_ = readMessages(d, fuzzLimit, func(ms []message) error {
			for i := range ms {
				if len(ms[i].data) > fuzzLimit {
					t.Fatalf("a message of %d bytes passed the %d limit", len(ms[i].data), fuzzLimit)
				}
				if !ms[i].tooLong {
					c.convert(ms[i].data, ms[i].exportTime, &rec)
				}
			}
			return nil
		})
	})
}

func FuzzJSONArray(f *testing.F) {
	f.Add([]byte(`[{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2024-04-05T06:00:00Z"}, 1, "x", null]`))
	f.Add([]byte("[]\n[[],{}]"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, formatJSONArray, data) })
}

func FuzzJSONStream(f *testing.F) {
	addSeedFiles(f, "../testdata/seed001/events-pretty.json")
	f.Add([]byte("{\n \"a\": \"\\\"}\"\n}\n{} ] , 12 true"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, formatJSONStream, data) })
}

func FuzzFilterLogEvents(f *testing.F) {
	addSeedFiles(f, "../testdata/eks/filter-log-events.json", "../testdata/eks/filter-log-events-truncated.json")
	f.Add([]byte(`{"events":null,"nextToken":"a"}{"events":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, formatFilterEvents, data) })
}

func FuzzInsightsJSON(f *testing.F) {
	addSeedFiles(f, "../testdata/eks/insights-results.json", "../testdata/eks/insights-console.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, formatInsightsJSON, data) })
}

func FuzzInsightsCSV(f *testing.F) {
	addSeedFiles(f, "../testdata/eks/insights.csv")
	f.Add([]byte("@message\n\"a\"\"b\"\n\n\"unterminated"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, formatInsightsCSV, data) })
}
