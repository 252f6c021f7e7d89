package explain

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/chromium"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

// Texts as hostile as a cluster, a log or a bundle lets someone else write them: each must stay
// text on the page.
const (
	hostileReason = `<img src=x onerror=alert(1)>`
	hostileUser   = `mallory"><script>alert(2)</script>`
)

// hostileStory is a zombie's story with hostile texts in an Event, an audit actor and a gap.
func hostileStory() *Story {
	t0 := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	f := doctor.RuleInstanceWithoutNode.New("instance/i-0123456789abcdef0", "m5.large launched %s, running 2h0m0s with no Node", t0.Format(time.RFC3339))
	f.Remediation = "once sure nothing runs on it, remove it with: aws autoscaling terminate-instance-in-auto-scaling-group --instance-id i-0123456789abcdef0 --should-decrement-desired-capacity (nodekeeper never runs it)"
	return &Story{
		Generated: t0.Add(2 * time.Hour),
		Target:    Target{Given: "i-0123456789abcdef0", As: AsInstance, Node: "ip-10-0-1-2.ec2.internal", InstanceID: "i-0123456789abcdef0", Lease: "kube-node-lease/ip-10-0-1-2.ec2.internal", LeaseClass: "zombie"},
		Timeline: []Line{
			{Time: t0, Source: SourceEC2, What: "instance i-0123456789abcdef0 (m5.large) launched"},
			{Time: t0.Add(time.Minute), Source: SourceAudit, Where: "audit.log:12", What: "Node ip-10-0-1-2.ec2.internal created by system:node:ip-10-0-1-2.ec2.internal"},
			{Time: t0.Add(time.Hour), Source: SourceAudit, Where: "audit.log:9001", What: "Node ip-10-0-1-2.ec2.internal deleted by " + hostileUser},
			{Time: t0.Add(time.Hour + time.Minute), Source: SourceEvent, What: "Warning " + hostileReason + " on node ip-10-0-1-2.ec2.internal"},
			{Time: t0.Add(2 * time.Hour), Source: SourceLease, What: "lease renewed 1h0m0s after the Node's deletion: its kubelet still runs"},
			{Source: SourceEvent, What: "not read: list events (forbidden)", Gap: true},
		},
		Gaps:     []Gap{{Source: SourceEvent, Verb: "list", Resource: "events", Reason: "forbidden " + hostileReason}},
		Findings: []findings.Finding{f},
		Fixes:    []string{f.Remediation},
		Requests: Requests{Kubernetes: 6, AWS: 3},
	}
}

// wantHeadings are the page's headings in order, exactly: the title, h1, h2, the tables' column
// heads and the marks' tooltips (SVG titles), one per timed line.
func wantHeadings(s *Story) []string {
	out := []string{"nodekeeper explain: " + s.Target.Node, HeadingPage, HeadingTimeline}
	for _, l := range s.Timeline {
		if !l.Time.IsZero() {
			out = append(out, TimeText(l.Time)+" "+SourceText(l)+": "+l.What)
		}
	}
	out = append(out, "time", "source", "what", HeadingFindings, "code", "severity", "resource", "finding", "remediation", HeadingFixes, HeadingGaps)
	for i := range out {
		out[i] = strings.Join(strings.Fields(out[i]), " ")
	}
	return out
}

// The page's own markup reaches nothing (the check reads the text too, so it runs on a story
// without the hostile texts).
func TestHTMLSelfContained(t *testing.T) {
	s := hostileStory()
	s.Timeline = s.Timeline[:2]
	s.Gaps = nil
	var b bytes.Buffer
	if err := WriteHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	chromium.CheckSelfContained(t, b.String())
}

// The page's headings, as written, are exactly the expected ones and fit for people; hostile
// texts are escaped.
func TestHTMLHeadings(t *testing.T) {
	s := hostileStory()
	var b bytes.Buffer
	if err := WriteHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	got, err := headings.HTML(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := wantHeadings(s); !slices.Equal(got, want) {
		t.Errorf("headings\n got %q\nwant %q", got, want)
	}
	headings.Check(t, "explain page", got)
	for _, raw := range []string{hostileReason, hostileUser} {
		if strings.Contains(b.String(), raw) {
			t.Errorf("page holds %q unescaped", raw)
		}
	}
}

// Headless Chromium loads the page offline with no console message, draws one mark per timed
// line, keeps the hostile texts as text, shows exactly the expected headings, and paints the
// marks' colours.
func TestHTMLRendersInChromium(t *testing.T) {
	browser := chromium.Path(t)
	s := hostileStory()
	dir := t.TempDir()
	url := chromium.WritePage(t, dir, "explain.html", func(w io.Writer) error { return WriteHTML(w, s) })
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
			count[n.Data]++
			for _, a := range n.Attr {
				if a.Key == "class" {
					count[n.Data+"."+a.Val]++
				}
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
	timed := 0
	for _, l := range s.Timeline {
		if !l.Time.IsZero() {
			timed++
		}
	}
	if count["svg.timeline"] != 1 || count["circle.mark"] != timed {
		t.Errorf("timeline: %d svg, %d marks (want %d)", count["svg.timeline"], count["circle.mark"], timed)
	}
	if count["img"] != 0 || count["script"] != 0 {
		t.Errorf("elements from texts: %d img, %d script", count["img"], count["script"])
	}
	for _, raw := range []string{hostileReason, hostileUser} {
		if !strings.Contains(texts.String(), raw) {
			t.Errorf("rendered text lacks %q", raw)
		}
	}
	got, err := headings.HTML(dom)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantHeadings(s); !slices.Equal(got, want) {
		t.Errorf("rendered headings\n got %q\nwant %q", got, want)
	}
	img := chromium.Screenshot(ctx, t, browser, dir, url, 1200, 1200)
	// The audit marks' purple and the EC2 marks' pink are on the screenshot.
	_, n := chromium.Palette(img, 1, chromium.RGB{0x94, 0x67, 0xbd}, chromium.RGB{0xe3, 0x77, 0xc2})
	if n[0] == 0 || n[1] == 0 {
		t.Errorf("screenshot lacks the marks' colours: %v", n)
	}
}
