package bundle

import (
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// TestRulesFileListedOnce: every rule of rules.yaml, bundle's own rules (Rules adds bootstrap's), is in Rules exactly once.
func TestRulesFileListedOnce(t *testing.T) { findingstest.FileListedOnce(t, "rules.yaml", Rules) }
