package audit

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/render"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// Every heading of the text and HTML reports is words for people: no Go identifier a rename left
// behind (analyze.Zombie kubelets), no fmt error, no <nil> or struct dump. The golden files are
// read as they are, and the HTML page is rendered for the scenario, seed 001 and an empty log.
func TestHeadingsAreForPeople(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	headings.CheckTextFiles(t, goldens...)

	scenario, _ := scenarioReport(t)
	seed, err := analyzeFiles(t, analyze.Options{}, "testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	empty, err := analyze.AnalyzeReader("empty.log", bytes.NewReader(nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    *analyze.Report
	}{{"scenario", scenario}, {"seed001", seed}, {"empty", empty}} {
		var text, page bytes.Buffer
		if err := render.WriteText(&text, tc.r); err != nil {
			t.Fatal(err)
		}
		headings.Check(t, tc.name+" text", headings.Text(text.String()))
		if err := render.WriteHTML(&page, tc.r); err != nil {
			t.Fatal(err)
		}
		hs, err := headings.HTML(page.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		headings.Check(t, tc.name+" HTML", hs)
		for _, want := range []string{"nodekeeper audit", "Timeline per node and lease", "Who deleted nodes", "Zombie kubelets",
			"Lease leaks", "Lease churn", "Heartbeats", "Throttling over time", "Top talkers", "Lease lifecycles", "Inputs"} {
			if !slices.Contains(hs, want) {
				t.Errorf("%s HTML: no heading %q among %q", tc.name, want, hs)
			}
		}
	}
}
