package leasesview

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// hostileStrings are what a tenant who can write a Lease (or a node that can write its Node) may
// put into a free-text field, each with the visible escape the printers must show instead.
var hostileStrings = []struct{ name, raw, shown string }{
	{"OSC window title", "x\x1b]0;pwned\x07y", `x\x1b]0;pwned\x07y`},
	{"clear screen", "\x1b[2Jgone", `\x1b[2Jgone`},
	{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
	{"bidi override", "abc\u202edcba", `abc\u202edcba`},
	{"invalid UTF-8", "bad\xff\xc3", `bad\xff\xc3`},
}

// assertTerminalSafe fails when any line of out holds a byte or character a terminal acts on.
func assertTerminalSafe(t *testing.T, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if !textsafe.Safe(line) {
			t.Fatalf("line %d reaches the terminal raw: %q", i+1, line)
		}
	}
}

// hostileReport is the fixture with every free-text field of every kind of lease replaced by raw.
func hostileReport(raw string) *Report {
	r := fixtureReport(fixedOptions())
	for i := range r.Items {
		it := &r.Items[i]
		it.Holder = ptr.To(raw)
		it.Reason = "reason " + raw
		it.Strategy = raw
		it.PreferredHolder = raw
		it.Hostname = raw
		it.Owners = append(it.Owners, Owner{APIVersion: "apps/v1", Kind: "Deployment" + raw, Name: raw})
	}
	for i := range r.LeaseCandidates {
		c := &r.LeaseCandidates[i]
		c.BinaryVersion, c.EmulationVersion, c.Strategy, c.LeaseName = raw, raw, raw, raw
	}
	if r.Summary.APIServers != nil {
		r.Summary.APIServers.Stale = 1
		r.Summary.APIServers.StaleIdentities = []string{"kube-system/" + raw}
	}
	return r
}

// TestPrintersEscapeHostileText: a holderIdentity (or any other field written by others) with
// terminal escapes is printed as visible text in every table, wide table and watch line.
func TestPrintersEscapeHostileText(t *testing.T) {
	for _, h := range hostileStrings {
		t.Run(h.name, func(t *testing.T) {
			for _, po := range []PrintOptions{
				{AllNamespaces: true},
				{Format: FormatWide, AllNamespaces: true},
				{AllNamespaces: true, NoHeaders: true},
			} {
				var out bytes.Buffer
				if err := Print(&out, hostileReport(h.raw), po); err != nil {
					t.Fatal(err)
				}
				assertTerminalSafe(t, out.String())
				if !strings.Contains(out.String(), h.shown) {
					t.Errorf("-o %q: the escaped holder %q is not shown:\n%s", po.Format, h.shown, out.String())
				}
			}
			for _, format := range []string{FormatTable, FormatWide} {
				r := hostileReport(h.raw)
				var out bytes.Buffer
				p := NewWatchPrinter(&out, PrintOptions{Format: format, AllNamespaces: true})
				if err := p.Snapshot(r); err != nil {
					t.Fatal(err)
				}
				it := r.Items[0]
				it.Namespace = "ns" + h.raw
				if err := p.Change(&Change{TypeMeta: newTypeMeta(ChangeKind), Type: Modified, Time: r.GeneratedAt, From: lease.Healthy, Item: it}); err != nil {
					t.Fatal(err)
				}
				assertTerminalSafe(t, out.String())
				if !strings.Contains(out.String(), "ns"+h.shown) {
					t.Errorf("watch -o %q: the escaped namespace is not shown:\n%s", format, out.String())
				}
			}
		})
	}
}
