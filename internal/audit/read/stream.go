package read

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// valueReader cuts a stream of JSON text into values without ever holding more than a limit of
// any one of them. The exports (arrays, pretty-printed streams, CloudWatch documents) are read
// with it instead of encoding/json's Decoder, which buffers a whole value: one event of a
// gigabyte, which gzip shrinks to a megabyte, would otherwise cost gigabytes of memory. A value
// over its limit is skimmed to its end (its structure followed, its bytes dropped) and reported
// as too long, and reading goes on after it.
//
// Only the structure needed to find where a value ends is followed (strings, escapes, bracket
// depth); what a kept value holds is checked by whoever parses it.
type valueReader struct {
	r   *bufio.Reader
	buf []byte
	off int64 // bytes consumed, for error messages
}

func newValueReader(r io.Reader) *valueReader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &valueReader{r: br}
}

// maxKey bounds the object keys and small strings (messageType) read from exports.
const maxKey = 4096

var errTooDeep = errors.New("JSON nested too deeply")

// peek skips whitespace and returns the next byte without consuming it; io.EOF at the end.
func (v *valueReader) peek() (byte, error) {
	for {
		c, err := v.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if !isWS(c) && c != 0xef && c != 0xbb && c != 0xbf { // a byte-order mark counts as space
			_ = v.r.UnreadByte()
			return c, nil
		}
		v.off++
	}
}

// expect consumes the next non-space byte, which must be c.
func (v *valueReader) expect(c byte) error {
	got, err := v.peek()
	if err == io.EOF {
		return fmt.Errorf("offset %d: %w (expected %q)", v.off, io.ErrUnexpectedEOF, c)
	}
	if err != nil {
		return err
	}
	if got != c {
		return fmt.Errorf("offset %d: expected %q, found %q", v.off, c, got)
	}
	_, _ = v.r.ReadByte()
	v.off++
	return nil
}

// value reads the next JSON value. When it is longer than limit bytes, it is consumed but not
// kept: tooLong is true and data nil. data is valid until the next call.
func (v *valueReader) value(limit int) (data []byte, tooLong bool, err error) {
	first, err := v.peek()
	if err != nil {
		return nil, false, err
	}
	v.buf = v.buf[:0]
	keep := true
	depth := 0
	inStr, esc := false, false
	scalar := first != '"' && first != '{' && first != '['
	started := false
	for {
		chunk, perr := v.r.Peek(1)
		if len(chunk) == 0 {
			if perr == io.EOF {
				if scalar && started {
					break // a number or literal at the very end
				}
				return nil, false, fmt.Errorf("offset %d: %w", v.off, io.ErrUnexpectedEOF)
			}
			return nil, false, perr
		}
		chunk, _ = v.r.Peek(v.r.Buffered())
		end := -1
		for k := 0; k < len(chunk); k++ {
			c := chunk[k]
			if scalar {
				if isWS(c) || c == ',' || c == ']' || c == '}' || c == '"' || c == '{' || c == '[' || c == ':' {
					if k == 0 && !started {
						end = 1 // a stray delimiter is a value of one byte, so reading moves on
					} else {
						end = k
					}
					break
				}
				continue
			}
			if inStr {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
					if depth == 0 {
						end = k + 1
					}
				default:
					// Most of a long string is neither: jump to the next quote or backslash.
					if n := bytes.IndexAny(chunk[k:], `"\`); n > 0 {
						k += n - 1
					} else if n < 0 {
						k = len(chunk) - 1
					}
				}
				if end >= 0 {
					break
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				depth++
				if depth > maxDepth {
					return nil, false, fmt.Errorf("offset %d: %w", v.off+int64(k), errTooDeep)
				}
			case '}', ']':
				depth--
				if depth <= 0 {
					end = k + 1
				}
			}
			if end >= 0 {
				break
			}
		}
		n := len(chunk)
		if end >= 0 {
			n = end
		}
		started = true
		if keep {
			if len(v.buf)+n > limit {
				keep, v.buf = false, v.buf[:0]
			} else {
				v.buf = append(v.buf, chunk[:n]...)
			}
		}
		_, _ = v.r.Discard(n)
		v.off += int64(n)
		if end >= 0 {
			break
		}
	}
	if !keep {
		return nil, true, nil
	}
	return v.buf, false, nil
}

// skip consumes the next value whatever its size.
func (v *valueReader) skip() error {
	_, _, err := v.value(0)
	return err
}

// object reads the object at the current position, calling fn for each key with the reader
// positioned on its value; fn must consume the value. Keys longer than maxKey read as "".
func (v *valueReader) object(fn func(key string) error) error {
	return v.members('{', '}', func() error {
		raw, tooLong, err := v.value(maxKey)
		if err != nil {
			return v.unexpected(err)
		}
		var key string
		if !tooLong {
			if json.Unmarshal(raw, &key) != nil {
				return fmt.Errorf("offset %d: an object key is not a string", v.off)
			}
		}
		if err := v.expect(':'); err != nil {
			return err
		}
		return fn(key)
	})
}

// array reads the array at the current position (null is an empty one), calling fn with the
// reader positioned on each element; fn must consume it.
func (v *valueReader) array(fn func() error) error {
	c, err := v.peek()
	if err != nil {
		return v.unexpected(err)
	}
	if c == 'n' {
		raw, _, err := v.value(8)
		if err == nil && string(raw) != "null" {
			err = fmt.Errorf("offset %d: expected an array, found %q", v.off, raw)
		}
		return err
	}
	return v.members('[', ']', fn)
}

// members reads a container from its open to its close bracket, calling member for each member
// (none for an empty container); member must consume it.
func (v *valueReader) members(open, close byte, member func() error) error {
	if err := v.expect(open); err != nil {
		return err
	}
	c, err := v.peek()
	if err != nil {
		return v.unexpected(err)
	}
	if c == close {
		return v.expect(close)
	}
	for {
		if err := member(); err != nil {
			return err
		}
		if err := v.endOf(close); err != errMore {
			return err
		}
	}
}

var errMore = errors.New("more")

// endOf consumes the separator after a member: errMore after ',', nil after close.
func (v *valueReader) endOf(close byte) error {
	c, err := v.peek()
	if err != nil {
		return v.unexpected(err)
	}
	_, _ = v.r.ReadByte()
	v.off++
	switch c {
	case ',':
		return errMore
	case close:
		return nil
	}
	return fmt.Errorf("offset %d: expected ',' or %q, found %q", v.off-1, close, c)
}

func (v *valueReader) unexpected(err error) error {
	if err == io.EOF {
		return fmt.Errorf("offset %d: %w", v.off, io.ErrUnexpectedEOF)
	}
	return err
}

// readRecordLine reads one line of at most limit bytes (without its end of line); a longer one
// is consumed and reported as tooLong. io.EOF only when nothing was left.
func readRecordLine(r *bufio.Reader, limit int, buf []byte) (line []byte, tooLong bool, err error) {
	buf = buf[:0]
	total := 0
	for {
		chunk, rerr := r.ReadSlice('\n')
		total += len(chunk)
		if !tooLong {
			if len(buf)+len(chunk) > limit+2 { // the line end does not count
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if rerr == io.EOF {
			if total == 0 {
				return nil, false, io.EOF
			}
			rerr = nil
		}
		if rerr != nil {
			return nil, false, rerr
		}
		if tooLong {
			return nil, true, nil
		}
		return bytes.TrimRight(buf, "\r\n"), false, nil
	}
}

// csvRecord reads one CSV record (quoted fields may hold line breaks) of at most limit bytes;
// a longer one is consumed and reported as tooLong. io.EOF only when nothing was left.
func csvRecord(r *bufio.Reader, limit int, buf []byte) (rec []byte, tooLong bool, err error) {
	buf = buf[:0]
	inQuotes := false
	n := 0
	for {
		chunk, perr := r.Peek(1)
		if len(chunk) == 0 {
			if perr == io.EOF {
				if n == 0 {
					return nil, false, io.EOF
				}
				break
			}
			return nil, false, perr
		}
		chunk, _ = r.Peek(r.Buffered())
		end := -1
		for k, c := range chunk {
			if c == '"' {
				inQuotes = !inQuotes // "" inside quotes toggles twice
			} else if c == '\n' && !inQuotes {
				end = k + 1
				break
			}
		}
		take := len(chunk)
		if end >= 0 {
			take = end
		}
		if !tooLong {
			if len(buf)+take > limit+2 {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk[:take]...)
			}
		}
		n += take
		_, _ = r.Discard(take)
		if end >= 0 {
			break
		}
	}
	if tooLong {
		return nil, true, nil
	}
	return buf, false, nil
}

// limitedPayload stops a decompressed subscription payload at max bytes: a payload is at most
// a megabyte compressed, and a gzip bomb must not keep the reader busy for ever.
type limitedPayload struct {
	r   io.Reader
	n   int64
	max int64
}

var errPayloadTooLarge = errors.New("decompressed subscription payload too large")

func (l *limitedPayload) Read(p []byte) (int, error) {
	if l.n >= l.max {
		return 0, errPayloadTooLarge
	}
	if int64(len(p)) > l.max-l.n {
		p = p[:l.max-l.n]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}
