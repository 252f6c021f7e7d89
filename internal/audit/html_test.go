package audit

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/render"
	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
	"github.com/nodekeeper/nodekeeper/internal/test/chromium"
)

// The page is self-contained: nothing in it can reach the network.
func TestHTMLSelfContained(t *testing.T) {
	r, truth := scenarioReport(t)
	var b bytes.Buffer
	if err := render.WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	chromium.CheckSelfContained(t, page)
	// The named lease churn actor and the nodes near NotReady are on the page.
	for _, want := range []string{"Timeline per node and lease", "Zombie kubelets", "Lease churn", "Heartbeats", "Throttling over time", "<svg", "<polyline",
		`<td class="bad">` + auditgen.CleanupUser + "</td>", truth.OverGrace[0] + `</td><td class="bad">over-grace`, truth.NearGrace[0] + `</td><td class="warn">near-grace`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Headless Chromium opens the page offline, lays it out with its timelines and chart, and takes a
// screenshot that is not blank.
func TestHTMLRendersInChromium(t *testing.T) {
	browser := chromium.Path(t)
	r, truth := scenarioReport(t)
	dir := t.TempDir()
	url := chromium.WritePage(t, dir, "report.html", func(w io.Writer) error { return render.WriteHTML(w, r) })

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The DOM after layout holds every zombie node and the throttled user; the page logs nothing.
	dom, console := chromium.DumpDOM(ctx, t, browser, dir, url)
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	for _, z := range truth.Zombies {
		if !bytes.Contains(dom, []byte(z)) {
			t.Errorf("rendered page lacks zombie %s", z)
		}
	}
	if !bytes.Contains(dom, []byte(truth.ThrottledUser)) {
		t.Errorf("rendered page lacks the throttled user")
	}

	img := chromium.Screenshot(ctx, t, browser, dir, url, 1200, 1600)
	// A laid-out page has text, tables and coloured marks: many distinct colours, and the
	// red of the deletion marks and the amber of the zombie bars somewhere.
	colours, n := chromium.Palette(img, 2, chromium.RGB{0xc0, 0x39, 0x2b}, chromium.RGB{0xf5, 0xb0, 0x41}, chromium.RGB{0xf8, 0xc7, 0x7a})
	reds, ambers := n[0], n[1]+n[2]
	if colours < 50 || reds == 0 || ambers == 0 {
		t.Errorf("screenshot looks empty: %d colours, %d red, %d amber pixels", colours, reds, ambers)
	}
	if dst := os.Getenv("NODEKEEPER_AUDIT_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(filepath.Join(dir, "screenshot.png"))
		os.WriteFile(dst, data, 0o644)
	}
}
