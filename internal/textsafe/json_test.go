package textsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileJSON holds every kind of character the JSON writer must not pass raw, next to ordinary
// text of several scripts.
const hostileJSON = "ESC\x1b]0;t\a DEL\x7f C1\u0085\u009b2J bidi\u202e\u2066\u061c\u200f sep\u2028\u2029 évènement журнал 日本"

// assertNoRawUnsafe fails when out holds, anywhere, the bytes of a character a terminal acts on.
func assertNoRawUnsafe(t *testing.T, out []byte) {
	t.Helper()
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		if r == 0x7f || (r >= 0x80 && unsafeRune(r)) || r == 0x2028 || r == 0x2029 || (r < 0x20 && r != '\n' && r != ' ') {
			t.Fatalf("raw %U at byte %d of %q", r, i, out)
		}
		i += size
	}
}

// TestJSONWriter: the document decodes back to the original strings, holds none of their
// unsafe characters raw, writes them as \u escapes, and is the same whatever the Write sizes
// (a character cut between two Writes included).
func TestJSONWriter(t *testing.T) {
	doc := map[string]any{"holder": hostileJSON, hostileJSON: []string{hostileJSON, "plain"}}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc = json.NewEncoder(NewJSONWriter(&out))
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	assertNoRawUnsafe(t, out.Bytes())
	for _, want := range []string{`\u001b]0;t\u0007`, `\u007f`, `\u0085\u009b2J`, `\u202e\u2066\u061c\u200f`, `\u2028\u2029`, "évènement журнал 日本"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if back["holder"] != hostileJSON || back[hostileJSON].([]any)[0] != hostileJSON {
		t.Errorf("decoded %q, want the original %q", back["holder"], hostileJSON)
	}
	// Byte by byte and in chunks of every size up to 7: the same output.
	for size := 1; size <= 7; size++ {
		var chunked bytes.Buffer
		w := NewJSONWriter(&chunked)
		src := plain.Bytes()
		for i := 0; i < len(src); i += size {
			if _, err := w.Write(src[i:min(i+size, len(src))]); err != nil {
				t.Fatal(err)
			}
		}
		if chunked.String() != out.String() {
			t.Errorf("writes of %d bytes: %q, want %q", size, chunked.String(), out.String())
		}
	}
	// Text without such characters passes unchanged.
	if got := string(AppendJSONEscaped(nil, []byte(`{"a": "évènement\n"}`))); got != `{"a": "évènement\n"}` {
		t.Errorf("changed safe JSON: %q", got)
	}
}
