package render

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/test/chromium"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// Names as hostile as the cluster and AWS allow someone else to make them (a scenario file allows
// anything): each must stay text on the page.
const (
	hostileGroup  = `web<img src=x onerror=alert(1)>`
	hostileSubnet = `subnet-a"><script>alert(2)</script>`
)

// hostileResult is a plan of two groups where the subnet breaks first, image pulls second, with
// a what-if beside it.
func hostileResult(t testing.TB) *plan.Result {
	t.Helper()
	m5, err := eni.Lookup("m5.large")
	if err != nil {
		t.Fatal(err)
	}
	pl := []plan.Placement{{Zone: "us-east-1a", NodeSubnet: hostileSubnet}, {Zone: "us-east-1b", NodeSubnet: "subnet-b"}}
	in := plan.Input{
		Groups: []plan.Group{
			{Name: hostileGroup, Type: m5, Add: 100, PodsPerNode: 10, PullsPerNode: 5, Placements: pl},
			{Name: "batch", Type: m5, Add: 50, PodsPerNode: 20, Placements: pl},
		},
		Subnets: map[string]plan.Subnet{hostileSubnet: {ID: hostileSubnet, Zone: "us-east-1a", Free: 600},
			"subnet-b": {ID: "subnet-b", Zone: "us-east-1b", Free: 600}},
		ExistingNodes: 10, APF: &plan.APF{PriorityLevel: "node-high", Seats: 98, Source: "test"},
		Notes: []string{`ENIConfig "<b>x</b>" has no subnet`},
	}
	r, err := plan.Run(in, map[string]string{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Today.FirstToBreak != plan.LimitSubnet {
		t.Fatalf("the scenario's first limit is %s", r.Today.FirstToBreak)
	}
	return r
}

// wantHeadings are the page's headings in order, exactly: the page title, h1, h2, the tables'
// column heads and the charts' tooltips (SVG titles).
func wantHeadings(r *plan.Result) []string {
	chart := func(p *plan.Plan) []string {
		var out []string
		for _, l := range p.Limits {
			out = append(out, l.Title)
			if l.Status == plan.StatusBreaks {
				verb := "fails" // a delay "waits" (plan.KindDelay)
				if l.Kind == plan.KindDelay {
					verb = "waits"
				}
				b := verb + " at new node " + strconv.Itoa(l.BreaksAt)
				if l.Where != "" {
					b += " (" + l.Where + ")"
				}
				out = append(out, l.Title+" "+b)
			}
		}
		return out
	}
	out := []string{"nodekeeper plan: " + Verdict(r.Today), HeadingPage, HeadingVerdict, HeadingHeadroom}
	out = append(out, chart(r.Today)...)
	out = append(out, chart(r.WhatIf)...)
	out = append(out, HeadingLimits, "limit", "today", "with MINIMUM_IP_TARGET=8 WARM_IP_TARGET=2", "where", "detail", "fix",
		HeadingGroups, "group", "instance type", "add", "pods per node", "maxPods", "address capacity", "ENIs", "addresses held",
		"from node subnet", "from pod subnet", "EC2 calls", "pulls", "how",
		HeadingSubnets, "subnet", "zone", "CIDR", "free", "new nodes", "taken", "left", HeadingNotes)
	return out
}

// The page is self-contained: nothing in it can reach the network.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, seedResult(t, map[string]string{"ENABLE_PREFIX_DELEGATION": "true"})); err != nil {
		t.Fatal(err)
	}
	chromium.CheckSelfContained(t, b.String())
}

// The page's headings, as written, are exactly the expected ones (not substrings of them) and
// fit for people; hostile names are escaped.
func TestHTMLHeadings(t *testing.T) {
	r := hostileResult(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	got, err := headings.HTML(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := wantHeadings(r); !slices.Equal(got, want) {
		t.Errorf("headings\n got %q\nwant %q", got, want)
	}
	headings.Check(t, "plan page", got)
	for _, raw := range []string{hostileGroup, hostileSubnet, "<b>x</b>"} {
		if strings.Contains(b.String(), raw) {
			t.Errorf("page holds %q unescaped", raw)
		}
	}
}

// Headless Chromium loads the page offline with no console message, lays out one headroom line
// per limit and one mark per limit that breaks in each chart, keeps the hostile names as text
// (no element comes from them), shows exactly the expected headings, and draws a screenshot
// that is not blank.
func TestHTMLRendersInChromium(t *testing.T) {
	browser := chromium.Path(t)
	r := hostileResult(t)
	dir := t.TempDir()
	url := chromium.WritePage(t, dir, "plan.html", func(w io.Writer) error { return WriteHTML(w, r) })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dom, console := chromium.DumpDOM(ctx, t, browser, dir, url)
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var texts strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			key := n.Data
			for _, a := range n.Attr {
				if a.Key == "class" {
					key += "." + a.Val
				}
			}
			count[n.Data]++
			if key != n.Data {
				count[key]++
			}
		}
		if n.Type == html.TextNode {
			texts.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	lines, breaks := 0, 0
	for _, p := range []*plan.Plan{r.Today, r.WhatIf} {
		for _, l := range p.Limits {
			if len(l.Headroom) > 0 {
				lines++
			}
			if l.Status == plan.StatusBreaks {
				breaks++
			}
		}
	}
	if count["svg.chart"] != 2 || count["polyline.limit-line"] != lines || count["circle.break"] != breaks {
		t.Errorf("charts: %d svg, %d lines (want %d), %d break marks (want %d)", count["svg.chart"], count["polyline.limit-line"], lines, count["circle.break"], breaks)
	}
	// The page's own <b>: five cards (new nodes, today, the what-if, the first to break, the
	// wait) and the two verdicts' labels; none from the note's "<b>x</b>".
	if count["img"] != 0 || count["script"] != 0 || count["b"] != 7 {
		t.Errorf("elements from names: %d img, %d script, %d b", count["img"], count["script"], count["b"])
	}
	for _, raw := range []string{hostileGroup, hostileSubnet, "<b>x</b>"} {
		if !strings.Contains(texts.String(), raw) {
			t.Errorf("rendered text lacks %q", raw)
		}
	}
	got, err := headings.HTML(dom)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantHeadings(r); !slices.Equal(got, want) {
		t.Errorf("rendered headings\n got %q\nwant %q", got, want)
	}

	img := chromium.Screenshot(ctx, t, browser, dir, url, 1200, 1400)
	// The lines' colours are on the screenshot: the subnet's red and the EC2 orange.
	_, n := chromium.Palette(img, 1, chromium.RGB{0xd6, 0x27, 0x28}, chromium.RGB{0xff, 0x7f, 0x0e})
	seen := map[string]bool{"subnet red": n[0] > 0, "EC2 orange": n[1] > 0}
	if !seen["subnet red"] || !seen["EC2 orange"] {
		t.Errorf("screenshot lacks the chart's colours: %v", seen)
	}
}
