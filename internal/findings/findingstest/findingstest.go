// Package findingstest holds the helpers the tests of the packages that produce findings share
// (rules, doctor, bundle). Imported by tests only.
package findingstest

import (
	"sort"

	"github.com/nodekeeper/nodekeeper/internal/findings"
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
