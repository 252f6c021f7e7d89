package leasesview

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// The column headers and section lines (Summary, API servers) of every text golden file of
// `nodekeeper leases` carry no Go identifier, fmt error or dump.
func TestGoldenHeadingsAreForPeople(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, ".json.golden") })
	if len(files) < 5 {
		t.Fatalf("only %d text golden files", len(files))
	}
	headings.CheckTextFiles(t, files...)
}
