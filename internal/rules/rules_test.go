package rules

import (
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// TestRulesFileListedOnce: every rule of rules.yaml, the shared rules, is in Rules exactly once.
func TestRulesFileListedOnce(t *testing.T) { findingstest.FileListedOnce(t, "rules.yaml", Rules) }
