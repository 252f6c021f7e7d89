package cli

import (
	"errors"
	"testing"
)

// TestErrorText: controls, C1 and bidi characters are escaped, ordinary text (spaces, letters of
// any script) is not, and a multi-line message keeps its lines, the following ones indented.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"open /tmp/my logs/audit.log: no such file", "open /tmp/my logs/audit.log: no such file"},
		{"open évènements/журнал: denied", "open évènements/журнал: denied"},
		{"open evil\x1b]0;t\a\u202e\u009b: denied", `open evil\x1b]0;t\x07\u202e\u009b: denied`},
		{"bad\r\xff", `bad\r\xff`},
		{"waiting for etcd: timeout; last log lines:\nline 1\nline\x1b[2J 2", "waiting for etcd: timeout; last log lines:\n  line 1\n  line\\x1b[2J 2"},
	} {
		if got := ErrorText(errors.New(tc.in)); got != tc.want {
			t.Errorf("ErrorText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
