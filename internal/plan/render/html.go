package render

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/reportpage"
)

// Headings of the page, in order (the what-if's chart and the subnets only when there are some).
const (
	HeadingPage     = "nodekeeper plan"
	HeadingVerdict  = "Verdict"
	HeadingHeadroom = "Headroom against nodes added"
	HeadingLimits   = "Limits"
	HeadingGroups   = "Node groups"
	HeadingSubnets  = "Subnets"
	HeadingNotes    = "Notes"
)

// WriteHTML writes the plan as one self-contained page in the style of `audit --html`: inline
// CSS and server-drawn SVG, no script and no external resource. Every name read from the cluster,
// AWS or a scenario goes through html/template's contextual escaping.
func WriteHTML(w io.Writer, r *plan.Result) error {
	v := pageView{R: r, Today: newPlanView("today", r.Today)}
	if r.WhatIf != nil {
		wi := newPlanView("with "+changesText(r.Changes), r.WhatIf)
		v.WhatIf = &wi
	}
	return planTmpl.Execute(w, v)
}

type pageView struct {
	R      *plan.Result
	Today  planView
	WhatIf *planView
}

type planView struct {
	Label   string
	P       *plan.Plan
	Verdict string
	// Delays are DelayLines: each delay with the seconds it adds.
	Delays []string
	First  *plan.Limit
	Chart  chart
}

// chart draws each limit's headroom (1 untouched, 0 reached) against the nodes added.
type chart struct {
	Width, Height, Left, Right, Top, Bottom int
	ZeroY, OneY                             float64
	Lines                                   []chartLine
	Ticks                                   []chartTick
	Add                                     int
}

type chartLine struct {
	ID, Title, Color string
	Points           string
	// Break marks the first node over the limit, when within the plan.
	Break  bool
	BX, BY float64
	BTitle string
}

type chartTick struct {
	X     float64
	Label string
}

// limitColors are the lines' colours, one per limit.
var limitColors = map[string]string{
	plan.LimitSubnet: "#d62728",
	plan.LimitPods:   "#1f77b4",
	plan.LimitEC2:    "#ff7f0e",
	plan.LimitPulls:  "#9467bd",
	plan.LimitAPF:    "#2ca02c",
}

func newPlanView(label string, p *plan.Plan) planView {
	v := planView{Label: label, P: p, Verdict: Verdict(p), Delays: DelayLines(p), First: p.Limit(p.FirstToBreak)}
	c := chart{Width: 900, Height: 300, Left: 60, Right: 200, Top: 20, Bottom: 40, Add: p.Add}
	plotW := float64(c.Width - c.Left - c.Right)
	plotH := float64(c.Height - c.Top - c.Bottom)
	// The y axis runs from -1 (over the limit by its own size) up to 1; lower values are drawn at -1.
	y := func(h float64) float64 {
		h = math.Max(-1, math.Min(1, h))
		return float64(c.Top) + (1-h)/2*plotH
	}
	x := func(n int) float64 { return float64(c.Left) + float64(n)/float64(max(p.Add, 1))*plotW }
	c.ZeroY, c.OneY = y(0), y(1)
	for _, l := range p.Limits {
		if len(l.Headroom) == 0 {
			continue
		}
		var pts []string
		for _, pt := range l.Headroom {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt.Nodes), y(pt.Headroom)))
		}
		cl := chartLine{ID: l.ID, Title: l.Title, Color: limitColors[l.ID], Points: strings.Join(pts, " ")}
		if l.Status == plan.StatusBreaks {
			cl.Break, cl.BX, cl.BY = true, x(l.BreaksAt), c.ZeroY
			verb := "fails"
			if l.Kind == plan.KindDelay {
				verb = "waits"
			}
			cl.BTitle = fmt.Sprintf("%s %s at new node %d", l.Title, verb, l.BreaksAt)
			if l.Where != "" {
				cl.BTitle += " (" + l.Where + ")"
			}
		}
		c.Lines = append(c.Lines, cl)
	}
	for i := 0; i <= 4; i++ {
		n := p.Add * i / 4
		c.Ticks = append(c.Ticks, chartTick{X: x(n), Label: fmt.Sprint(n)})
	}
	v.Chart = c
	return v
}

var planTmpl = template.Must(template.New("plan").Funcs(template.FuncMap{
	"fit":     fitText,
	"sub":     func(a, b int) int { return a - b },
	"add":     func(a, b int) int { return a + b },
	"moves":   func(f plan.Fix) string { return strings.TrimSpace(movesText(&f)) },
	"seconds": secondsText,
	"legendY": func(i int) int { return 30 + 18*i },
	"whatIf": func(r *plan.Result, id string) *plan.Limit {
		if r.WhatIf == nil {
			return nil
		}
		return r.WhatIf.Limit(id)
	},
}).Parse(planHTML))

const planHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>nodekeeper plan: {{.Today.Verdict}}</title>
<style>
` + reportpage.CSS + `.grid{stroke:#eee} .axis{stroke:#999} .reached{stroke:#b00;stroke-dasharray:4 3}
code{font-size:12px}
</style></head><body>
<h1>nodekeeper plan</h1>
<div class="muted">{{range $i, $g := .Today.P.Groups}}{{if $i}}, {{end}}{{$g.Add}} × {{$g.InstanceType}} to {{$g.Name}}{{end}} · aws-node: {{.Today.P.Mode}}</div>
<div class="cards">
<div class="card"><b>{{.Today.P.Add}}</b>new nodes</div>
<div class="card{{if not .Today.P.Fits}} alert{{end}}"><b>{{if .Today.P.Fits}}fits{{else}}does not fit{{end}}</b>today</div>
{{with .WhatIf}}<div class="card{{if not .P.Fits}} alert{{end}}"><b>{{if .P.Fits}}fits{{else}}does not fit{{end}}</b>{{.Label}}</div>{{end}}
{{with .Today.First}}<div class="card alert"><b>node {{.BreaksAt}}</b>{{.Title}} {{if eq .Kind "delay"}}waits first{{else}}fails first{{end}}</div>{{end}}
<div class="card"><b>{{seconds .Today.P.AddressWaitSeconds}}</b>until every address (EC2 throttling)</div>
</div>

<h2>Verdict</h2>
{{template "verdict" .Today}}{{with .WhatIf}}{{template "verdict" .}}{{end}}

<h2>Headroom against nodes added</h2>
{{template "chart" .Today}}{{with .WhatIf}}{{template "chart" .}}{{end}}

<h2>Limits</h2>
<table><tr><th>limit</th><th>today</th>{{if .R.WhatIf}}<th>{{.WhatIf.Label}}</th>{{end}}<th>where</th><th>detail</th><th>fix</th></tr>
{{range .Today.P.Limits}}<tr><td>{{.Title}}</td><td class="{{if eq .Status "breaks"}}bad{{else if eq .Status "fits"}}ok{{else}}muted{{end}}">{{fit .}}</td>
{{if $.R.WhatIf}}{{$w := whatIf $.R .ID}}<td class="{{if eq $w.Status "breaks"}}bad{{else if eq $w.Status "fits"}}ok{{else}}muted{{end}}">{{fit $w}}</td>{{end}}
<td>{{.Where}}</td><td>{{.Detail}}{{range .Notes}}<br><span class="muted">{{.}}</span>{{end}}</td><td>{{with .Fix}}{{.Text}} <span class="muted">{{moves .}}</span>{{end}}</td></tr>{{end}}</table>

<h2>Node groups</h2>
<table><tr><th>group</th><th>instance type</th><th>add</th><th>pods per node</th><th>maxPods</th><th>address capacity</th><th>ENIs</th><th>addresses held</th><th>from node subnet</th><th>from pod subnet</th><th>EC2 calls</th><th>pulls</th><th>how</th></tr>
{{range .Today.P.Groups}}<tr><td>{{.Name}}</td><td>{{.InstanceType}}</td><td class="n">{{.Add}}</td><td class="n">{{.PodsPerNode}}</td><td class="n">{{.MaxPods}}</td><td class="n">{{.AddressCapacity}}</td><td class="n">{{.Holding.ENIs}}</td><td class="n">{{.Holding.Addresses}}</td><td class="n">{{.Holding.NodeSubnet}}</td><td class="n">{{.Holding.PodSubnet}}</td><td class="n">{{.Holding.EC2Calls}}</td><td class="n">{{.PullsPerNode}}</td>
<td>{{.Holding.Why}}; maxPods from {{.MaxPodsSource}}; pull limits from {{.Kubelet.Source}}</td></tr>{{end}}</table>
{{if .Today.P.Subnets}}
<h2>Subnets</h2>
<table><tr><th>subnet</th><th>zone</th><th>CIDR</th><th>free</th><th>new nodes</th><th>taken</th><th>left</th></tr>
{{range .Today.P.Subnets}}<tr><td>{{.ID}}</td><td>{{.Zone}}</td><td>{{.CIDR}}</td><td class="n">{{.Free}}</td><td class="n">{{.Nodes}}</td><td class="n">{{.Taken}}</td><td class="n{{if lt .Left 0}} bad{{end}}">{{.Left}}</td></tr>{{end}}</table>{{end}}
{{if .R.Notes}}
<h2>Notes</h2>
<ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p class="muted">Generated by nodekeeper plan. EC2 token buckets: {{.Today.P.EC2.Source}}.</p>
</body></html>
{{define "verdict"}}<p class="{{if .P.Fits}}ok{{else}}bad{{end}}"><b>{{.Label}}:</b> {{.Verdict}}</p>
{{range .Delays}}<p class="delay">{{.}}</p>{{end}}
{{with .First}}<p>{{.Detail}}</p>{{with .Fix}}<p>fix: {{.Text}} <span class="muted">{{moves .}}</span></p>{{end}}{{range .Alternatives}}<p class="muted">or: {{.Text}} {{moves .}}</p>{{end}}{{end}}{{end}}
{{define "chart"}}<svg class="chart" width="{{.Chart.Width}}" height="{{.Chart.Height}}" role="img" aria-label="headroom {{.Label}}">
<text x="{{.Chart.Left}}" y="12">{{.Label}}</text>
<line class="axis" x1="{{.Chart.Left}}" x2="{{.Chart.Left}}" y1="{{.Chart.Top}}" y2="{{sub .Chart.Height .Chart.Bottom}}"/>
<line class="axis" x1="{{.Chart.Left}}" x2="{{sub .Chart.Width .Chart.Right}}" y1="{{sub .Chart.Height .Chart.Bottom}}" y2="{{sub .Chart.Height .Chart.Bottom}}"/>
<line class="grid" x1="{{.Chart.Left}}" x2="{{sub .Chart.Width .Chart.Right}}" y1="{{.Chart.OneY}}" y2="{{.Chart.OneY}}"/>
<line class="reached" x1="{{.Chart.Left}}" x2="{{sub .Chart.Width .Chart.Right}}" y1="{{.Chart.ZeroY}}" y2="{{.Chart.ZeroY}}"/>
<text x="4" y="{{.Chart.OneY}}">100%</text><text x="4" y="{{.Chart.ZeroY}}">reached</text>
{{range .Chart.Ticks}}<text x="{{.X}}" y="{{sub $.Chart.Height 22}}" text-anchor="middle">{{.Label}}</text>{{end}}
<text x="{{.Chart.Left}}" y="{{sub .Chart.Height 6}}">new nodes</text>
{{range $i, $l := .Chart.Lines}}<polyline class="limit-line" data-limit="{{$l.ID}}" points="{{$l.Points}}" fill="none" stroke="{{$l.Color}}" stroke-width="2"><title>{{$l.Title}}</title></polyline>
{{if $l.Break}}<circle class="break" data-limit="{{$l.ID}}" cx="{{$l.BX}}" cy="{{$l.BY}}" r="5" fill="{{$l.Color}}"><title>{{$l.BTitle}}</title></circle>{{end}}
<rect x="{{add (sub $.Chart.Width $.Chart.Right) 12}}" y="{{sub (legendY $i) 9}}" width="10" height="10" fill="{{$l.Color}}"/><text x="{{add (sub $.Chart.Width $.Chart.Right) 28}}" y="{{legendY $i}}">{{$l.Title}}</text>
{{end}}</svg>
{{end}}`
