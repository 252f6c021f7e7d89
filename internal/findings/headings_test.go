package findings

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/testsupport/headings"
)

// The golden text reports' titles, section titles and rule lines carry no Go identifier, fmt
// error or dump (internal/doctor and internal/bundle check their own sections and rules).
func TestGoldenHeadingsAreForPeople(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no text golden files: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		headings.Check(t, f, headings.Text(string(data)))
	}
}
