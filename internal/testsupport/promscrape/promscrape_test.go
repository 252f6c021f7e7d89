package promscrape

import (
	"fmt"
	"strings"
	"testing"
)

// TestParse: every kind of metric becomes the series Prometheus stores, label values unescaped;
// a malformed exposition is an error.
func TestParse(t *testing.T) {
	const text = `# HELP nodekeeper_lease_deletions_total Deletes.
# TYPE nodekeeper_lease_deletions_total counter
nodekeeper_lease_deletions_total{result="deleted"} 3
nodekeeper_lease_deletions_total{result="precondition_failed"} 0
# TYPE nodekeeper_is_leader gauge
nodekeeper_is_leader 1
# TYPE nodekeeper_errors_total counter
nodekeeper_errors_total{reason="a \"quoted\"\nline"} 2
# TYPE nodekeeper_sync_seconds histogram
nodekeeper_sync_seconds_bucket{le="0.5"} 1
nodekeeper_sync_seconds_bucket{le="+Inf"} 2
nodekeeper_sync_seconds_sum 1.25
nodekeeper_sync_seconds_count 2
`
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, fmt.Sprintf("%s %g", s.Series(), s.Value))
	}
	want := []string{
		`nodekeeper_errors_total{reason="a \"quoted\"\nline"} 2`,
		`nodekeeper_is_leader 1`,
		`nodekeeper_lease_deletions_total{result="deleted"} 3`,
		`nodekeeper_lease_deletions_total{result="precondition_failed"} 0`,
		`nodekeeper_sync_seconds_bucket{le="+Inf"} 2`,
		`nodekeeper_sync_seconds_bucket{le="0.5"} 1`,
		`nodekeeper_sync_seconds_count 2`,
		`nodekeeper_sync_seconds_sum 1.25`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		name  string
		pairs []string
		want  float64
	}{
		{"nodekeeper_lease_deletions_total", nil, 3},
		{"nodekeeper_lease_deletions_total", []string{"result", "deleted"}, 3},
		{"nodekeeper_lease_deletions_total", []string{"result", "failed"}, 0},
		{"nodekeeper_is_leader", nil, 1},
	} {
		if v := Sum(got, tc.name, tc.pairs...); v != tc.want {
			t.Errorf("Sum(%s, %v) = %g, want %g", tc.name, tc.pairs, v, tc.want)
		}
	}
	for _, bad := range []string{"metric{le=\"1\" 1\n", "metric one\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
