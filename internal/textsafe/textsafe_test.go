package textsafe

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "ip-10-0-1-23.ec2.internal", "ip-10-0-1-23.ec2.internal"},
		{"non-ASCII letters stay", "노드-ñ", "노드-ñ"},
		{"OSC window title", "x\x1b]0;pwned\x07y", `x\x1b]0;pwned\x07y`},
		{"clear screen", "\x1b[2J", `\x1b[2J`},
		{"newline and tab", "a\nb\tc\r", `a\nb\tc\r`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"NUL", "a\x00b", `a\x00b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Escape(tc.in)
			if got != tc.want {
				t.Fatalf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !Safe(got) {
				t.Fatalf("Escape(%q) = %q is not Safe", tc.in, got)
			}
			if Safe(tc.in) != (tc.in == tc.want) {
				t.Fatalf("Safe(%q) = %v", tc.in, Safe(tc.in))
			}
		})
	}
}

// clipCase is one input of a clip function and the text it must return.
type clipCase struct {
	in   string
	max  int
	want string
}

// clipFault says what is wrong with got, a clip of some text to max, whatever the text: longer
// than max as size counts (runes or bytes), or, for a clip that escapes (escaped), not valid,
// safe text. "" when nothing is.
func clipFault(got string, max int, size func(string) int, escaped bool) string {
	if max > 0 && size(got) > max {
		return fmt.Sprintf("is %d long, over %d", size(got), max)
	}
	if escaped && (!utf8.ValidString(got) || !Safe(got)) {
		return "is not valid, safe text"
	}
	return ""
}

// checkClips runs clip (called name in failures) over cases: each returns its want, and no
// result has a clipFault.
func checkClips(t *testing.T, name string, clip func(string, int) string, size func(string) int, escaped bool, cases []clipCase) {
	t.Helper()
	for _, tc := range cases {
		got := clip(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("%s(%q, %d) = %q, want %q", name, tc.in, tc.max, got, tc.want)
		}
		if f := clipFault(got, tc.max, size, escaped); f != "" {
			t.Errorf("%s(%q, %d) = %q %s", name, tc.in, tc.max, got, f)
		}
	}
}

func TestClip(t *testing.T) {
	checkClips(t, "Clip", Clip, utf8.RuneCountInString, true, []clipCase{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"hello world", 6, "hello…"},
		{"노드노드노드", 4, "노드노…"},
		{"ab\x1b[2J", 4, "ab…"},     // never a half escape: "ab\x" would mislead
		{"ab\x1b[2J", 7, `ab\x1b…`}, // whole escape kept
		{"anything", 0, "anything"},
		{"anything", 1, "…"},
	})
}

func TestClipBytes(t *testing.T) {
	in := strings.Repeat("가", 50) // 3 bytes each
	for max := 1; max < 40; max++ {
		got := ClipBytes(in, max)
		if !utf8.ValidString(got) {
			t.Fatalf("ClipBytes(.., %d) = %q cuts a character", max, got)
		}
		if len(got) > max && got != "…" {
			t.Fatalf("ClipBytes(.., %d) = %q is %d bytes", max, got, len(got))
		}
	}
	if got := ClipBytes("a\x1b[2Jbcdefghij", 7); got != "a…" {
		t.Fatalf("ClipBytes kept a half escape: %q", got)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;x\x07", "\u202e", "\xff\xfe", "노드\n"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		e := Escape(s)
		if !utf8.ValidString(e) || !Safe(e) {
			t.Fatalf("Escape(%q) = %q is not safe", s, e)
		}
		if Safe(s) && e != s {
			t.Fatalf("Escape changed safe text %q to %q", s, e)
		}
		max = max % 200
		if c := Clip(s, max); clipFault(c, max, utf8.RuneCountInString, true) != "" {
			t.Fatalf("Clip(%q, %d) = %q %s", s, max, c, clipFault(c, max, utf8.RuneCountInString, true))
		}
	})
}

// TestClipRaw: the clips for stored text bound the length, cut only between characters (an
// invalid byte is one character), escape nothing and return short text unchanged.
func TestClipRaw(t *testing.T) {
	checkClips(t, "ClipRaw", ClipRaw, utf8.RuneCountInString, false, []clipCase{
		{"", 5, ""},
		{"abc", 0, "abc"},
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"abcd", 1, "…"},
		{"a\x1b]0;x\abc", 5, "a\x1b]0…"},
		{"\x1b[2J", 4, "\x1b[2J"},
		{"é日本語", 3, "é日…"},
		{"a\xffb\xfe", 3, "a\xff…"},
		{"\xff\xfe\xfd", 3, "\xff\xfe\xfd"},
		{"\u202eabc\u009b", 3, "\u202ea…"},
	})
	checkClips(t, "ClipRawBytes", ClipRawBytes, func(s string) int { return len(s) }, false, []clipCase{
		{"", 5, ""},
		{"abc", 0, "abc"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abc…"},
		{"a\x1b[2Jbcdefghij", 7, "a\x1b[2…"},
		{"日本語です", 8, "日…"},  // 本 would end at byte 6, and 6 + 3 > 8
		{"é日本語", 10, "é日…"}, // 本 would end at byte 8, and 8 + 3 > 10
		{"a\xffb\xfecdef", 6, "a\xffb…"},
		{"\xe6\x97", 3, "\xe6\x97"}, // a character cut short, under the limit: unchanged
		{"\xe6\x97abcd", 5, "\xe6\x97…"},
		{"\u009b\u009b\u009b", 5, "\u009b…"},
	})
}
