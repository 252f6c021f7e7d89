package render

import (
	"fmt"
	"io"
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

// Issue 31 item 6: lease churn past the lease table is marked partial where it is given, in text
// and HTML: "at least" before its counts and the deletes not followed, never a count presented as
// exact.
func TestChurnPartialMarked(t *testing.T) {
	r := &analyze.Report{LeaseChurn: analyze.LeaseChurn{Threshold: 5, Window: analyze.ChurnWindow, Churns: 50000, ExtraWrites: 100000,
		Partial: true, DeletesNotFollowed: 30000, Actors: []analyze.ChurnActor{}}}
	var text strings.Builder
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"within 1m0s: at least 50000, costing at least 100000 etcd writes",
		"PARTIAL: 30000 deletes of node leases past the lease table were not followed",
		"at most 80000 churns in all",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var html strings.Builder
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "At least 50000 deletions of node leases") || !strings.Contains(html.String(), "Partial: 30000 deletes") {
		t.Errorf("the HTML report does not mark the churn partial")
	}
	r.LeaseChurn.Partial, r.LeaseChurn.DeletesNotFollowed = false, 0
	text.Reset()
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "at least") || strings.Contains(text.String(), "PARTIAL") {
		t.Errorf("an exact churn count is marked partial:\n%s", text.String())
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

// countingWriter counts the Write calls it gets.
type countingWriter struct {
	writes int
	bytes  int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	c.bytes += len(p)
	return len(p), nil
}

// The text report and the page reach their writer in large pieces, not a write per table cell
// (a system call each on standard output).
func TestReportsWriteBuffered(t *testing.T) {
	r := &analyze.Report{}
	for i := range 2000 {
		name := fmt.Sprintf("ip-10-0-%d-%d.compute.internal", i/250, i%250)
		r.Leaks = append(r.Leaks, analyze.Leak{Namespace: "kube-node-lease", Name: name, Cause: analyze.CauseNodeMissing, Status: analyze.LeakLeaked,
			Created: analyze.Event{Action: "create", Code: 201, Actor: analyze.Actor{User: "system:node:" + name}}})
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, *analyze.Report) error
	}{{"text", WriteText}, {"html", WriteHTML}} {
		var c countingWriter
		if err := f.write(&c, r); err != nil {
			t.Fatal(err)
		}
		if max := c.bytes/(32<<10) + 2; c.writes > max {
			t.Errorf("%s: %d writes for %d bytes, want at most %d", f.name, c.writes, c.bytes, max)
		}
	}
}
