package audit

import (
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/typemeta"
)

// TestAPIVersion: the analysis layer, which may import nothing of nodekeeper's, writes the same
// apiVersion as every other document.
func TestAPIVersion(t *testing.T) {
	if analyze.APIVersion != typemeta.APIVersion {
		t.Errorf("audit reports say apiVersion %q, every other document %q", analyze.APIVersion, typemeta.APIVersion)
	}
}
