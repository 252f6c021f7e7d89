package bundle

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// maxLine is the longest line prefix a pattern sees; longer lines (a JSON blob in a journal) are
// cut there rather than failing the scan.
const maxLine = 64 << 10

// evidenceWidth cuts evidence lines for output, in bytes of escaped text.
const evidenceWidth = 300

// lineReader reads lines with one 64 KiB buffer reused for every member: a bundle of many small
// log files costs one buffer, not one per file.
type lineReader struct{ br *bufio.Reader }

// eachLine calls fn for every line of r (without its line ending), numbering from 1.
func (lr *lineReader) eachLine(r io.Reader, fn func(n int, line []byte)) error {
	if lr.br == nil {
		lr.br = bufio.NewReaderSize(r, maxLine)
	} else {
		lr.br.Reset(r)
	}
	defer lr.br.Reset(nil)
	return eachLineFrom(lr.br, fn)
}

func eachLineFrom(br *bufio.Reader, fn func(n int, line []byte)) error {
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			n++
			fn(n, line)
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		if len(line) > 0 {
			n++
			fn(n, bytes.TrimRight(line, "\r\n"))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// pattern recognises one kind of log line: it must contain every string of all and, when any is
// set, at least one string of any (or match re).
type pattern struct {
	rule findings.Rule
	all  [][]byte
	any  [][]byte
	re   *regexp.Regexp
	// what names the matches in messages ("1 \"pull QPS exceeded\" error").
	what findings.Noun
	// hits gathers the matches in every file this pattern is run on (the kubelet log and the
	// CNI logs both show ipamd connection errors, for example).
	hits *hits
	// onMatch, when set, sees each matching line (to pick out a node name, say); onMatchAt sees
	// where it is too (to place it in time against the boot, boot.go).
	onMatch   func(line []byte)
	onMatchAt func(file string, n int, line []byte)
}

func (p *pattern) matches(line []byte) bool {
	for _, s := range p.all {
		if !bytes.Contains(line, s) {
			return false
		}
	}
	if len(p.any) > 0 {
		ok := false
		for _, s := range p.any {
			if bytes.Contains(line, s) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if p.re != nil && !p.re.Match(line) {
		return false
	}
	return true
}

func bs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, v := range s {
		out[i] = []byte(v)
	}
	return out
}

// hits accumulates the matches of one pattern over one or more files.
//
// The lines quoted are the first three and the last in the order of (file name, line number),
// whatever order the files were read in: a directory is read in its own order and an archive in
// the order it was packed, and both give the same evidence.
type hits struct {
	count int
	files map[string]int
	// samples are the evidence of the first matches, keys their positions (sorted).
	samples []string
	keys    []linePos
	// last is the evidence of the last match, at lastKey, shown when there are more than
	// maxSamples.
	last    string
	lastKey linePos
}

// linePos is where a line is: file name, then line number.
type linePos struct {
	file string
	n    int
}

func (a linePos) before(b linePos) bool {
	if a.file != b.file {
		return a.file < b.file
	}
	return a.n < b.n
}

const maxSamples = 3

func (h *hits) add(file string, n int, line []byte) {
	h.count++
	if h.files == nil {
		h.files = map[string]int{}
	}
	h.files[file]++
	at := linePos{file, n}
	var ev string
	if len(h.keys) < maxSamples || at.before(h.keys[len(h.keys)-1]) {
		ev = evidence(file, n, line)
		i := sort.Search(len(h.keys), func(i int) bool { return at.before(h.keys[i]) })
		h.keys = slices.Insert(h.keys, i, at)
		h.samples = slices.Insert(h.samples, i, ev)
		if len(h.keys) > maxSamples {
			h.keys, h.samples = h.keys[:maxSamples], h.samples[:maxSamples]
		}
	}
	if h.count == 1 || h.lastKey.before(at) {
		if ev == "" {
			ev = evidence(file, n, line)
		}
		h.last, h.lastKey = ev, at
	}
}

func (h *hits) evidence() []string {
	out := append([]string(nil), h.samples...)
	if h.count > maxSamples {
		out = append(out, "...", h.last)
	}
	return out
}

// evidence quotes a log line: the line and the member name are written by whoever produced the
// bundle (a kubelet log line may carry "ESC]0;...BEL" from a pod name or an error text). Both are
// kept as written, which the findings printers escape and JSON carries as the original string,
// and cut to evidenceWidth bytes on a character boundary.
func evidence(file string, n int, line []byte) string {
	// What is past the width (and one byte to tell that something was cut) is never kept.
	if len(line) > evidenceWidth+1 {
		line = line[:evidenceWidth+1]
	}
	return fmt.Sprintf("%s:%d: %s", textsafe.ClipRawBytes(file, evidenceWidth), n, textsafe.ClipRawBytes(string(line), evidenceWidth))
}

// scanner runs several patterns over files of one kind.
type scanner struct {
	lines    *lineReader
	patterns []*pattern
	files    []string
}

func newScanner(ps ...*pattern) *scanner {
	for _, p := range ps {
		if p.hits == nil {
			p.hits = &hits{}
		}
	}
	return &scanner{patterns: ps}
}

func (s *scanner) scan(file string, r io.Reader, extra func(n int, line []byte)) error {
	s.files = append(s.files, file)
	return s.lines.eachLine(r, func(n int, line []byte) {
		s.match(file, n, line)
		if extra != nil {
			extra(n, line)
		}
	})
}

// match runs the patterns on one line (of a file scan reads, or of one another reader reads).
func (s *scanner) match(file string, n int, line []byte) {
	for _, p := range s.patterns {
		if p.matches(line) {
			p.hits.add(file, n, line)
			if p.onMatch != nil {
				p.onMatch(line)
			}
			if p.onMatchAt != nil {
				p.onMatchAt(file, n, line)
			}
		}
	}
}
