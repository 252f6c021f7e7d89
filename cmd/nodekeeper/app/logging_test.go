package app

import (
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/cli"
)

// A format nobody knows is bad usage, on any command, with the valid formats named.
func TestLoggingFormatRefused(t *testing.T) {
	for _, args := range [][]string{{"controller", "--logging-format", "xml"}, {"maxpods", "m5.large", "--logging-format", "xml"}} {
		_, stderr, code := execute(t, false, args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, `--logging-format "xml": want text or json`) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming text and json", args, code, stderr, cli.ExitUsage)
		}
	}
}
