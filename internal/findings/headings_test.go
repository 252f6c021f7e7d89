package findings

import (
	"path/filepath"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// The golden text reports' titles, section titles and rule lines carry no Go identifier, fmt
// error or dump (internal/doctor and internal/bundle check their own sections and rules).
func TestGoldenHeadingsAreForPeople(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	headings.CheckTextFiles(t, files...)
}
