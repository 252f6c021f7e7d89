// Package textcheck holds the assertion the table tests share about a piece of output: which
// strings it must contain and which it must not. Import it from tests only.
package textcheck

import (
	"strings"
	"testing"
)

// Contains reports (t.Errorf, the test goes on) every string of want that text lacks and every
// string of not that it has; what names the text in the message ("stdout", "evidence").
func Contains(t testing.TB, what, text string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
	for _, w := range not {
		if strings.Contains(text, w) {
			t.Errorf("%s has %q:\n%s", what, w, text)
		}
	}
}
