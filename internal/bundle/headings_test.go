package bundle

import (
	"bytes"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// The bundle's text report, with every section and one finding of every rule it can show, has
// titles for people: no Go identifier, fmt error or dump in a section title or a rule line. The
// golden report is read too.
func TestHeadingsAreForPeople(t *testing.T) {
	names, titles := map[string]bool{}, []string(nil)
	for _, s := range Sections {
		names[s.Name] = true
		titles = append(titles, s.Title)
	}
	r := findings.NewReport("bundle", "eks_i-0123456789abcdef0.tar.gz", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Sections...)
	for _, rule := range catalog.Rules() {
		if names[rule.Section] {
			r.Add(rule.New("kubelet/kubelet.log", "a message"))
		}
	}
	var b bytes.Buffer
	if err := findings.PrintText(&b, r, findings.PrintOptions{Catalog: catalog}); err != nil {
		t.Fatal(err)
	}
	hs := headings.Text(b.String())
	headings.Check(t, "bundle text", hs)
	headings.CheckSections(t, "bundle text", hs, titles...)
	headings.CheckTextFiles(t, "testdata/seed002.txt")
}
