// Package headings finds the headings and section titles of a report, HTML or text, and tells
// when one carries a Go identifier or a formatting failure instead of words for people: a
// package-qualified name left by a rename (analyze.Zombie kubelets), a fmt error (%!d(string=x)),
// <nil>, a struct or map dump. Import it only from tests.
package headings

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// bad are the marks of a Go value or name printed where a title belongs.
var bad = []struct {
	re  *regexp.Regexp
	why string
}{
	// analyze.Foo, read.X, lease.ClassLeaked: a lower-case package name, a dot, an exported name.
	// Host names (ip-10-0-1-1.ec2.internal), versions and file names have no capital after the dot.
	{regexp.MustCompile(`(^|[^\w./:-])[a-z][a-z0-9_]*\.[A-Z][A-Za-z0-9_]*`), "a package-qualified Go identifier"},
	{regexp.MustCompile(`%!`), "a fmt error"},
	{regexp.MustCompile(`%[-+# 0]*[0-9]*(\.[0-9]+)?[vsdqxXtTfgep]\b`), "a fmt verb that was never filled"},
	{regexp.MustCompile(`<nil>`), "a nil printed with %v"},
	{regexp.MustCompile(`<no value>`), "a template field that does not exist"},
	{regexp.MustCompile(`&\{`), "a pointer to a struct printed with %v"},
	{regexp.MustCompile(`[{}]`), "a struct dump or a template action"},
	{regexp.MustCompile(`\bmap\[`), "a map printed with %v"},
	{regexp.MustCompile(`\[\][A-Za-z*]`), "a Go slice type"},
	{regexp.MustCompile(`\b0x[0-9a-f]{6,}\b`), "a pointer"},
	{regexp.MustCompile(`\bfunc\(`), "a Go func"},
}

// Problem tells why heading is not a heading for people, or returns "" when it is.
func Problem(heading string) string {
	for _, b := range bad {
		if loc := b.re.FindStringIndex(heading); loc != nil {
			return fmt.Sprintf("%s (%q)", b.why, heading[loc[0]:loc[1]])
		}
	}
	return ""
}

// Check fails t for every heading of what (a file or report name) that has a Problem, and for
// an empty list: a report has headings, and finding none means the extraction broke.
func Check(t testing.TB, what string, headings []string) {
	t.Helper()
	if len(headings) == 0 {
		t.Errorf("%s: no headings found", what)
	}
	for _, h := range headings {
		if p := Problem(h); p != "" {
			t.Errorf("%s: heading %q carries %s", what, h, p)
		}
	}
}

// CheckTextFiles checks the headings of each text report file, read as it is on disk (golden
// files are read, not only regenerated). No file at all fails t: a glob that matched nothing
// would otherwise check nothing and pass.
func CheckTextFiles(t testing.TB, names ...string) {
	t.Helper()
	if len(names) == 0 {
		t.Error("no text report files to check")
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Error(err)
			continue
		}
		Check(t, name, Text(string(data)))
	}
}

// CheckSections fails t for every section title of a findings text report (what) that no
// heading starts with, in capitals as findings.PrintText writes it: a title the extraction
// misses is a title Check never saw.
func CheckSections(t testing.TB, what string, headings []string, titles ...string) {
	t.Helper()
	for _, title := range titles {
		if !slices.ContainsFunc(headings, func(h string) bool { return strings.HasPrefix(h, strings.ToUpper(title)) }) {
			t.Errorf("%s: no heading for section %q among %q", what, title, headings)
		}
	}
}

// headingElems are the HTML elements whose text is a heading or a label of the page.
var headingElems = map[atom.Atom]bool{
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Caption: true, atom.Th: true, atom.Title: true, atom.Summary: true,
}

// HTML returns the text of every h1–h6, caption, th, title and summary element of page, in
// document order, whitespace collapsed. A title inside SVG (a tooltip) is a heading too.
func HTML(page []byte) ([]string, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (headingElems[n.DataAtom] || n.Data == "title") {
			out = append(out, collapse(text(n)))
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out, nil
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
		b.WriteString(" ")
	}
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// marks lead the rule lines of the doctor's and bundle's text report (findings.PrintText).
const marks = "✖▲●○✔"

// Text returns the title lines of a text report as nodekeeper's renderers write them:
//   - the first line (the report's title: "AUDIT LOG …", "nodekeeper doctor …");
//   - every line that follows an empty line (a section title: "ZOMBIE KUBELETS (1)",
//     "KUBELET  3 checked", "Summary: …");
//   - every table header: a line whose letters are all capitals ("NAMESPACE  NODE LEASE  CLASS");
//   - every rule line of a findings report ("  ✖ NK101 kubelet max pods above …").
//
// ANSI colours are removed first.
func Text(report string) []string {
	report = ansi.ReplaceAllString(report, "")
	var out []string
	prevEmpty := true
	for _, l := range strings.Split(strings.TrimRight(report, "\n"), "\n") {
		trim := strings.TrimSpace(l)
		switch {
		case trim == "":
			prevEmpty = true
			continue
		case prevEmpty, allCaps(trim), strings.ContainsAny(firstRune(trim), marks):
			out = append(out, trim)
		}
		prevEmpty = false
	}
	return out
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

// allCaps: at least two letters, none of them lower case.
func allCaps(s string) bool {
	letters := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			if unicode.IsLower(r) {
				return false
			}
			letters++
		}
	}
	return letters >= 2
}
