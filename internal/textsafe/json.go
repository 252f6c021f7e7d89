package textsafe

import (
	"io"
	"unicode/utf8"
)

// NewJSONWriter returns a writer that hands JSON text on to w with every character a terminal
// could act on written as a \uXXXX escape: DEL, the C1 controls (U+0080–U+009F), the
// bidirectional controls, and U+2028/U+2029. encoding/json escapes only the C0 controls (and
// the two separators), so a lease holder's U+009B (CSI on some terminals) or U+202E would
// otherwise reach the terminal of whoever prints `-o json`. The document is unchanged as JSON
// data: a decoder reads back the original strings.
//
// Every JSON output of nodekeeper goes through it. It relies on the text being JSON as
// encoding/json writes it (valid UTF-8): those characters can then only occur inside strings, and
// the whitespace between tokens (newlines, spaces) is left alone. A character cut between two
// Writes is held until the next one; a JSON document ends in ASCII, so nothing is held at its end.
func NewJSONWriter(w io.Writer) io.Writer { return &jsonWriter{w: w} }

type jsonWriter struct {
	w    io.Writer
	tail []byte // the start of a character cut at the end of the last Write
	buf  []byte
}

func (j *jsonWriter) Write(p []byte) (int, error) {
	data := p
	if len(j.tail) > 0 {
		data = append(append([]byte(nil), j.tail...), p...)
		j.tail = j.tail[:0]
	}
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	j.tail = append(j.tail, data[cut:]...)
	j.buf = AppendJSONEscaped(j.buf[:0], data[:cut])
	if _, err := j.w.Write(j.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// AppendJSONEscaped appends JSON text b to dst with the characters NewJSONWriter escapes
// written as \uXXXX escapes; b is returned unchanged in content when it holds none.
func AppendJSONEscaped(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				dst = append(append(dst, b[start:i]...), `\u007f`...)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && (unsafeRune(r) || r == 0x2028 || r == 0x2029) {
			dst = append(append(dst, b[start:i]...), escapeRune(r)...)
			start = i + size
		}
		i += size
	}
	return append(dst, b[start:]...)
}
