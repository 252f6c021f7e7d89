package findingstest

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// SafeText prints r as the text report and returns it; it fails the test (t.Fatalf) when the
// printer fails or when any line holds a character a terminal could act on, so that the hostile
// text tests of every command that prints findings make one claim the same way. what names the
// text in the message ("text", "tarball text").
func SafeText(t testing.TB, what string, r *findings.Report, opts findings.PrintOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := findings.PrintText(&out, r, opts); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(out.String(), "\n") {
		if !textsafe.Safe(line) {
			t.Fatalf("%s line %d reaches the terminal raw: %q", what, i+1, line)
		}
	}
	return out.String()
}

// SafeJSON prints r as the JSON report and returns it; it fails the test (t.Fatalf) when the
// printer fails or when the JSON holds, raw, a C0 control other than newline, DEL, a C1 control
// or U+202E (right-to-left override): JSON escapes keep what was written, nothing reaches a
// terminal that cats the file. The rule is spelled out here rather than taken from textsafe, so
// that the test does not grade the escaping with its own code.
func SafeJSON(t testing.TB, r *findings.Report) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := findings.PrintJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	b := out.Bytes()
	for i := 0; i < len(b); {
		c, size := utf8.DecodeRune(b[i:])
		if (c < 0x20 && c != '\n') || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x202e {
			t.Fatalf("JSON holds raw %U at byte %d:\n%s", c, i, b)
		}
		i += size
	}
	return b
}
