package read_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

// The fuzz targets of this file run the whole analysis on what the readers yield (an external
// test package: analyze imports read), with the allocation bound of fuzz_test.go.

var fuzzOpts = analyze.Options{ReadOptions: read.Options{Workers: 1, ChunkSize: read.FuzzLimit, MaxLineSize: read.FuzzLimit}}

// FuzzJSONLines runs the whole pipeline (format detection, chunking, parsing, analysis) on
// kube-apiserver's own layout, plain or gzip.
func FuzzJSONLines(f *testing.F) {
	data, err := os.ReadFile("../testdata/seed001/events.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("{\"kind\":\"Event\"}\n\n{not json}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read.CheckAllocBound(t, len(data), func() { _, _ = analyze.AnalyzeReader("fuzz", bytes.NewReader(data), fuzzOpts) })
	})
}

// FuzzSubscription takes the payload JSON and how it is wrapped: as is (Firehose, gunzipped),
// gzip (the Firehose object), or base64 of gzip, one payload per line (Kinesis, Lambda).
func FuzzSubscription(f *testing.F) {
	for _, wrap := range []uint8{0, 1, 2} {
		f.Add([]byte(`{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":"s","logEvents":[{"id":"1","timestamp":1712296800000,"message":"{\"kind\":\"Event\"}"}]}`), wrap)
		f.Add([]byte(`{"logEvents":[{"id":"1","message":"CWL CONTROL MESSAGE: ok"}],"messageType":"CONTROL_MESSAGE"}`), wrap)
	}
	f.Fuzz(func(t *testing.T, payload []byte, wrap uint8) {
		data := payload
		switch wrap % 3 {
		case 1:
			data = gzipped.Bytes(t, payload)
		case 2:
			data = append([]byte(base64.StdEncoding.EncodeToString(gzipped.Bytes(t, payload))), '\n')
		}
		if wrap%3 == 0 {
			read.FuzzFormat(t, read.FormatSubscription, data)
			return
		}
		// Wrapped payloads go through format detection and decompression, as a file would.
		read.CheckAllocBound(t, len(data)+len(payload), func() { _, _ = analyze.AnalyzeReader("fuzz", bytes.NewReader(data), fuzzOpts) })
	})
}
