package render

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/reportpage"
)

// WriteHTML writes the report as one self-contained page: inline CSS and server-drawn SVG,
// no script and no external resource, so it opens offline and can be attached to a ticket.
func WriteHTML(w io.Writer, r *analyze.Report) error {
	v := htmlView{R: r, Lanes: buildLanes(r), Chart: buildChart(r)}
	// The template writes every piece on its own; buffered, the page is a few large writes.
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := pageTmpl.Execute(bw, v); err != nil {
		return err
	}
	return bw.Flush()
}

type htmlView struct {
	R     *analyze.Report
	Lanes laneSet
	Chart chartView
}

// laneSet is the per-node / per-lease timeline.
type laneSet struct {
	Width, Height int
	Left          int
	Lanes         []lane
	Ticks         []tick
	Hidden        int
}

type lane struct {
	Label   string
	Y       int
	Spans   []span
	Marks   []mark
	Summary string
}

type span struct {
	X, W  float64
	Class string
	Title string
}

type mark struct {
	X     float64
	Class string
	Shape string // "circle" or "diamond"
	Title string
}

type tick struct {
	X     float64
	Label string
}

const (
	laneWidth  = 1100
	laneLeft   = 380
	laneHeight = 26
	maxLanes   = 120
)

func buildLanes(r *analyze.Report) laneSet {
	ls := laneSet{Width: laneWidth, Left: laneLeft}
	if r.From.IsZero() {
		return ls
	}
	from, to := r.From, r.To
	if !to.After(from) {
		to = from.Add(time.Second)
	}
	span0 := float64(to.Sub(from))
	plot := float64(laneWidth - laneLeft - 20)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(from)) / span0
		return float64(laneLeft) + math.Max(0, math.Min(1, f))*plot
	}
	type entity struct {
		key   string
		label string
		l     *lane
		score int
	}
	ents := map[string]*entity{}
	get := func(key, label string, score int) *lane {
		e := ents[key]
		if e == nil {
			label = clip(label, 62)
			e = &entity{key: key, label: label, l: &lane{Label: label}}
			ents[key] = e
		}
		e.score += score
		return e.l
	}
	for _, d := range r.NodeDeletions {
		l := get("node/"+d.Node, "node "+d.Node, 100)
		l.Marks = append(l.Marks, mark{X: x(d.Event.Time), Class: "del", Shape: "diamond",
			Title: fmt.Sprintf("%s Node deleted by %s (%d)", fmtTime(d.Event.Time), d.Event.Actor.User, d.Event.Code)})
		if f := d.NodeRecreated; f != nil {
			l.Marks = append(l.Marks, mark{X: x(f.Time), Class: "create", Shape: "diamond",
				Title: fmt.Sprintf("%s %s (%s)", fmtTime(f.Time), f.How, f.Actor.User)})
		}
	}
	for _, z := range r.Zombies {
		l := get("node/"+z.Node, "node "+z.Node, 100)
		x0, x1 := x(z.FirstSeen), x(z.LastSeen)
		l.Spans = append(l.Spans, span{X: x0, W: math.Max(2, x1-x0), Class: "zombie",
			Title: fmt.Sprintf("zombie kubelet: %d requests %s → %s from %s %s", z.Requests, fmtTime(z.FirstSeen),
				fmtTime(z.LastSeen), strings.Join(z.SourceIPs, ","), strings.Join(z.Identities, ","))})
	}
	for _, h := range r.Heartbeats.Nodes {
		if h.Status != analyze.HeartbeatOverGrace && h.Status != analyze.HeartbeatNearGrace {
			continue
		}
		l := get("node/"+h.Node, "node "+h.Node, 100)
		x0, x1 := x(h.MaxGapFrom), x(h.MaxGapTo)
		l.Spans = append(l.Spans, span{X: x0, W: math.Max(2, x1-x0), Class: "hb-" + h.Status,
			Title: fmt.Sprintf("%s: no lease renewal for %s, %s → %s, %d requests answered 429", h.Status, fmtDur(h.MaxGap),
				fmtTime(h.MaxGapFrom), fmtTime(h.MaxGapTo), h.ThrottledInGap)})
	}
	for _, lk := range r.Leaks {
		l := get("lease/"+lk.Namespace+"/"+lk.Name, leaseLabel(lk.Namespace, lk.Name), 50)
		end := to
		if lk.StatusEvent != nil {
			end = lk.StatusEvent.Time
		}
		x0, x1 := x(lk.Created.Time), x(end)
		l.Spans = append(l.Spans, span{X: x0, W: math.Max(2, x1-x0), Class: "leak",
			Title: fmt.Sprintf("%s: %s by %s, %s", lk.Cause, fmtTime(lk.Created.Time), lk.Created.Actor.User, lk.Status)})
	}
	for _, lc := range r.Leases {
		if !interestingLease(lc, r.Filters) {
			continue
		}
		l := get("lease/"+lc.Namespace+"/"+lc.Name, leaseLabel(lc.Namespace, lc.Name), 1)
		for _, e := range lc.Events {
			class := "create"
			switch {
			case e.Code < 200 || e.Code >= 300:
				class = "fail"
			case e.Action == "delete":
				class = "del"
			case e.Action != "create":
				class = "upcreate"
			}
			l.Marks = append(l.Marks, mark{X: x(e.Time), Class: class, Shape: "circle",
				Title: fmt.Sprintf("%s %s %d by %s (%s)", fmtTime(e.Time), e.Action, e.Code, e.Actor.User, e.Where)})
		}
		l.Summary = fmt.Sprintf("%d creates, %d deletes, %d by update", lc.Creates, lc.Deletes, lc.UpdateCreates)
	}
	all := make([]*entity, 0, len(ents))
	for _, e := range ents {
		all = append(all, e)
	}
	// Nodes first, each followed by its lease; then the busiest leases.
	sort.Slice(all, func(i, j int) bool {
		ki, kj := laneSortKey(all[i].key), laneSortKey(all[j].key)
		if all[i].score/50 != all[j].score/50 {
			return all[i].score > all[j].score
		}
		return ki < kj
	})
	if len(all) > maxLanes {
		ls.Hidden = len(all) - maxLanes
		all = all[:maxLanes]
	}
	sort.SliceStable(all, func(i, j int) bool { return laneSortKey(all[i].key) < laneSortKey(all[j].key) })
	for i, e := range all {
		e.l.Y = 30 + i*laneHeight
		ls.Lanes = append(ls.Lanes, *e.l)
	}
	ls.Height = 40 + len(all)*laneHeight
	for i := 0; i <= 4; i++ {
		t := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / 4))
		ls.Ticks = append(ls.Ticks, tick{X: x(t), Label: t.UTC().Format("01-02 15:04:05")})
	}
	return ls
}

func leaseLabel(ns, name string) string {
	if ns == analyze.NodeLeaseNamespace {
		return clip("lease "+name, 62)
	}
	return clip("lease "+ns+"/"+name, 62)
}

// laneSortKey groups a node with its lease: "name\x00node" sorts right before "name\x01lease".
func laneSortKey(key string) string {
	if name, ok := strings.CutPrefix(key, "node/"); ok {
		return name + "\x00"
	}
	rest := strings.TrimPrefix(key, "lease/")
	if ns, name, ok := strings.Cut(rest, "/"); ok && ns == analyze.NodeLeaseNamespace {
		return name + "\x01"
	}
	return "\xff" + rest
}

type chartView struct {
	Width, Height int
	Left, Bottom  int
	Bars          []chartBar
	Line          string // SVG points of the requests line
	APFLine       string // SVG points of the mean APF queue wait, "" when nothing waited
	APFMax        string
	Legend        []legendItem
	Ticks         []tick
	YMax          int64
	ReqMax        int64
	Step          string
	Empty         bool
}

type chartBar struct {
	X, Y, W, H float64
	Color      string
	Title      string
}

type legendItem struct {
	Color, Label string
}

var palette = []string{"#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

func buildChart(r *analyze.Report) chartView {
	tl := r.Timeline
	c := chartView{Width: 1100, Height: 260, Left: 60, Bottom: 30, Step: fmtDur(tl.Step)}
	n := len(tl.Requests)
	if n == 0 {
		c.Empty = true
		return c
	}
	plotW := float64(c.Width - c.Left - 100)
	plotH := float64(c.Height - c.Bottom - 20)
	bw := plotW / float64(n)
	for _, v := range tl.Throttled {
		c.YMax = max(c.YMax, v)
	}
	for _, v := range tl.Requests {
		c.ReqMax = max(c.ReqMax, v)
	}
	ymax := float64(max(c.YMax, 1))
	for i := 0; i < n; i++ {
		x := float64(c.Left) + float64(i)*bw
		y := float64(c.Height - c.Bottom)
		rest := tl.Throttled[i]
		t0 := tl.Start.Add(time.Duration(i) * tl.Step)
		for k, us := range tl.ThrottledUsers {
			v := us.Throttled[i]
			if v == 0 {
				continue
			}
			rest -= v
			h := float64(v) / ymax * plotH
			y -= h
			c.Bars = append(c.Bars, chartBar{X: x, Y: y, W: math.Max(1, bw-1), H: h, Color: palette[k%len(palette)],
				Title: fmt.Sprintf("%s: %d × 429 for %s", fmtTime(t0), v, us.User)})
		}
		if rest > 0 {
			h := float64(rest) / ymax * plotH
			y -= h
			c.Bars = append(c.Bars, chartBar{X: x, Y: y, W: math.Max(1, bw-1), H: h, Color: palette[len(palette)-1],
				Title: fmt.Sprintf("%s: %d × 429 (other users)", fmtTime(t0), rest)})
		}
	}
	var pts []string
	rmax := float64(max(c.ReqMax, 1))
	for i, v := range tl.Requests {
		x := float64(c.Left) + (float64(i)+0.5)*bw
		y := float64(c.Height-c.Bottom) - float64(v)/rmax*plotH
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	c.Line = strings.Join(pts, " ")
	wmax := 0.0
	for _, w := range tl.APFWaitMS {
		wmax = math.Max(wmax, w)
	}
	if wmax > 0 {
		pts = pts[:0]
		for i, w := range tl.APFWaitMS {
			x := float64(c.Left) + (float64(i)+0.5)*bw
			y := float64(c.Height-c.Bottom) - w/wmax*plotH
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		c.APFLine = strings.Join(pts, " ")
		c.APFMax = fmtDur(time.Duration(wmax * float64(time.Millisecond)))
	}
	for k, us := range tl.ThrottledUsers {
		c.Legend = append(c.Legend, legendItem{Color: palette[k%len(palette)], Label: us.User})
	}
	for i := 0; i <= 4; i++ {
		idx := (n - 1) * i / 4
		c.Ticks = append(c.Ticks, tick{X: float64(c.Left) + (float64(idx)+0.5)*bw,
			Label: tl.Start.Add(time.Duration(idx) * tl.Step).UTC().Format("01-02 15:04:05")})
	}
	return c
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"t":     fmtTime,
	"dur":   fmtDur,
	"rate":  fmtRate,
	"join":  strings.Join,
	"add":   func(a, b int) int { return a + b },
	"add64": func(a, b int64) int64 { return a + b },
	"sub":   func(a, b int) int { return a - b },
	"owners": func(e analyze.Event) string {
		if !e.OwnersKnown {
			return "?"
		}
		if e.Owners == "" {
			return "-"
		}
		return e.Owners // html/template escapes it
	},
	"diamond": func(x float64, y int) string {
		cy := float64(y) + laneHeight/2 - 2
		return fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", x, cy-7, x+6, cy, x, cy+7, x-6, cy)
	},
	"mid": func(y int) int { return y + laneHeight/2 - 2 },
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>nodekeeper audit{{if not .R.From.IsZero}} {{t .R.From}} → {{t .R.To}}{{end}}</title>
<style>
` + reportpage.CSS + `.zombie{fill:#f5b041;opacity:.75} .leak{fill:#8e44ad;opacity:.35}
.hb-over-grace{fill:#c0392b;opacity:.5} .hb-near-grace{fill:#e67e22;opacity:.45}
.del{fill:#c0392b} .create{fill:#27ae60} .upcreate{fill:#e67e22} .fail{fill:#7f8c8d}
.grid{stroke:#eee} .axis{stroke:#999}
code{font-size:12px}
td.ident{max-width:190px;word-break:break-all} td.calls{min-width:170px}
</style></head><body>
<h1>nodekeeper audit</h1>
<div class="muted">{{if .R.From.IsZero}}no events{{else}}{{t .R.From}} → {{t .R.To}} ({{dur (.R.To.Sub .R.From)}}){{end}}
{{with .R.Filters}}{{if .Node}} · node={{.Node}}{{end}}{{if .Lease}} · lease={{.Lease}}{{end}}{{if .User}} · user={{.User}}{{end}}{{end}}</div>
<div class="cards">
<div class="card"><b>{{.R.Totals.Events}}</b>events</div>
<div class="card{{if .R.NodeDeletions}} alert{{end}}"><b>{{len .R.NodeDeletions}}</b>node deletions</div>
<div class="card{{if .R.Zombies}} alert{{end}}"><b>{{len .R.Zombies}}</b>zombie kubelets</div>
<div class="card{{if .R.Leaks}} alert{{end}}"><b>{{len .R.Leaks}}</b>lease leaks</div>
<div class="card{{if .R.LeaseChurn.Actors}} alert{{end}}"><b>{{len .R.LeaseChurn.Actors}}</b>lease churn actors</div>
<div class="card{{if add (.R.Heartbeats.OverGrace) (.R.Heartbeats.NearGrace)}} alert{{end}}"><b>{{add .R.Heartbeats.OverGrace .R.Heartbeats.NearGrace}}</b>nodes at or near NotReady</div>
<div class="card{{if .R.Throttling.Throttled}} alert{{end}}"><b>{{.R.Throttling.Throttled}}</b>429 responses</div>
<div class="card{{if .R.AccessDenied.Forbidden}} alert{{end}}"><b>{{add64 .R.AccessDenied.Forbidden .R.AccessDenied.Unauthorized}}</b>denied (401/403)</div>
<div class="card"><b>{{.R.Totals.Bad}}</b>unusable lines</div>
</div>
{{range .R.Errors}}<p class="bad">ERROR: {{.}}</p>{{end}}

<h2>Timeline per node and lease</h2>
{{if .Lanes.Lanes}}
<svg width="{{.Lanes.Width}}" height="{{.Lanes.Height}}" role="img" aria-label="timeline">
{{range .Lanes.Ticks}}<line class="grid" x1="{{.X}}" x2="{{.X}}" y1="20" y2="{{$.Lanes.Height}}"/><text x="{{.X}}" y="14" text-anchor="middle">{{.Label}}</text>{{end}}
{{range .Lanes.Lanes}}<g><text x="4" y="{{add .Y 15}}">{{.Label}}</text>
<line class="axis" x1="{{$.Lanes.Left}}" x2="{{sub $.Lanes.Width 20}}" y1="{{mid .Y}}" y2="{{mid .Y}}"/>
{{$y := .Y}}{{range .Spans}}<rect class="{{.Class}}" x="{{.X}}" y="{{add $y 4}}" width="{{.W}}" height="16"><title>{{.Title}}</title></rect>{{end}}
{{range .Marks}}{{if eq .Shape "diamond"}}<polygon class="{{.Class}}" points="{{diamond .X $y}}"><title>{{.Title}}</title></polygon>{{else}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{mid $y}}" r="5"><title>{{.Title}}</title></circle>{{end}}{{end}}
</g>{{end}}
</svg>
<div class="muted">◆ red: Node deleted · ◆ green: Node back · ● green: lease created · ● orange: lease created by update (201) · ● red: lease deleted · ● grey: failed · amber bar: zombie kubelet calling · purple bar: leaked lease · red bar: no lease renewal for the grace period (NotReady) · orange bar: within one renewal of it{{if .Lanes.Hidden}} · {{.Lanes.Hidden}} more not drawn{{end}}</div>
{{else}}<p class="muted">No node or lease lifecycle events.</p>{{end}}

<h2>Who deleted nodes</h2>
{{if .R.NodeDeletions}}<table><tr><th>time</th><th>node</th><th>deleted by</th><th>user agent</th><th>source IP</th><th>lease deleted</th><th>kubelet requests after</th><th>lease re-created</th><th>node back</th></tr>
{{range .R.NodeDeletions}}<tr><td>{{t .Event.Time}}</td><td>{{.Node}}</td><td>{{.Event.Actor.User}}</td><td>{{.Event.Actor.UserAgent}}</td><td>{{.Event.Actor.SourceIP}}</td>
<td>{{with .LeaseDeleted}}+{{dur .After}} by {{.Actor.User}}{{else}}<span class="muted">-</span>{{end}}</td>
<td class="n">{{.RequestsAfter}}{{with .LastRequest}} <span class="muted">last {{t .}}</span>{{end}}</td>
<td>{{with .LeaseRecreated}}<span class="bad">+{{dur .After}} {{.How}} by {{.Actor.User}}</span>{{else}}-{{end}}</td>
<td>{{with .NodeRecreated}}+{{dur .After}} {{.How}}{{else}}-{{end}}</td></tr>{{end}}</table>
{{else}}<p class="muted">No Node was deleted in the window.</p>{{end}}

<h2>Zombie kubelets</h2>
{{if .R.Zombies}}<table><tr><th>node</th><th>instance</th><th>source IPs</th><th>first seen</th><th>last seen</th><th>requests</th><th>per min</th><th>calls</th><th>node deleted by</th><th>status</th></tr>
{{range .R.Zombies}}<tr><td>{{.Node}}</td><td class="ident">{{join .Identities ", "}}</td><td>{{join .SourceIPs ", "}}</td><td>{{t .FirstSeen}}</td><td>{{t .LastSeen}}</td><td class="n">{{.Requests}}</td><td class="n">{{rate .PerMinute}}</td>
<td class="calls">{{range $i, $c := .Calls}}{{if lt $i 5}}{{$c.Verb}} {{$c.Resource}} {{$c.Code}} ×{{$c.Count}}<br>{{end}}{{end}}</td>
<td>{{with .Deletion}}{{.Actor.User}}{{else}}<span class="muted">before the log</span>{{end}}</td><td class="{{if eq .Status "running"}}bad{{else}}warn{{end}}">{{.Status}}{{with .Ended}} ({{.How}}){{end}}</td></tr>{{end}}</table>
{{else}}<p class="ok">No kubelet kept calling after its Node was deleted.</p>{{end}}

<h2>Lease leaks</h2>
{{if .R.Leaks}}<table><tr><th>lease</th><th>cause</th><th>created</th><th>by</th><th>how</th><th>after node deletion by</th><th>status</th></tr>
{{range .R.Leaks}}<tr><td>{{.Namespace}}/{{.Name}}</td><td>{{.Cause}}</td><td>{{t .Created.Time}}</td><td>{{.Created.Actor.User}}</td><td>{{.Created.Action}} {{.Created.Code}}</td>
<td>{{with .NodeDeletion}}{{.Actor.User}} at {{t .Time}}{{else}}-{{end}}</td><td class="{{if eq .Status "leaked"}}bad{{end}}">{{.Status}}{{with .StatusEvent}} (+{{dur .After}} {{.Actor.User}}){{end}}</td></tr>{{end}}</table>
{{else}}<p class="ok">No lease was created while its Node was gone or without an owner.</p>{{end}}

<h2>Lease churn</h2>
{{with .R.LeaseChurn}}<p>{{if .Partial}}At least {{end}}{{.Churns}} deletions of node leases were undone within {{dur .Window}} (created again), costing {{if .Partial}}at least {{end}}{{.ExtraWrites}} etcd writes; actors with more than {{.Threshold}} are named.</p>
{{if .Partial}}<p class="bad">Partial: {{.DeletesNotFollowed}} deletes of node leases past the lease table were not followed; their churn is not counted, so every count here is a lower bound.</p>{{end}}
{{if .Actors}}<table><tr><th>actor</th><th>user agent</th><th>source IP</th><th>churns</th><th>leases</th><th>extra etcd writes</th><th>re-created by its kubelet</th><th>first</th><th>last</th></tr>
{{range .Actors}}<tr><td class="bad">{{.User}}</td><td>{{.UserAgent}}</td><td>{{.SourceIP}}</td><td class="n">{{.Churns}}</td><td class="n">{{.Leases}}</td><td class="n">{{.ExtraWrites}}</td><td class="n">{{.RecreatedByKubelet}}</td><td>{{t .First}}</td><td>{{t .Last}}</td></tr>{{end}}</table>
{{else}}<p class="ok">No actor deleted node leases that came back more than {{.Threshold}} times.</p>{{end}}
{{if .OthersActors}}<div class="muted">{{.OthersActors}} more actors at or under the threshold: {{.OthersChurns}} churns</div>{{end}}
{{if .Untracked}}<div class="muted">{{.Untracked}} churns by actors not tracked</div>{{end}}{{end}}

<h2>Heartbeats</h2>
{{with .R.Heartbeats}}<p>{{.Kubelets}} kubelets renewed their lease {{.Renewals}} times; {{if .Intervals}}interval p50 ≤ {{dur .IntervalP50}}, p99 ≤ {{dur .IntervalP99}}, max {{dur .IntervalMax}}{{else}}no interval measured{{end}}; node-monitor-grace-period {{dur .GracePeriod}}, renew interval {{dur .RenewInterval}}.
{{.Throttled}} kubelet requests answered 429{{if .PriorityLevels}}, by priority level: {{range $i, $p := .PriorityLevels}}{{if $i}}, {{end}}{{$p.PriorityLevel}} (flow schema {{$p.FlowSchema}}) {{$p.Throttled}}{{end}} <span class="muted">({{.PriorityLevelSource}})</span>{{end}}.</p>
{{if .LogSilences}}<p class="muted">The log itself was silent for the grace period less one renew interval or more {{.LogSilences}} times: {{.Unjudged}} renewal intervals across those are not judged (a file not given, or the API server down).</p>{{end}}
{{if .Nodes}}<table><tr><th>node</th><th>status</th><th>longest gap</th><th>from</th><th>to</th><th>near-grace gaps</th><th>over-grace gaps</th><th>renewals</th><th>mean interval</th><th>429s</th><th>429s in gap</th><th>priority level</th><th>lease errors</th><th>APF wait max</th></tr>
{{range .Nodes}}<tr><td>{{.Node}}</td><td class="{{if eq .Status "over-grace"}}bad{{else}}warn{{end}}">{{.Status}}</td><td class="n">{{dur .MaxGap}}</td><td>{{t .MaxGapFrom}}</td><td>{{t .MaxGapTo}}{{if .MaxGapOpen}} <span class="muted">(end of log)</span>{{end}}</td>
<td class="n">{{.NearGraceGaps}}</td><td class="n">{{.OverGraceGaps}}</td><td class="n">{{.Renewals}}</td><td class="n">{{dur .MeanInterval}}</td><td class="n">{{.Throttled}}</td><td class="n">{{.ThrottledInGap}}</td>
<td>{{range $i, $p := .PriorityLevels}}{{if $i}}, {{end}}{{$p.PriorityLevel}} ({{$p.Throttled}}){{end}}</td><td class="n">{{.LeaseErrors}}</td><td class="n">{{dur .APFWaitMax}}</td></tr>{{end}}</table>
{{else}}<p class="ok">No kubelet came within one renewal of the node monitor grace period, and none was throttled.</p>{{end}}{{end}}

<h2>Throttling over time</h2>
{{if .Chart.Empty}}<p class="muted">No requests.</p>{{else}}
<svg width="{{.Chart.Width}}" height="{{.Chart.Height}}" role="img" aria-label="throttling chart">
<line class="axis" x1="{{.Chart.Left}}" x2="{{sub .Chart.Width 100}}" y1="{{sub .Chart.Height .Chart.Bottom}}" y2="{{sub .Chart.Height .Chart.Bottom}}"/>
<line class="axis" x1="{{.Chart.Left}}" x2="{{.Chart.Left}}" y1="20" y2="{{sub .Chart.Height .Chart.Bottom}}"/>
<text x="4" y="24">{{.Chart.YMax}} × 429</text><text x="4" y="{{sub .Chart.Height .Chart.Bottom}}">0</text>
<text x="{{sub .Chart.Width 94}}" y="24" fill="#1f77b4">{{.Chart.ReqMax}} req</text>
{{range .Chart.Bars}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="{{.Color}}"><title>{{.Title}}</title></rect>{{end}}
<polyline points="{{.Chart.Line}}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>
{{if .Chart.APFLine}}<polyline points="{{.Chart.APFLine}}" fill="none" stroke="#2ca02c" stroke-width="1.2" stroke-dasharray="4 3"/>
<text x="{{sub .Chart.Width 94}}" y="38" fill="#2ca02c">{{.Chart.APFMax}} wait</text>{{end}}
{{range .Chart.Ticks}}<text x="{{.X}}" y="{{sub $.Chart.Height 10}}" text-anchor="middle">{{.Label}}</text>{{end}}
</svg>
<div class="muted">bars: 429 responses per {{.Chart.Step}}{{range .Chart.Legend}} · <span style="color:{{.Color}}">■</span> {{.Label}}{{end}} · blue line: all requests{{if .Chart.APFLine}} · green dashes: mean APF queue wait of requests that queued{{end}}</div>{{end}}
{{if .R.Throttling.ByKey}}<table><tr><th>user</th><th>user agent</th><th>verb</th><th>resource</th><th>429s</th><th>requests</th><th>APF queued</th><th>APF wait max</th></tr>
{{range .R.Throttling.ByKey}}<tr><td>{{.User}}</td><td>{{.UserAgent}}</td><td>{{.Verb}}</td><td>{{.Resource}}</td><td class="n">{{.Throttled}}</td><td class="n">{{.Requests}}</td><td class="n">{{.APFWaited}}</td><td class="n">{{dur .APFWaitMax}}</td></tr>{{end}}</table>{{end}}

<h2>Access denied <span class="muted">(403: {{.R.AccessDenied.Forbidden}}, 401: {{.R.AccessDenied.Unauthorized}})</span></h2>
{{with .R.AccessDenied}}{{if .Rows}}<table><tr><th>code</th><th>user</th><th>groups</th><th>verb</th><th>resource</th><th>object</th><th>count</th><th>first</th><th>last</th><th>user agent</th><th>source IP</th></tr>
{{range .Rows}}<tr><td>{{.Code}}</td><td>{{if .User}}{{.User}}{{else}}<span class="muted">unauthenticated</span>{{end}}{{with .ImpersonatedBy}} <span class="muted">impersonated by {{.}}</span>{{end}}</td><td>{{.Groups}}</td><td>{{.Verb}}</td><td>{{.Resource}}</td><td>{{if .Namespace}}{{.Namespace}}/{{end}}{{.Name}}</td><td class="n">{{.Count}}</td><td>{{t .First}}</td><td>{{t .Last}}</td><td>{{.UserAgent}}</td><td>{{.SourceIP}}</td></tr>{{end}}</table>
{{if lt (len .Rows) .Distinct}}<div class="muted">{{len .Rows}} of {{.Distinct}} pairs shown (--top){{if .Untracked}}; {{.Untracked}} denials of pairs not tracked{{end}}</div>{{end}}
{{else}}<p class="ok">No request was denied.</p>{{end}}{{end}}

<h2>Top talkers</h2>
<table><tr><th>user</th><th>user agent</th><th>verb</th><th>resource</th><th>requests</th><th>429s</th><th>5xx</th><th>latency total</th><th>p99 ≤</th><th>max</th></tr>
{{range .R.TopByRequests}}<tr><td>{{.User}}</td><td>{{.UserAgent}}</td><td>{{.Verb}}</td><td>{{.Resource}}</td><td class="n">{{.Requests}}</td><td class="n">{{.Throttled}}</td><td class="n">{{.ServerErrors}}</td><td class="n">{{dur .LatencyTotal}}</td><td class="n">{{dur .LatencyP99}}</td><td class="n">{{dur .LatencyMax}}</td></tr>{{end}}</table>
<h2>Top talkers by latency <span class="muted">(watches excluded)</span></h2>
<table><tr><th>user</th><th>user agent</th><th>verb</th><th>resource</th><th>requests</th><th>latency total</th><th>p99 ≤</th><th>max</th></tr>
{{range .R.TopByLatency}}<tr><td>{{.User}}</td><td>{{.UserAgent}}</td><td>{{.Verb}}</td><td>{{.Resource}}</td><td class="n">{{.Requests}}</td><td class="n">{{dur .LatencyTotal}}</td><td class="n">{{dur .LatencyP99}}</td><td class="n">{{dur .LatencyMax}}</td></tr>{{end}}</table>

<h2>Lease lifecycles</h2>
{{range .R.Leases}}<h3 style="font-size:13px;margin:12px 0 2px">{{.Namespace}}/{{.Name}} <span class="muted">{{.Creates}} creates, {{.Deletes}} deletes, {{.UpdateCreates}} by update{{if .Omitted}}, {{.Omitted}} events not listed{{end}}</span></h3>
<table><tr><th>time</th><th>action</th><th>code</th><th>user</th><th>user agent</th><th>source IP</th><th>owners</th><th>where</th></tr>
{{range .Events}}<tr><td>{{t .Time}}</td><td>{{.Action}}</td><td>{{.Code}}</td><td>{{.Actor.User}}</td><td>{{.Actor.UserAgent}}</td><td>{{.Actor.SourceIP}}</td><td>{{owners .}}</td><td><code>{{.Where}}</code></td></tr>{{end}}</table>
{{else}}<p class="muted">No lease was created or deleted in the window.</p>{{end}}

<h2>Inputs</h2>
<table><tr><th>input</th><th>format</th><th>lines / records</th><th>events</th><th>skipped stages</th><th>unusable</th><th>error</th></tr>
{{range .R.Inputs}}<tr><td>{{.Name}}</td><td>{{.Format}}{{if .Gzip}}, gzip{{end}}</td><td class="n">{{.Lines}}</td><td class="n">{{.Events}}</td><td class="n">{{.SkipStage}}</td>
<td>{{range .Bad}}{{.Count}} {{.Kind}} ({{range $i, $e := .Examples}}{{if $i}}, {{end}}{{if $e.Line}}line {{$e.Line}}{{else}}record {{$e.Record}}{{end}}{{end}})<br>{{end}}</td><td class="bad">{{.Error}}</td></tr>{{end}}</table>
<p class="muted">Generated by nodekeeper audit. Times are UTC (requestReceivedTimestamp).</p>
</body></html>
`
