package doctor

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/testsupport/headings"
)

// The doctor's text report, with every section and one finding of every rule, has titles for
// people: no Go identifier, fmt error or dump in a section title or a rule line. The golden
// report is read too.
func TestHeadingsAreForPeople(t *testing.T) {
	sections := append(append([]findings.SectionSpec(nil), Sections...), sectionEC2, sectionBootstrap)
	names := map[string]bool{}
	for _, s := range sections {
		names[s.Name] = true
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
		for _, s := range sections { // the extraction sees every section title
			if !slices.ContainsFunc(hs, func(h string) bool { return strings.HasPrefix(h, strings.ToUpper(s.Title)) }) {
				t.Errorf("no heading for section %q among %q", s.Title, hs)
			}
		}
	}
	for _, name := range []string{"testdata/podnet.txt", "testdata/addons.txt"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		headings.Check(t, name, headings.Text(string(data)))
	}
}
