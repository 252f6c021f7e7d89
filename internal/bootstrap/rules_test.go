package bootstrap

import (
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// TestRulesFileListedOnce: every rule of rules.yaml, the user-data rules, is in Rules exactly once.
func TestRulesFileListedOnce(t *testing.T) { findingstest.FileListedOnce(t, "rules.yaml", Rules) }
