package explain

import (
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/reportpage"
)

// Headings of the page, in order (Gaps only when there are some).
const (
	HeadingPage     = "nodekeeper explain"
	HeadingTimeline = TitleTimeline
	HeadingFindings = TitleFindings
	HeadingFixes    = TitleFixes
	HeadingGaps     = TitleGaps
)

// sourceColors are the timeline's marks, one colour per source.
var sourceColors = map[string]string{
	SourceNode: "#1f77b4", SourceLease: "#2ca02c", SourceEvent: "#ff7f0e", SourcePod: "#8c564b", SourceIPAMD: "#d62728",
	SourceConfigz: "#7f7f7f", SourceAudit: "#9467bd", SourceCloudWatch: "#9467bd", SourceEC2: "#e377c2", SourceBundle: "#17becf",
}

type htmlView struct {
	S     *Story
	Chart chart
	Rows  []rowView
}

type rowView struct {
	Time, Source, What string
	Gap                bool
	Color              string
}

// chart draws every timed line as a mark on one time axis, one row per source.
type chart struct {
	Width, Height, Left, Top int
	Marks                    []mark
	Lanes                    []lane
	From, To                 string
}

type mark struct {
	X, Y  float64
	Color string
	Title string
}

type lane struct {
	Y    float64
	Name string
}

// WriteHTML writes the story as one self-contained page in the style of the other reports
// (internal/reportpage): the timeline drawn as marks on a time axis, then as a table, the
// findings with each one's own remediation, the fixes and the gaps. No script and nothing
// loaded from elsewhere; every text read from the cluster, AWS, a log or a bundle goes through
// html/template's contextual escaping.
func WriteHTML(w io.Writer, s *Story) error {
	v := htmlView{S: s}
	var first, last time.Time
	lanes := map[string]int{}
	var order []string
	for _, l := range s.Timeline {
		v.Rows = append(v.Rows, rowView{Time: TimeText(l.Time), Source: SourceText(l), What: l.What, Gap: l.Gap, Color: sourceColors[l.Source]})
		if l.Time.IsZero() {
			continue
		}
		if first.IsZero() || l.Time.Before(first) {
			first = l.Time
		}
		if l.Time.After(last) {
			last = l.Time
		}
		if _, ok := lanes[l.Source]; !ok {
			lanes[l.Source] = len(order)
			order = append(order, l.Source)
		}
	}
	c := chart{Width: 900, Left: 110, Top: 20}
	c.Height = c.Top*2 + 24*max(len(order), 1)
	span := last.Sub(first)
	for i, name := range order {
		c.Lanes = append(c.Lanes, lane{Y: float64(c.Top + 24*i + 12), Name: name})
	}
	for _, l := range s.Timeline {
		if l.Time.IsZero() {
			continue
		}
		x := float64(c.Left)
		if span > 0 {
			x += float64(l.Time.Sub(first)) / float64(span) * float64(c.Width-c.Left-20)
		}
		c.Marks = append(c.Marks, mark{X: x, Y: float64(c.Top + 24*lanes[l.Source] + 12), Color: sourceColors[l.Source],
			Title: TimeText(l.Time) + " " + SourceText(l) + ": " + l.What})
	}
	c.From, c.To = TimeText(first), TimeText(last)
	v.Chart = c
	return explainTmpl.Execute(w, v)
}

var explainTmpl = template.Must(template.New("explain").Funcs(template.FuncMap{
	"sev": func(s findings.Severity) string { return s.String() },
	"sevClass": func(s findings.Severity) string {
		switch s {
		case findings.Error:
			return "bad"
		case findings.Warning:
			return "warn"
		}
		return "muted"
	},
	"sub": func(a, b int) int { return a - b },
	"f1":  func(x float64) string { return fmt.Sprintf("%.1f", x) },
}).Parse(explainHTML))

const explainHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>nodekeeper explain: {{.S.Target.Node}}</title>
<style>
` + reportpage.CSS + `.lane{stroke:#eee} td.gap{color:#b00} code{font-size:12px}
</style></head><body>
<h1>nodekeeper explain</h1>
<div class="muted">{{.S.Target.Node}}{{if not .S.Target.NodeExists}} (no Node object){{end}} · given as {{.S.Target.As}} {{.S.Target.Given}}{{with .S.Target.InstanceID}} · instance {{.}}{{end}}{{with .S.Target.Lease}} · lease {{.}} ({{$.S.Target.LeaseClass}}){{end}} · {{.S.Generated.Format "2006-01-02T15:04:05Z07:00"}}</div>
<div class="cards">
<div class="card"><b>{{len .S.Timeline}}</b>timeline lines</div>
<div class="card{{if .S.Findings}} alert{{end}}"><b>{{len .S.Findings}}</b>findings</div>
<div class="card{{if .S.Gaps}} alert{{end}}"><b>{{len .S.Gaps}}</b>gaps</div>
<div class="card"><b>{{.S.Requests.Kubernetes}}</b>API requests</div>
</div>
<h2>Timeline</h2>
<svg class="timeline" width="{{.Chart.Width}}" height="{{.Chart.Height}}" role="img" aria-label="timeline">
{{range .Chart.Lanes}}<line class="lane" x1="{{$.Chart.Left}}" x2="{{sub $.Chart.Width 10}}" y1="{{f1 .Y}}" y2="{{f1 .Y}}"/><text x="4" y="{{f1 .Y}}" dy="4">{{.Name}}</text>
{{end}}{{range .Chart.Marks}}<circle class="mark" cx="{{f1 .X}}" cy="{{f1 .Y}}" r="5" fill="{{.Color}}"><title>{{.Title}}</title></circle>
{{end}}<text x="{{.Chart.Left}}" y="{{sub .Chart.Height 4}}">{{.Chart.From}}</text><text x="{{sub .Chart.Width 10}}" y="{{sub .Chart.Height 4}}" text-anchor="end">{{.Chart.To}}</text>
</svg>
<table class="timeline-table"><tr><th>time</th><th>source</th><th>what</th></tr>
{{range .Rows}}<tr><td>{{.Time}}</td><td>{{.Source}}</td><td{{if .Gap}} class="gap"{{end}}>{{if .Gap}}GAP {{end}}{{.What}}</td></tr>
{{end}}</table>
<h2>Findings</h2>
{{if not .S.Findings}}<p class="muted">none</p>{{else}}<table class="findings"><tr><th>code</th><th>severity</th><th>resource</th><th>finding</th><th>remediation</th></tr>
{{range .S.Findings}}<tr><td>{{.Code}}</td><td class="{{sevClass .Severity}}">{{sev .Severity}}</td><td>{{.Resource}}</td><td>{{.Message}}{{range .Evidence}}<br><span class="muted">{{.}}</span>{{end}}</td><td>{{.Remediation}}</td></tr>
{{end}}</table>{{end}}
<h2>Fix (printed, never run)</h2>
{{if not .S.Fixes}}<p class="muted">nothing to fix</p>{{else}}<ol class="fixes">{{range .S.Fixes}}<li><code>{{.}}</code></li>{{end}}</ol>{{end}}
{{if .S.Gaps}}<h2>Gaps</h2>
<ul class="gaps">{{range .S.Gaps}}<li>{{.Source}}: {{.Verb}} {{.Resource}} ({{.Reason}})</li>{{end}}</ul>{{end}}
</body></html>
`
