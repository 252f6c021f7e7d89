package findingshtml

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/chromium"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
)

var ruleCap = findings.Rule{Code: "T101", Name: "test-capacity", Section: "nodes", Severity: findings.Error,
	Title: "max pods above capacity", Remediation: "lower maxPods", DocURL: "https://example.com/t101"}

// sample is a report with two sections judged, as the findings package's own tests build theirs.
func sample() *findings.Report {
	qps := findings.Rule{Code: "T201", Name: "test-qps", Section: "kubelet", Severity: findings.Warning,
		Title: "pull QPS too low", Remediation: "raise registryPullQPS", DocURL: "https://example.com/t201"}
	r := findings.NewReport("doctor", "https://127.0.0.1:6443", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
		findings.SectionSpec{Name: "nodes", Title: "Nodes"}, findings.SectionSpec{Name: "kubelet", Title: "Kubelet configuration"})
	r.Checked("nodes", 4)
	r.Checked("kubelet", 4)
	r.Add(ruleCap.New("node/b", "capacity %d above %d", 110, 20))
	r.Add(qps.New("node/a", "burst 10 below 110 pods"))
	r.Add(qps.Skip("node/d", "needs get on nodes/proxy"))
	return r
}

const hostileResource = `node/<img src=x onerror=alert(1)>`

// htmlSample is sample() with two findings of one rule whose remediations differ per object (as
// NK801's terminate command names its instance) and a hostile resource name.
func htmlSample() *findings.Report {
	r := sample()
	a := ruleCap.New("node/x", "capacity 58 above 29")
	a.Remediation = "set maxPods to 29 on node/x"
	b := ruleCap.New(hostileResource, "capacity 58 above 17")
	b.Remediation = "set maxPods to 17 on node/y"
	r.Add(a, b)
	return r
}

func wantHTMLHeadings(r *findings.Report) []string {
	out := []string{"nodekeeper doctor: " + r.Target, "nodekeeper doctor", HeadingSummary}
	for _, s := range r.Sections() {
		out = append(out, s.Title)
		if len(s.Findings) > 0 {
			out = append(out, "code", "severity", "resource", "finding", "remediation")
		}
	}
	return out
}

// The doctor page's headings are exactly the expected ones, fit for people; each finding keeps
// its own remediation (two of one rule, two fixes); hostile names are escaped; nothing in it
// reaches the network.
func TestWrite(t *testing.T) {
	r := htmlSample()
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	// The page's own markup reaches nothing (the check reads text too: a target URL or a hostile
	// name would trip it, so it runs on the page of a report without either).
	plain := sample()
	plain.Target = "prod"
	var pb bytes.Buffer
	if err := Write(&pb, plain); err != nil {
		t.Fatal(err)
	}
	chromium.CheckSelfContained(t, pb.String())
	got, err := headings.HTML(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := wantHTMLHeadings(r); !slices.Equal(got, want) {
		t.Errorf("headings\n got %q\nwant %q", got, want)
	}
	headings.Check(t, "doctor page", got)
	for _, fix := range []string{"set maxPods to 29 on node/x", "set maxPods to 17 on node/y"} {
		if strings.Count(b.String(), fix) != 1 {
			t.Errorf("page holds %q %d times, want once", fix, strings.Count(b.String(), fix))
		}
	}
	if strings.Contains(b.String(), hostileResource) {
		t.Errorf("page holds %q unescaped", hostileResource)
	}
}

// Headless Chromium lays the doctor page out offline with no console message: one row per
// finding, the hostile name as text.
func TestWriteHTMLRendersInChromium(t *testing.T) {
	browser := chromium.Path(t)
	r := htmlSample()
	dir := t.TempDir()
	url := chromium.WritePage(t, dir, "doctor.html", func(w io.Writer) error { return Write(w, r) })
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
	rows, imgs := 0, 0
	var texts strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			rows++
		}
		if n.Type == html.ElementNode && n.Data == "img" {
			imgs++
		}
		if n.Type == html.TextNode {
			texts.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	tables := 0
	for _, s := range r.Sections() {
		if len(s.Findings) > 0 {
			tables++
		}
	}
	if want := len(r.Findings()) + tables; rows != want {
		t.Errorf("%d table rows, want %d (a head per section with findings and one row per finding)", rows, want)
	}
	if imgs != 0 || !strings.Contains(texts.String(), hostileResource) {
		t.Errorf("hostile name: %d img elements, shown as text: %v", imgs, strings.Contains(texts.String(), hostileResource))
	}
	got, err := headings.HTML(dom)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantHTMLHeadings(r); !slices.Equal(got, want) {
		t.Errorf("rendered headings\n got %q\nwant %q", got, want)
	}
}
