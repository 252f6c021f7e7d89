// Package chromium runs Debian's headless Chromium on a page a test wrote, offline, for the
// HTML report tests (audit --html, plan --html): the one browser lookup, the flags that keep it
// from reaching the network, and the screenshot. Imported by tests only.
package chromium

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
