package read

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a minimal JSON scanner for the hot path. It never builds a tree and never uses
// reflection: callers walk an object key by key, read the few values they need as byte slices
// that point into the line, and skip everything else. Skipped values are checked for structure
// (balanced brackets of the right kind, terminated strings, valid literals and number
// characters), not for every rule of the JSON grammar; values that are read are checked fully.

var (
	errUnexpectedEnd = errors.New("unexpected end of JSON input")
	errSyntax        = errors.New("invalid JSON")
	errType          = errors.New("JSON value of the wrong type")
	errDepth         = errors.New("JSON nested too deeply")
)

// maxDepth bounds the nesting of skipped values; encoding/json uses 10000 too.
const maxDepth = 10000

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZeroByte marks (high bit set) the bytes of x that are zero; only the lowest mark is
// exact, which is the one the callers use.
func hasZeroByte(x uint64) uint64 { return (x - lsb) &^ x & msb }

// isWS tests for JSON whitespace; every byte above the space is rejected by the first
// comparison, which is nearly every byte the scanner asks about.
func isWS(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the closing quote of the string starting at b[i]=='"',
// or -1 when the string is not terminated.
func stringEnd(b []byte, i int) int {
	end, _ := stringEndEsc(b, i)
	return end
}

// stringEndEsc is stringEnd that also tells whether the string holds escapes. The first 16
// bytes are looked at eight at a time (SWAR: most strings of an audit event are short); longer
// strings are searched with the vectorised bytes.IndexByte, once for the closing quote and once
// for a backslash before it.
func stringEndEsc(b []byte, i int) (int, bool) {
	j := i + 1
	esc := false
	for n := 0; n < 2 && j+8 <= len(b); n++ {
		x := binary.LittleEndian.Uint64(b[j:])
		m := hasZeroByte(x^('"'*lsb)) | hasZeroByte(x^('\\'*lsb))
		if m == 0 {
			j += 8
			continue
		}
		k := j + bits.TrailingZeros64(m)/8
		if b[k] == '"' {
			return k + 1, esc
		}
		esc = true
		j = k + 2
		n = -1 // the window restarts after an escape
	}
	for j < len(b) {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1, esc
		}
		q := j + k
		if !esc && bytes.IndexByte(b[j:q], '\\') < 0 {
			return q + 1, false
		}
		esc = true
		// The quote is escaped when an odd number of backslashes precedes it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
	return -1, esc
}

// openOrNull checks the start of a value that must open with open or be null. done is false
// when b[i] is open; otherwise the value is read: j is the index after a null (err nil), or
// err says why the value is not of the type wanted.
func openOrNull(b []byte, i int, open byte) (j int, done bool, err error) {
	switch {
	case i >= len(b):
		return i, true, errUnexpectedEnd
	case b[i] == open:
		return i, false, nil
	case b[i] == 'n':
		j, err := expectLit(b, i, "null")
		return j, true, err
	}
	return i, true, errType
}

// readString reads the string value at b[i] (which must be '"'); it returns the contents
// (unescaped into *arena when the raw text holds escapes) and the index after the value.
// A JSON null reads as an empty string, as encoding/json leaves a string untouched for null.
func readString(b []byte, i int, arena *[]byte) ([]byte, int, error) {
	if j, done, err := openOrNull(b, i, '"'); done {
		return nil, j, err
	}
	end, esc := stringEndEsc(b, i)
	if end < 0 {
		return nil, i, errUnexpectedEnd
	}
	raw := b[i+1 : end-1]
	if !esc {
		// Raw control characters are let through here (JSON forbids them; no producer of
		// audit logs writes them, and checking every byte read costs 5 %).
		return raw, end, nil
	}
	start := len(*arena)
	out, err := unescape(*arena, raw)
	if err != nil {
		return nil, i, err
	}
	*arena = out
	return out[start:len(out):len(out)], end, nil
}

// validStringBytes rejects raw control characters, which JSON forbids inside strings.
func validStringBytes(raw []byte) bool {
	i := 0
	for ; i+8 <= len(raw); i += 8 {
		x := binary.LittleEndian.Uint64(raw[i:])
		// A byte below 0x20 borrows when 0x20 is subtracted from it (bytes >= 0x80 are
		// excluded by &^x); the test is exact for "any byte".
		if (x-0x20*lsb)&^x&msb != 0 {
			return false
		}
	}
	for ; i < len(raw); i++ {
		if raw[i] < 0x20 {
			return false
		}
	}
	return true
}

// unescape appends the decoded form of raw (a JSON string body holding escapes) to dst.
func unescape(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c < 0x20 {
			return dst, errSyntax
		}
		if c != '\\' {
			// Copy the run up to the next backslash in one go.
			k := bytes.IndexByte(raw[i:], '\\')
			if k < 0 {
				k = len(raw) - i
			}
			if !validStringBytes(raw[i : i+k]) {
				return dst, errSyntax
			}
			dst = append(dst, raw[i:i+k]...)
			i += k
			continue
		}
		if i+1 >= len(raw) {
			return dst, errSyntax
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return dst, errSyntax
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low surrogate is one rune; anything
				// else decodes to U+FFFD, as encoding/json does.
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw, i+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, errSyntax
		}
		i += 2
	}
	return dst, nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func expectLit(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) {
		return i, errUnexpectedEnd
	}
	if string(b[i:i+len(lit)]) != lit {
		return i, errSyntax
	}
	return i + len(lit), nil
}

// readInt reads a JSON integer (as responseStatus.code is); null reads as 0.
func readInt(b []byte, i int) (int64, int, error) {
	if i >= len(b) {
		return 0, i, errUnexpectedEnd
	}
	if b[i] == 'n' {
		j, err := expectLit(b, i, "null")
		return 0, j, err
	}
	j, err := skipNumber(b, i)
	if err != nil {
		if err == errSyntax && (b[i] == '"' || b[i] == '{' || b[i] == '[' || b[i] == 't' || b[i] == 'f') {
			return 0, i, errType
		}
		return 0, i, err
	}
	num := b[i:j]
	neg := false
	if num[0] == '-' {
		neg = true
		num = num[1:]
	}
	var v int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, i, errType // a fraction or exponent cannot fill an integer field
		}
		if v > (1<<62)/10 {
			return 0, i, errType // overflow: encoding/json rejects it for an int32 field too
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, j, nil
}

// skipNumber validates the JSON number at b[i] and returns the index after it.
func skipNumber(b []byte, i int) (int, error) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j >= len(b) {
		return i, errUnexpectedEnd
	}
	switch {
	case b[j] == '0':
		j++
	case b[j] >= '1' && b[j] <= '9':
		j = skipDigits(b, j)
	default:
		return i, errSyntax
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		j = skipDigits(b, j)
		if j == k {
			return i, errSyntax
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		j = skipDigits(b, j)
		if j == k {
			return i, errSyntax
		}
	}
	return j, nil
}

// skipDigits returns the index of the first byte at or after j that is not an ASCII digit.
func skipDigits(b []byte, j int) int {
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errUnexpectedEnd
	}
	switch c := b[i]; c {
	case '"':
		end := stringEnd(b, i)
		if end < 0 {
			return i, errUnexpectedEnd
		}
		return end, nil
	case '{', '[':
		return skipComposite(b, i)
	case 't':
		return expectLit(b, i, "true")
	case 'f':
		return expectLit(b, i, "false")
	case 'n':
		return expectLit(b, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return skipNumber(b, i)
		}
		return i, errSyntax
	}
}

// skipComposite skips an object or array, checking that brackets pair up and strings end.
func skipComposite(b []byte, i int) (int, error) {
	// stack holds one bit per open bracket (1 = object) for the first 64 levels, which is
	// where real audit events live; deeper levels are only counted.
	var stack uint64
	depth := 0
	for i < len(b) {
		c := b[i]
		switch c {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return i, errUnexpectedEnd
			}
			i = end
			continue
		case '{', '[':
			if depth < 64 {
				stack <<= 1
				if c == '{' {
					stack |= 1
				}
			}
			depth++
			if depth > maxDepth {
				return i, errDepth
			}
		case '}', ']':
			if depth == 0 {
				return i, errSyntax
			}
			depth--
			if depth < 64 {
				isObj := stack&1 == 1
				if isObj != (c == '}') {
					return i, errSyntax
				}
				stack >>= 1
			}
			if depth == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return i, errUnexpectedEnd
}

// objectWalker iterates over the keys of the object at b[i].
// Usage: for i, err = w.open(b, i); w.more; i, err = w.next(b, i) { key := w.key; ... }
// or, to have each key named by its index in a keySet, openKeys and nextKeys, after which id
// is the key's index (keyOther for a key outside the set) and key is not set.
type objectWalker struct {
	key  []byte
	more bool
	kbuf []byte // decoded key when the raw key holds escapes
	id   int
	slot int // the keyGuess slot the next key is guessed from
}

// maxKeys bounds the keys of one keySet.
const maxKeys = 24

// keyOther is the id of a key that is not in the walk's keySet.
const keyOther = -1

// keySet is the keys a walk looks for, by index. Its quoted forms (the key with its quotes and
// the colon, as compact JSON writes it) let the walker recognise a key by one comparison
// of bytes instead of scanning it for its end quote and escapes and then matching it by name.
type keySet struct {
	names  []string
	quoted []quotedKey
}

func newKeySet(names ...string) *keySet {
	if len(names) > maxKeys {
		panic("keySet: too many keys")
	}
	ks := &keySet{names: names}
	for _, n := range names {
		if len(n)+3 > maxLearnedLen {
			panic("keySet: key too long for nextKeys' guess") // nextKeys compares at most maxLearnedLen bytes
		}
		ks.quoted = append(ks.quoted, newQuotedKey(`"`+n+`":`))
	}
	return ks
}

// quotedKey is a key as compact JSON writes it, with its first and last eight bytes as words
// so that most keys are recognised by one or two loads and compares, no call.
type quotedKey struct {
	s           string
	first, last uint64
	mask        uint64 // the bytes of first that belong to the key, when it is shorter than 8
}

func newQuotedKey(s string) quotedKey {
	var pad [8]byte
	q := quotedKey{s: s, mask: ^uint64(0)}
	if len(s) < 8 {
		copy(pad[:], s)
		q.first = binary.LittleEndian.Uint64(pad[:])
		q.mask >>= 8 * (8 - len(s))
		return q
	}
	q.first = binary.LittleEndian.Uint64([]byte(s[:8]))
	q.last = binary.LittleEndian.Uint64([]byte(s[len(s)-8:]))
	return q
}

// at reports whether b[i:] starts with the key and holds at least one byte after it.
func (q *quotedKey) at(b []byte, i int) bool {
	n := len(q.s)
	if len(b)-i <= n {
		return false
	}
	if len(b)-i < 8 {
		return string(b[i:i+n]) == q.s
	}
	x := binary.LittleEndian.Uint64(b[i:])
	if n <= 8 {
		return x&q.mask == q.first
	}
	if x != q.first || binary.LittleEndian.Uint64(b[i+n-8:]) != q.last {
		return false
	}
	return n <= 16 || string(b[i+8:i+n-8]) == q.s[8:n-8]
}

func (ks *keySet) lookup(key []byte) int {
	for k, n := range ks.names {
		if string(key) == n {
			return k
		}
	}
	return keyOther
}

// keyGuess remembers, for the start of an object and after each key, which key came next the
// last time. Events of one log are written by one encoder, so their keys come in the same
// order from one line to the next and the guess is nearly always right; a wrong guess costs
// one comparison before the key is read the ordinary way. Keys outside the keySet (those the
// walk skips) are guessed too: up to maxLearned of them are remembered as they were written,
// with ids after the set's own (reported as keyOther). The zero value guesses key 0.
type keyGuess struct {
	next    [maxKeys + maxLearned + 2]int8 // [0]: the first key; [id+1]: the key after key id; last: after a key not learned
	learned [maxLearned]quotedKey
	n       int // learned keys
	// last holds, by key id, the text of the value the key had last time (at most
	// maxMemoValue bytes), when it was a string without escapes or a string, object or array
	// that was skipped.
	// Scanning a JSON value from its first byte to its end depends on nothing but those
	// bytes, so a value whose text starts with the same bytes is that same value, ending at
	// the same place: one comparison replaces scanning it. Most of an event's values (its
	// kind, level, user agent, groups, the user's extra) repeat from one event to the next.
	last [maxKeys + maxLearned][]byte
}

// maxMemoValue bounds the value text kept per key.
const maxMemoValue = 128

// memoSlot is the index into last for the key just read, or -1.
func (w *objectWalker) memoSlot() int {
	if k := w.slot - 1; k >= 0 && k < maxKeys+maxLearned {
		return k
	}
	return -1
}

// skipValueMemo is skipValue for the value of the key just read, with the memo of g.
func (g *keyGuess) skipValueMemo(w *objectWalker, b []byte, i int) (int, error) {
	k := w.memoSlot()
	if k < 0 {
		return skipValue(b, i)
	}
	if m := g.last[k]; len(m) > 0 && len(b)-i >= len(m) && string(b[i:i+len(m)]) == string(m) {
		return i + len(m), nil
	}
	j, err := skipValue(b, i)
	if err == nil && (b[i] == '"' || b[i] == '{' || b[i] == '[') {
		// Only a value that ends itself is remembered: a string, object or array ends at its
		// closing byte whatever follows, while the number 12 may be the start of 123.
		g.remember(k, b[i:j])
	} else {
		g.last[k] = g.last[k][:0]
	}
	return j, err
}

// readStringMemo is readString for the value of the key just read, with the memo of g.
func (g *keyGuess) readStringMemo(w *objectWalker, b []byte, i int, arena *[]byte) ([]byte, int, error) {
	k := w.memoSlot()
	if k < 0 {
		return readString(b, i, arena)
	}
	if m := g.last[k]; len(m) > 0 && len(b)-i >= len(m) && string(b[i:i+len(m)]) == string(m) {
		return b[i+1 : i+len(m)-1], i + len(m), nil
	}
	v, j, err := readString(b, i, arena)
	if err == nil && i < len(b) && b[i] == '"' && j-i == len(v)+2 {
		// Only a string without escapes is remembered (its contents are its text; escapes
		// always make the contents shorter than the text).
		g.remember(k, b[i:j])
	} else {
		g.last[k] = g.last[k][:0]
	}
	return v, j, err
}

func (g *keyGuess) remember(k int, text []byte) {
	if len(text) > maxMemoValue {
		g.last[k] = g.last[k][:0]
		return
	}
	g.last[k] = append(g.last[k][:0], text...)
}

const (
	// maxLearned bounds the keys outside a keySet that one keyGuess remembers, and
	// maxLearnedLen their length: a log that names other keys on every line only makes the
	// guesses wrong, never the memory larger.
	maxLearned    = 16
	maxLearnedLen = 64
)

// openKeys is open for a walk by keySet (see objectWalker).
func (w *objectWalker) openKeys(b []byte, i int, ks *keySet, g *keyGuess) (int, error) {
	w.more = false
	if i >= len(b) || b[i] != '{' {
		return w.open(b, i)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	w.slot = 0
	return w.keyIn(b, i, ks, g)
}

// nextKeys is next for a walk by keySet. The guessed key is tried here, without a call: it
// is what nearly every key of a log takes.
func (w *objectWalker) nextKeys(b []byte, i int, ks *keySet, g *keyGuess) (int, error) {
	if i < len(b) && b[i] == ',' {
		i++
		known := len(ks.quoted)
		if k := int(g.next[w.slot]); k < known+g.n && len(b)-i > maxLearnedLen {
			var q *quotedKey
			if k < known {
				q = &ks.quoted[k]
			} else {
				q = &g.learned[k-known]
			}
			n := len(q.s)
			x := binary.LittleEndian.Uint64(b[i:])
			// The bytes "name": are the key without escapes; at least one byte must follow
			// (the value), or the ordinary path below tells what is missing.
			if n <= 8 && x&q.mask == q.first ||
				n > 8 && x == q.first && binary.LittleEndian.Uint64(b[i+n-8:]) == q.last && (n <= 16 || string(b[i+8:i+n-8]) == q.s[8:n-8]) {
				w.more, w.slot, w.id = true, k+1, k
				if k >= known {
					w.id = keyOther
				}
				if i += n; isWS(b[i]) {
					i = skipWS(b, i)
				}
				return i, nil
			}
		}
	} else {
		i = skipWS(b, i)
		if i >= len(b) {
			return i, errUnexpectedEnd
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			w.more = false
			return i + 1, nil
		default:
			return i, errSyntax
		}
	}
	return w.keyIn(b, skipWS(b, i), ks, g)
}

// keyIn reads the key at b[i] and the colon after it, setting id, and returns the index of
// the value.
func (w *objectWalker) keyIn(b []byte, i int, ks *keySet, g *keyGuess) (int, error) {
	slot := w.slot
	known := len(ks.quoted)
	if k := int(g.next[slot]); k < known+g.n {
		var q *quotedKey
		if k < known {
			q = &ks.quoted[k]
		} else {
			q = &g.learned[k-known]
		}
		if q.at(b, i) {
			w.more, w.slot = true, k+1
			w.id = k
			if k >= known {
				w.id = keyOther
			}
			i += len(q.s)
			if isWS(b[i]) {
				i = skipWS(b, i)
			}
			return i, nil
		}
	}
	raw := i
	i, err := w.readKey(b, i)
	if err != nil {
		return i, err
	}
	k := ks.lookup(w.key)
	w.id = k
	if k == keyOther {
		k = g.learn(b[raw:i], known)
	}
	if k < 0 {
		w.slot = len(g.next) - 1 // a key neither in the set nor learned: guess from the last slot
		return i, nil
	}
	g.next[slot] = int8(k)
	w.slot = k + 1
	return i, nil
}

// learn returns the id of the key outside the set whose text (from its opening quote to the
// colon, and maybe whitespace after it) is quoted, learning it when there is room and it is
// written compactly; -1 when it is not learned.
func (g *keyGuess) learn(quoted []byte, known int) int {
	for k := 0; k < g.n; k++ {
		if g.learned[k].s == string(quoted) {
			return known + k
		}
	}
	if g.n == maxLearned || len(quoted) > maxLearnedLen || len(quoted) < 3 || quoted[len(quoted)-1] != ':' || quoted[len(quoted)-2] != '"' {
		return -1
	}
	g.learned[g.n] = newQuotedKey(string(quoted))
	g.n++
	return known + g.n - 1
}

// open expects '{' at b[i] and positions on the first value. null is an empty object.
func (w *objectWalker) open(b []byte, i int) (int, error) {
	w.more = false
	if i >= len(b) {
		return i, errUnexpectedEnd
	}
	if b[i] != '{' {
		if b[i] == 'n' {
			return expectLit(b, i, "null")
		}
		if b[i] == '"' || b[i] == '[' || b[i] == 't' || b[i] == 'f' || b[i] == '-' || (b[i] >= '0' && b[i] <= '9') {
			return i, errType
		}
		return i, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	return w.readKey(b, i)
}

func (w *objectWalker) readKey(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errUnexpectedEnd
	}
	if b[i] != '"' {
		return i, errSyntax
	}
	end, esc := stringEndEsc(b, i)
	if end < 0 {
		return i, errUnexpectedEnd
	}
	w.key = b[i+1 : end-1]
	if esc {
		kb, err := unescape(w.kbuf[:0], w.key)
		if err != nil {
			return i, err
		}
		w.kbuf = kb
		w.key = kb
	}
	w.more = true
	// Compact JSON (what the API server writes) has the colon and the value right after the
	// key: take that path without calling skipWS twice.
	if end+1 < len(b) && b[end] == ':' && !isWS(b[end+1]) {
		return end + 1, nil
	}
	i = skipWS(b, end)
	if i >= len(b) {
		w.more = false
		return i, errUnexpectedEnd
	}
	if b[i] != ':' {
		w.more = false
		return i, errSyntax
	}
	return skipWS(b, i+1), nil
}

// next moves past the separator after a value and onto the next key's value.
func (w *objectWalker) next(b []byte, i int) (int, error) {
	if i+1 < len(b) && b[i] == ',' && b[i+1] == '"' {
		return w.readKey(b, i+1) // compact JSON
	}
	i = skipWS(b, i)
	if i >= len(b) {
		return i, errUnexpectedEnd
	}
	switch b[i] {
	case ',':
		return w.readKey(b, skipWS(b, i+1))
	case '}':
		w.more = false
		return i + 1, nil
	}
	return i, errSyntax
}

// keyIs compares an object key (already unescaped by the walker).
func keyIs(k []byte, s string) bool { return string(k) == s }

// readFirstString reads an array of strings and returns its first element (the rest are
// checked and skipped). null is an empty array.
func readFirstString(b []byte, i int, arena *[]byte) ([]byte, int, error) {
	if j, done, err := openOrNull(b, i, '['); done {
		return nil, j, err
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil, i + 1, nil
	}
	var first []byte
	for n := 0; ; n++ {
		var v []byte
		var err error
		if n == 0 {
			v, i, err = readString(b, i, arena)
			first = v
		} else {
			if i < len(b) && b[i] != '"' && b[i] != 'n' {
				return nil, i, errType
			}
			i, err = skipValue(b, i)
		}
		if err != nil {
			return nil, i, err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, i, errUnexpectedEnd
		}
		if b[i] == ']' {
			return first, i + 1, nil
		}
		if b[i] != ',' {
			return nil, i, errSyntax
		}
		i = skipWS(b, i+1)
	}
}
