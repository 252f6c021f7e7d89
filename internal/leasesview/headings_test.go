package leasesview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/testsupport/headings"
)

// The column headers and section lines (Summary, API servers) of every text golden file of
// `nodekeeper leases` carry no Go identifier, fmt error or dump.
func TestGoldenHeadingsAreForPeople(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".json.golden") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		headings.Check(t, f, headings.Text(string(data)))
		n++
	}
	if n < 5 {
		t.Fatalf("only %d text golden files", n)
	}
}
