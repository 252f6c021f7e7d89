// Package chromium runs Debian's headless Chromium on a page a test wrote, offline, for the
// HTML report tests (audit --html, plan --html): the one browser lookup, the flags that keep it
// from reaching the network, and the screenshot. Imported by tests only.
package chromium

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Path returns the browser, or skips the test saying how to get it (hack/install-deps.sh
// installs it for `make test`).
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (hack/install-deps.sh, or apt-get install chromium): the HTML page is not rendered")
	return ""
}

// Args are the flags of one headless run with its own new profile directory: no sandbox (the
// tests run as root), no GPU, and none of the background connections a closed network refuses.
func Args(profile string, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile}, extra...)
}

// Screenshot renders url at width×height into dir and returns the decoded image, failing the
// test if the browser fails or the image is not that size.
func Screenshot(ctx context.Context, t testing.TB, browser, dir, url string, width, height int) image.Image {
	t.Helper()
	shot := filepath.Join(dir, "screenshot.png")
	out, err := exec.CommandContext(ctx, browser, Args(filepath.Join(dir, "screenshot-profile"),
		"--hide-scrollbars", "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), "--screenshot="+shot, url)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("screenshot is %v, want %dx%d", b, width, height)
	}
	return img
}

// WritePage writes a page with write into dir as name and returns its file:// URL.
func WritePage(t testing.TB, dir, name string, write func(io.Writer) error) string {
	t.Helper()
	page := filepath.Join(dir, name)
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return "file://" + page
}

// DumpDOM loads url (its own profile under dir) and returns the DOM after layout and the
// console messages the page logged: Chromium writes each on stderr as a CONSOLE line, an
// uncaught exception with "Uncaught".
func DumpDOM(ctx context.Context, t testing.TB, browser, dir, url string) (dom []byte, console []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, browser, Args(filepath.Join(dir, "dom-profile"), "--enable-logging=stderr", "--v=0", "--dump-dom", url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			console = append(console, line)
		}
	}
	return dom, console
}

// networkRefs are what would make a page reach beyond itself: a script, a stylesheet or any
// src/href, a CSS url() or @import, an absolute URL.
var networkRefs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)<link`), regexp.MustCompile(`(?i)\s(src|href)\s*=`),
	regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`), regexp.MustCompile(`(?i)https?://`),
}

// CheckSelfContained fails t for everything in page, an HTML report, that could reach the
// network: the reports are opened where the cluster is, often with no way out.
func CheckSelfContained(t testing.TB, page string) {
	t.Helper()
	for _, bad := range networkRefs {
		if loc := bad.FindStringIndex(page); loc != nil {
			t.Errorf("page has %q at %d: %s", bad.String(), loc[0], page[max(0, loc[0]-80):min(len(page), loc[1]+80)])
		}
	}
}

// RGB is a colour, 8 bits a channel.
type RGB [3]uint32

// Palette samples img at every step-th pixel both ways and returns how many distinct colours
// it saw and, for each of want, how many samples were near it (within 24 a channel, for
// anti-aliasing): what tells a laid-out page with its marks drawn from a blank one.
func Palette(img image.Image, step int, want ...RGB) (distinct int, near []int) {
	seen := map[RGB]bool{}
	near = make([]int, len(want))
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += step {
		for x := b.Min.X; x < b.Max.X; x += step {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := RGB{r >> 8, g >> 8, bl >> 8}
			seen[c] = true
			for i, w := range want {
				if nearColour(c, w) {
					near[i]++
				}
			}
		}
	}
	return len(seen), near
}

func nearColour(a, b RGB) bool {
	for i := range a {
		if max(a[i], b[i])-min(a[i], b[i]) >= 24 {
			return false
		}
	}
	return true
}
