// Package golden compares test output with golden files, and rewrites them when the tests run
// with -update (go test ./internal/PKG -update). It is the one -update flag of the test binaries
// that import it; import it only from tests.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Assert compares got with the golden file at path (relative to the package's directory, for
// example testdata/report.txt): a difference fails the test and shows both. With -update it
// writes got to path instead, creating the directory.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (check the difference, then run the test with -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
