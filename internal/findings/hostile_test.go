package findings

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// TestPrintTextEscapesHostileText: resources, messages and evidence quote text written by others
// (a Node's kubeletVersion in NK301, kubelet log lines, object names); the text printer shows any
// terminal escape in them as visible text. With colour on, the only ESC bytes are its own colours.
func TestPrintTextEscapesHostileText(t *testing.T) {
	for _, tc := range []struct{ name, raw, shown string }{
		{"OSC window title", "v1.30\x1b]0;pwned\x07", `v1.30\x1b]0;pwned\x07`},
		{"clear screen", "\x1b[2Jv1.31", `\x1b[2Jv1.31`},
		{"C1 CSI", "v1\u009b2J", `v1\u009b2J`},
		{"bidi override", "v1.29\u202e03.1v", `v1.29\u202e03.1v`},
		{"invalid UTF-8", "v1.2\xff\xc3", `v1.2\xff\xc3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport("doctor", "https://127.0.0.1:6443"+tc.raw, time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
				SectionSpec{Name: "nodes", Title: "Nodes"})
			r.Checked("nodes", 2)
			r.Add(ruleCap.New("node/"+tc.raw, "kubelet %s is older than the control plane", tc.raw).WithEvidence("log: " + tc.raw))
			r.Ignored = []string{tc.raw}
			r.AddStat("stat"+tc.raw, 1)
			for _, colour := range []bool{false, true} {
				var out bytes.Buffer
				if err := PrintText(&out, r, PrintOptions{Color: colour, Catalog: testCatalog}); err != nil {
					t.Fatal(err)
				}
				text := out.String()
				if colour {
					// Take out the printer's own colours; nothing else may be an escape.
					for _, c := range []string{ansiReset, ansiBold, ansiRed, ansiGreen, ansiYellow, ansiCyan, ansiGrey} {
						text = strings.ReplaceAll(text, c, "")
					}
				}
				for i, line := range strings.Split(text, "\n") {
					if !textsafe.Safe(line) {
						t.Fatalf("colour=%v line %d reaches the terminal raw: %q", colour, i+1, line)
					}
				}
				if n := strings.Count(text, tc.shown); n < 5 {
					t.Errorf("colour=%v: the escaped text %q is shown %d times, want target, resource, message, evidence, ignored, stat:\n%s", colour, tc.shown, n, text)
				}
			}
		})
	}
}

// TestPrintJUnitEscapesHostileText: JUnit reports end up on CI consoles and web pages, and Go's
// XML encoder lets C1 and bidi controls through (it replaces only C0): resource, message and
// evidence are escaped as in the text report.
func TestPrintJUnitEscapesHostileText(t *testing.T) {
	raw := "v1\x1b]0;pwned\x07\u009b2J\u202e\xff"
	r := NewReport("doctor", "x", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC), SectionSpec{Name: "nodes", Title: "Nodes"})
	r.Checked("nodes", 1)
	r.Add(ruleCap.New("node/"+raw, "kubelet %s", raw).WithEvidence("log: " + raw))
	var out bytes.Buffer
	if err := PrintJUnit(&out, r); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(out.String(), "\n") {
		if !textsafe.Safe(line) {
			t.Fatalf("line %d carries a raw control: %q", i+1, line)
		}
	}
	if n := strings.Count(out.String(), textsafe.Escape(raw)); n < 3 {
		t.Errorf("the escaped text is shown %d times, want name, message and evidence:\n%s", n, out.String())
	}
}
