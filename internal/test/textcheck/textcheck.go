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

// WantError is the error half of a table case that may expect one. With want set it fails the
// test (t.Fatalf) unless err mentions want, and returns true: the case ends there. With want
// empty it fails the test on any err and returns false: the case goes on to check the result.
//
//	got, err := Parse(tc.in)
//	if textcheck.WantError(t, err, tc.wantErr) {
//		return
//	}
func WantError(t testing.TB, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one mentioning %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return false
}
