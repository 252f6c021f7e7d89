// Package textsafe makes text written by others safe to print on a terminal.
//
// Lease holders, Node fields, audit usernames, user agents and log lines are all written by
// somebody other than the person reading nodekeeper's output. A tenant who can write a Lease can
// put "ESC]0;…BEL" (set the window title), "ESC[2J" (clear the screen) or a bidirectional override
// into a holderIdentity, and a raw printer hands it to the admin's terminal. Every text printer
// passes such fields through Escape (or Clip); JSON, YAML and HTML encoders already escape them.
package textsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal could act on replaced by a visible escape:
// C0 controls (tab and newline included: one field stays on one line), DEL, C1 controls
// (U+0080–U+009F, which some terminals treat like ESC [), Unicode bidirectional controls (they
// reorder what is shown) and bytes that are not valid UTF-8. Printable text, including non-ASCII
// letters, is returned unchanged, and s itself is returned when nothing needs escaping.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case unsafeRune(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Safe reports whether s can be printed as it is.
func Safe(s string) bool { return firstUnsafe(s) < 0 }

// Clip escapes s and shortens the result to at most max runes, ending in "…" when anything was
// cut. It never cuts a character (or an escape sequence) in half. max < 1 means no limit.
func Clip(s string, max int) string {
	e := Escape(s)
	if max < 1 || utf8.RuneCountInString(e) <= max {
		return e
	}
	if max == 1 {
		return "…"
	}
	// Cut on a rune boundary, then step back over a partial escape ("\x1", "\u00") so that what is
	// shown is never a misleading half escape.
	n := 0
	cut := len(e)
	for i := range e {
		if n == max-1 {
			cut = i
			break
		}
		n++
	}
	head := e[:cut]
	if j := strings.LastIndexByte(head, '\\'); j >= 0 && j >= len(head)-5 {
		if tail := head[j:]; partialEscape(tail) {
			head = head[:j]
		}
	}
	return head + "…"
}

// ClipBytes is Clip with a limit in bytes instead of runes, for fixed-size evidence fields.
func ClipBytes(s string, maxBytes int) string {
	e := Escape(s)
	if maxBytes < 1 || len(e) <= maxBytes {
		return e
	}
	const ellipsis = "…"
	cut := maxBytes - len(ellipsis)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(e[cut]) {
		cut--
	}
	head := e[:cut]
	if j := strings.LastIndexByte(head, '\\'); j >= 0 && j >= len(head)-5 && partialEscape(head[j:]) {
		head = head[:j]
	}
	return head + ellipsis
}

func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		// Bidirectional marks, embeddings, overrides and isolates.
		return true
	}
	return false
}

func escapeRune(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	}
	if r < 0x80 {
		return `\x` + hex2(byte(r))
	}
	q := strconv.FormatInt(int64(r), 16)
	return `\u` + strings.Repeat("0", 4-len(q)) + q
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

// partialEscape reports whether tail (starting with a backslash) is an escape this package writes,
// cut short.
func partialEscape(tail string) bool {
	switch {
	case len(tail) < 2:
		return true
	case tail[1] == 'x':
		return len(tail) < 4
	case tail[1] == 'u':
		return len(tail) < 6
	}
	return false
}

// ClipRaw shortens s to at most max runes, ending in "…" when anything was cut, without escaping
// anything: it bounds text that is stored as it was written (a finding's fields, which every text
// printer escapes and every JSON writer carries as the original string). It cuts only between
// characters; a byte that is not valid UTF-8 counts as one rune and is kept as it is. max < 1
// means no limit.
func ClipRaw(s string, max int) string {
	if max < 1 || utf8.RuneCountInString(s) <= max {
		return s
	}
	if max == 1 {
		return "…"
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// ClipRawBytes is ClipRaw with a limit in bytes instead of runes: the result, "…" included, is at
// most maxBytes long (maxBytes of at least 3). maxBytes < 1 means no limit.
func ClipRawBytes(s string, maxBytes int) string {
	if maxBytes < 1 || len(s) <= maxBytes {
		return s
	}
	const ellipsis = "…"
	limit := maxBytes - len(ellipsis)
	cut := 0
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		if i+size > limit {
			break
		}
		i += size
		cut = i
	}
	return s[:cut] + ellipsis
}
