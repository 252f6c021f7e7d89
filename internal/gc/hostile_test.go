package gc

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// TestPrintersEscapeHostileText: a reason can quote whatever an API server or a proxy in front of
// it answered, and lease names come from the cluster; the plan and report tables show any terminal
// escape in them as visible text.
func TestPrintersEscapeHostileText(t *testing.T) {
	now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, raw, shown string }{
		{"OSC window title", "x\x1b]0;pwned\x07", `x\x1b]0;pwned\x07`},
		{"clear screen", "\x1b[2Jgone", `\x1b[2Jgone`},
		{"C1 CSI", "a\u009b2J", `a\u009b2J`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"invalid UTF-8", "bad\xff\xc3", `bad\xff\xc3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(now)
			p.leaked[0] = p.leaked[0].DeepCopy()
			p.leaked[0].Name = "lease-" + tc.raw
			r := &Report{
				Counts:  map[deleter.Outcome]int{deleter.Failed: 1},
				Results: []Result{{Name: "lease-" + tc.raw, UID: "u1", Outcome: deleter.Failed, Reason: "GET node: " + tc.raw}},
			}
			var out bytes.Buffer
			PrintPlan(&out, p, true)
			if err := WriteReport(&out, "table", p, r, true); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(out.String(), "\n") {
				if !textsafe.Safe(line) {
					t.Fatalf("line %d reaches the terminal raw: %q", i+1, line)
				}
			}
			if n := strings.Count(out.String(), tc.shown); n != 3 {
				t.Errorf("escaped text %q shown %d times, want 3 (longest idle, result name, reason):\n%s", tc.shown, n, out.String())
			}
		})
	}
}
