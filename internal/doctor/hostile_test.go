package doctor

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
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
			var out bytes.Buffer
			if err := findings.PrintText(&out, r, findings.PrintOptions{Catalog: catalog}); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(out.String(), "\n") {
				if !textsafe.Safe(line) {
					t.Fatalf("line %d reaches the terminal raw: %q", i+1, line)
				}
			}
			if !strings.Contains(out.String(), "kubelet v1.34.0"+tc.shown+" is newer") {
				t.Errorf("NK301 does not show the escaped version:\n%s", out.String())
			}
		})
	}
}

// TestConfigzFailureClipsOnCharacters: a failed configz request's error (a proxy's page, a
// kubelet's message in any language) is cut to 200 characters without splitting a character.
func TestConfigzFailureClipsOnCharacters(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, tc := range []struct {
		name   string
		err    error
		prefix string
	}{
		{"plain error", errors.New("dial tcp: " + long), "dial tcp: éé"},
		{"API status", apierrors.NewServiceUnavailable("kubelet says " + long), "HTTP 503: kubelet says éé"},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n\x1b[2J"), `HTTP 404: nodes "n\x1b[2J" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := configzFailure(tc.err)
			if !utf8.ValidString(got) || !textsafe.Safe(got) {
				t.Fatalf("configzFailure = %q: not valid, safe UTF-8", got)
			}
			if n := utf8.RuneCountInString(got); n > 200 {
				t.Errorf("configzFailure is %d characters, want at most 200", n)
			}
			if !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("configzFailure = %q, want prefix %q", got, tc.prefix)
			}
		})
	}
}
