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

// TestHeartbeatsCountedNouns: one kubelet renewing once reads "1 kubelet renewed its lease once",
// not "1 kubelets renewed their lease 1 times".
func TestHeartbeatsCountedNouns(t *testing.T) {
	for _, tc := range []struct {
		kubelets, renewals int64
		want               string
	}{
		{1, 1, "1 kubelet renewed its lease once;"},
		{2, 7, "2 kubelets renewed their lease 7 times;"},
	} {
		var out strings.Builder
		if err := WriteText(&out, &analyze.Report{Heartbeats: analyze.Heartbeats{Kubelets: tc.kubelets, Renewals: tc.renewals}}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("want %q in:\n%s", tc.want, out.String())
		}
	}
}
