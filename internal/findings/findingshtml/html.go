// Package findingshtml writes a findings report (doctor --html) as one offline page in the
// reports' style. It is its own package so that the controller, which links findings for its
// check loop, links no page or template.
package findingshtml

import (
	"fmt"
	"html/template"
	"io"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/reportpage"
)

// HTMLHeadingSummary is the page's first section, before one section per report section.
const HeadingSummary = "Summary"

// Write writes the report (doctor --html) as one self-contained page in the style of the other
// HTML reports (internal/reportpage): summary cards, then each section with its score and one
// row per finding, each with its own remediation, so that a fix that differs per object (a
// command naming the instance, the node's max-pods value) is printed for that object. No script
// and nothing loaded from elsewhere; every text goes through html/template's contextual escaping.
func Write(w io.Writer, r *findings.Report) error {
	v := htmlReport{R: r, Sections: r.Sections(), Max: r.MaxSeverity().String()}
	for _, f := range r.Findings() {
		switch f.Severity {
		case findings.Error:
			v.Errors++
		case findings.Warning:
			v.Warnings++
		case findings.Skipped:
			v.Skipped++
		}
	}
	return reportTmpl.Execute(w, v)
}

type htmlReport struct {
	R                         *findings.Report
	Sections                  []*findings.Section
	Max                       string
	Errors, Warnings, Skipped int
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"sevClass": func(s findings.Severity) string {
		switch s {
		case findings.Error:
			return "bad"
		case findings.Warning:
			return "warn"
		case findings.OK:
			return "ok"
		}
		return "muted"
	},
	"score": func(s *findings.Section) string {
		if n, ok := s.Score(); ok {
			return fmt.Sprintf("%d%% of %d checked", n, s.Checked)
		}
		return "nothing checked"
	},
}).Parse(reportHTML))

const reportHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>nodekeeper {{.R.Tool}}: {{.R.Target}}</title>
<style>
` + reportpage.CSS + `td.code{white-space:nowrap} .evidence{color:#555;font-size:11px}
</style></head><body>
<h1>nodekeeper {{.R.Tool}}</h1>
<div class="muted">{{.R.Target}} · {{.R.Generated.Format "2006-01-02T15:04:05Z07:00"}}{{with .R.Partial}} · partial: {{.}}{{end}}</div>
<h2>Summary</h2>
<div class="cards">
<div class="card{{if .Errors}} alert{{end}}"><b>{{.Errors}}</b>errors</div>
<div class="card"><b>{{.Warnings}}</b>warnings</div>
<div class="card"><b>{{.Skipped}}</b>skipped</div>
<div class="card"><b>{{.Max}}</b>highest severity</div>
</div>
{{range .Sections}}<h2>{{.Title}}</h2>
<div class="muted">{{score .}}</div>
{{if .Findings}}<table class="findings"><tr><th>code</th><th>severity</th><th>resource</th><th>finding</th><th>remediation</th></tr>
{{range .Findings}}<tr><td class="code">{{.Code}}</td><td class="{{sevClass .Severity}}">{{.Severity}}</td><td>{{.Resource}}</td><td>{{.Message}}{{range .Evidence}}<br><span class="evidence">{{.}}</span>{{end}}</td><td>{{.Remediation}}</td></tr>
{{end}}</table>{{else}}<p class="ok">no findings</p>{{end}}
{{end}}</body></html>
`
