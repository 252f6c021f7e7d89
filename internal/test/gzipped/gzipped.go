// Package gzipped compresses test inputs as one gzip stream, the way rotated audit logs, bundle
// members and user data arrive compressed, failing the test on a write error instead of
// ignoring it. Import it only from tests.
package gzipped

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// Bytes is b compressed as one gzip stream.
func Bytes(t testing.TB, b []byte) []byte {
	t.Helper()
	return From(t, bytes.NewReader(b))
}

// From compresses everything r yields, so that a test can gzip an input it never holds
// uncompressed (a decompression bomb streamed from a generator).
func From(t testing.TB, r io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := io.Copy(zw, r); err != nil {
		t.Fatalf("gzip: %v", err)
	}
	if err := zw.Close(); err != nil {
		t.Fatalf("gzip: %v", err)
	}
	return buf.Bytes()
}
