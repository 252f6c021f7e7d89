// Package findingstest holds the helpers the tests of the packages that produce findings share
// (rules, doctor, bundle). Imported by tests only.
package findingstest

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"sigs.k8s.io/yaml"
)

// Codes returns "CODE:severity" for each finding, sorted, so tables can state expectations tersely.
func Codes(fs []findings.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Code+":"+f.Severity.String())
	}
	sort.Strings(out)
	return out
}

// ReportCodes is Codes over every finding of a report.
func ReportCodes(r *findings.Report) []string { return Codes(r.Findings()) }

// FileListedOnce checks that every rule of a package's rules file (path, read here on its own,
// not through the package's parser) is in list, the package's Rules, exactly once, with the
// file's name for its code, and that list has no code twice.
func FileListedOnce(t testing.TB, path string, list []findings.Rule) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file []struct{ Code, Name string }
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(file) == 0 {
		t.Fatalf("%s lists no rule", path)
	}
	listed := map[string][]findings.Rule{}
	for _, r := range list {
		listed[r.Code] = append(listed[r.Code], r)
	}
	for code, rs := range listed {
		if len(rs) > 1 {
			t.Errorf("Rules lists %s %d times", code, len(rs))
		}
	}
	for _, f := range file {
		switch rs := listed[f.Code]; {
		case len(rs) == 0:
			t.Errorf("%s: %s %s is not in Rules", path, f.Code, f.Name)
		case rs[0].Name != f.Name:
			t.Errorf("%s: %s is %s, and %s in Rules", path, f.Code, f.Name, rs[0].Name)
		}
	}
}

// Version parses a VPC CNI version for a test table (the version a check is given, or nil for
// one it could not read); a bad one fails the test.
func Version(t testing.TB, s string) *eni.Version {
	t.Helper()
	v, err := eni.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

// Section is the report's section of that name, or nil when the report has none.
func Section(r *findings.Report, name string) *findings.Section {
	for _, s := range r.Sections() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// DocListsRules fails t for each rule whose table row, as row writes it, the Markdown page at
// path lacks, so that a command's documentation lists every rule it can report.
func DocListsRules(t testing.TB, path string, list []findings.Rule, row func(findings.Rule) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if want := row(r); !strings.Contains(string(data), want) {
			t.Errorf("%s lacks the row %q", path, want)
		}
	}
}
