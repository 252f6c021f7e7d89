package doctor

import (
	"bytes"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// The doctor's text report, with every section and one finding of every rule, has titles for
// people: no Go identifier, fmt error or dump in a section title or a rule line. The golden
// report is read too.
func TestHeadingsAreForPeople(t *testing.T) {
	sections := append(append([]findings.SectionSpec(nil), Sections...), sectionEC2, sectionBootstrap)
	names, titles := map[string]bool{}, []string(nil)
	for _, s := range sections {
		names[s.Name] = true
		titles = append(titles, s.Title) // the extraction must see every section title
	}
	r := findings.NewReport("doctor", "https://127.0.0.1:6443", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), sections...)
	var rules int
	for _, rule := range catalog.Rules() {
		if names[rule.Section] {
			r.Add(rule.New("node/ip-10-0-1-1.ec2.internal", "a message"))
			rules++
		}
	}
	if rules < 10 {
		t.Fatalf("only %d doctor rules registered", rules)
	}
	for _, color := range []bool{false, true} {
		var b bytes.Buffer
		if err := findings.PrintText(&b, r, findings.PrintOptions{Color: color, Catalog: catalog}); err != nil {
			t.Fatal(err)
		}
		hs := headings.Text(b.String())
		headings.Check(t, "doctor text", hs)
		headings.CheckSections(t, "doctor text", hs, titles...)
	}
	headings.CheckTextFiles(t, "testdata/podnet.txt", "testdata/addons.txt")
}
