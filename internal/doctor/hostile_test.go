package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// TestVersionSkewEscapesKubeletVersion: a Node's status.nodeInfo.kubeletVersion is written by the
// node; the Go version parser accepts any suffix after the numbers, so "v1.34.0" followed by a
// terminal escape reaches NK301's message. The findings text printer shows it as visible text.
func TestVersionSkewEscapesKubeletVersion(t *testing.T) {
	for _, tc := range []struct{ name, suffix, shown string }{
		{"OSC window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"clear screen", "\x1b[2J", `\x1b[2J`},
		{"C1 CSI", "\u009b2J", `\u009b2J`},
		{"bidi override", "\u202e", `\u202e`},
		{"invalid UTF-8", "\xff\xc3", `\xff\xc3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := CheckVersionSkew("node/x", "v1.34.0"+tc.suffix, "v1.33.2")
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 || fs[0].Code != "NK301" {
				t.Fatalf("findings = %+v, want one NK301", fs)
			}
			r := findings.NewReport("doctor", "https://127.0.0.1:6443", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
				findings.SectionSpec{Name: SectionVersions, Title: "Versions"})
			r.Add(fs...)
			out := findingstest.SafeText(t, "text", r, findings.PrintOptions{Catalog: catalog})
			if !strings.Contains(out, "kubelet v1.34.0"+tc.shown+" is newer") {
				t.Errorf("NK301 does not show the escaped version:\n%s", out)
			}
		})
	}
}

// TestHostileNameJSONKeepsOriginal: a finding built from a name written by others (a CSINode
// named after a Node that is gone, a stuck pod's sandbox message) stores the name as written. The
// text report shows it escaped, with no raw control byte; the JSON report decodes back to the
// original string (an invalid byte as U+FFFD, as every JSON decoder reads it) and holds none of
// the characters a terminal acts on raw.
func TestHostileNameJSONKeepsOriginal(t *testing.T) {
	const hostile = "n\x1b[2J\x1b]0;x\a\u009b2J\u202ed\xff"
	const shown = `n\x1b[2J\x1b]0;x\x07\u009b2J\u202ed\xff`
	decoded := strings.ToValidUTF8(hostile, "\uFFFD")

	f := &Facts{CSINodes: []NodeScoped{{Name: hostile}}}
	fs := orphans(f, f.CSINodes, RuleCSINodeOrphaned, "csinode/")
	if len(fs) != 1 || fs[0].Resource != "csinode/"+hostile {
		t.Fatalf("findings = %+v, want one for csinode/%q stored as written", fs, hostile)
	}
	msg := clipHead(strings.Repeat("x", 500)+hostile, maxSandboxMessage)
	if !strings.HasSuffix(msg, hostile) || utf8.RuneCountInString(msg) != maxSandboxMessage {
		t.Fatalf("clipHead = %q, want %d runes ending in the message as written", msg, maxSandboxMessage)
	}
	r := findings.NewReport("doctor", "https://127.0.0.1:6443", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
		findings.SectionSpec{Name: SectionPodNet, Title: "Pod networking"})
	r.Add(fs[0].WithEvidence("newest message: " + hostile))

	text := findingstest.SafeText(t, "text", r, findings.PrintOptions{Catalog: catalog})
	if n := strings.Count(text, shown); n < 3 {
		t.Errorf("text shows %q %d times, want resource, message and evidence:\n%s", shown, n, text)
	}

	js := findingstest.SafeJSON(t, r)
	if bytes.Contains(js, []byte(`\\x1b`)) {
		t.Errorf("JSON carries the text escape \\x1b instead of the original:\n%s", js)
	}
	var doc struct {
		Sections []struct {
			Findings []struct {
				Resource, Message string
				Evidence          []string
			}
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, js)
	}
	if len(doc.Sections) != 1 || len(doc.Sections[0].Findings) != 1 {
		t.Fatalf("JSON = %s, want one finding", js)
	}
	got := doc.Sections[0].Findings[0]
	if got.Resource != "csinode/"+decoded || !strings.Contains(got.Message, "no Node "+decoded+";") ||
		len(got.Evidence) != 1 || got.Evidence[0] != "newest message: "+decoded {
		t.Errorf("JSON decodes to %+v, want the original %q", got, decoded)
	}
}
