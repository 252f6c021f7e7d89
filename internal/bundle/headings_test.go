package bundle

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

// The bundle's text report, with every section and one finding of every rule it can show, has
// titles for people: no Go identifier, fmt error or dump in a section title or a rule line. The
// golden report is read too.
func TestHeadingsAreForPeople(t *testing.T) {
	names := map[string]bool{}
	for _, s := range Sections {
		names[s.Name] = true
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
	for _, s := range Sections {
		if !slices.ContainsFunc(hs, func(h string) bool { return strings.HasPrefix(h, strings.ToUpper(s.Title)) }) {
			t.Errorf("no heading for section %q among %q", s.Title, hs)
		}
	}
	data, err := os.ReadFile("testdata/seed002.txt")
	if err != nil {
		t.Fatal(err)
	}
	headings.Check(t, "testdata/seed002.txt", headings.Text(string(data)))
}
