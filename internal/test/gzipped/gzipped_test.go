package gzipped

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestBytesRoundTrip: what Bytes and From write is gzip that reads back to the input.
func TestBytesRoundTrip(t *testing.T) {
	for _, in := range []string{"", "one line\n", strings.Repeat("pull QPS exceeded\n", 10000)} {
		for name, z := range map[string][]byte{
			"Bytes": Bytes(t, []byte(in)),
			"From":  From(t, strings.NewReader(in)),
		} {
			zr, err := gzip.NewReader(bytes.NewReader(z))
			if err != nil {
				t.Fatalf("%s(%d bytes): %v", name, len(in), err)
			}
			out, err := io.ReadAll(zr)
			if err != nil || string(out) != in {
				t.Errorf("%s(%d bytes) reads back %d bytes, err %v", name, len(in), len(out), err)
			}
		}
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	fatals []string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, format)
}

// TestFromReadError: a reader that fails fails the test; it is not a shorter stream.
func TestFromReadError(t *testing.T) {
	r := &fatalRecorder{TB: t}
	From(r, iotest.ErrReader(errors.New("disk gone")))
	if len(r.fatals) == 0 {
		t.Fatal("a failing reader did not fail the test")
	}
}
