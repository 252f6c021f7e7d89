package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
)

// clip cuts on rune boundaries: a user agent of multi-byte characters never ends in half a
// character.
func TestClipKeepsRunesWhole(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ascii-only-agent", "ascii-…"},
		{"ééééééééééé", "éééééé…"},
		{"日本語のユーザーエージェント", "日本語のユー…"},
		{"\x1b[2Jabcdef", `\x1b[2…`},
	} {
		got := clip(tc.in, 7)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("clip(%q, 7) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A report past its memory bounds says in text which numbers are approximate.
func TestTextBoundsSection(t *testing.T) {
	for _, tc := range []struct {
		bounds analyze.Bounds
		want   bool
	}{
		{analyze.Bounds{}, false},
		{analyze.Bounds{TalkerEvictions: 1}, true},
		{analyze.Bounds{LeaseEventsNotTracked: 900}, true},
	} {
		var out strings.Builder
		if err := WriteText(&out, &analyze.Report{Bounds: tc.bounds}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "BOUNDS  memory limits reached"); got != tc.want {
			t.Errorf("bounds %+v: BOUNDS section shown %v, want %v:\n%s", tc.bounds, got, tc.want, out.String())
		}
	}
}
