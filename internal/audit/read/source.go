package read

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Input is one thing to read: a file, or standard input.
type Input struct {
	Name string // path, or "-" for standard input
	// Open, when set, is used instead of opening Name (tests; standard input).
	Open func() (io.ReadCloser, error)
}

// ExpandInputs turns command-line arguments (files, directories, globs, "-") into inputs.
// Directories are walked recursively in lexical order, skipping hidden entries; a glob that
// matches nothing and a path that does not exist are errors. No arguments means standard input.
func ExpandInputs(args []string, stdin io.Reader) ([]Input, error) {
	if len(args) == 0 {
		args = []string{"-"}
	}
	var out []Input
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, Input{Name: p})
		}
	}
	for _, a := range args {
		if a == "-" {
			if stdin == nil {
				return nil, errors.New("standard input is not available")
			}
			out = append(out, Input{Name: "-", Open: func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil }})
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) || !strings.ContainsAny(a, "*?[") {
				return nil, err
			}
			matches, gerr := filepath.Glob(a)
			if gerr != nil {
				return nil, fmt.Errorf("bad pattern %q: %w", a, gerr)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("%s: no file matches", a)
			}
			sort.Strings(matches)
			for _, m := range matches {
				// Like a shell, a wildcard does not match a leading dot.
				if strings.HasPrefix(filepath.Base(m), ".") && !strings.HasPrefix(filepath.Base(a), ".") {
					continue
				}
				files, err := filesUnder(m)
				if err != nil {
					return nil, err
				}
				for _, f := range files {
					add(f)
				}
			}
			continue
		}
		if !st.IsDir() && !st.Mode().IsRegular() {
			return nil, notRegular(a, st.Mode())
		}
		if st.IsDir() {
			files, err := filesUnder(a)
			if err != nil {
				return nil, err
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("%s: directory holds no files", a)
			}
			for _, f := range files {
				add(f)
			}
			continue
		}
		add(a)
	}
	return out, nil
}

func filesUnder(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return nil, notRegular(root, st.Mode())
		}
		return []string{root}, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// notRegular refuses a named input that is neither a regular file nor a directory: opening a
// FIFO waits for a writer, for ever if none comes, and a device never ends. Standard input ("-")
// is the way to read a pipe.
func notRegular(name string, m fs.FileMode) error {
	kind := "not a regular file (" + m.Type().String() + ")"
	if m&fs.ModeNamedPipe != 0 {
		kind = "a FIFO, not a regular file"
	}
	return fmt.Errorf("%s is %s: name log files or directories, or pipe the log to standard input (-)", name, kind)
}

func (in Input) open() (io.ReadCloser, error) {
	if in.Open != nil {
		return in.Open()
	}
	// Checked again on what is opened, without waiting on a FIFO swapped in since the listing.
	f, err := os.OpenFile(in.Name, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(in.Name, st.Mode())
	}
	return f, nil
}

// format is the layout of one input, found by looking at its first bytes.
type format uint8

const (
	formatJSONLines    format = iota // kube-apiserver's log backend: one Event per line
	formatFilterEvents               // aws logs filter-log-events output
	formatInsightsJSON               // Logs Insights results: get-query-results, or a console JSON export
	formatInsightsCSV                // Logs Insights results exported as CSV
	formatSubscription               // CloudWatch Logs subscription payloads (JSON, or base64 lines)
	formatJSONArray                  // a JSON array of audit events
	formatJSONStream                 // audit events as concatenated (pretty-printed) JSON objects
)

var formatNames = map[format]string{
	formatJSONLines:    "json-lines",
	formatFilterEvents: "filter-log-events",
	formatInsightsJSON: "logs-insights-json",
	formatInsightsCSV:  "logs-insights-csv",
	formatSubscription: "cloudwatch-subscription",
	formatJSONArray:    "json-array",
	formatJSONStream:   "json-stream",
}

func (f format) String() string { return formatNames[f] }

// countingReader counts the bytes read from the underlying file, so that a broken gzip
// stream can be reported with the compressed offset reached.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// decodedInput is an opened input, decompressed when it was gzip, with its format detected.
type decodedInput struct {
	r          *bufio.Reader
	closer     io.Closer
	format     format
	gzip       bool
	compressed *countingReader // bytes taken from the file (gzip only)
	out        int64           // decompressed bytes handed out so far (gzip only, kept by caller)
}

const gzipMagic = "\x1f\x8b"

func openDecoded(in Input) (*decodedInput, error) {
	rc, err := in.open()
	if err != nil {
		return nil, err
	}
	d := &decodedInput{closer: rc}
	br := bufio.NewReaderSize(rc, 64<<10)
	magic, _ := br.Peek(2)
	if string(magic) == gzipMagic {
		d.gzip = true
		d.compressed = &countingReader{r: br}
		zr, err := gzip.NewReader(d.compressed)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: gzip: %w", in.Name, err)
		}
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	d.r = br
	d.format = sniffFormat(br)
	return d, nil
}

func (d *decodedInput) Close() error { return d.closer.Close() }

// sniffFormat looks at the first bytes of a (decompressed) input.
func sniffFormat(br *bufio.Reader) format {
	head, _ := br.Peek(64 << 10)
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	if len(head) == 0 {
		return formatJSONLines
	}
	switch head[0] {
	case '[':
		// A console export of Insights results is an array of rows keyed by field name; any
		// other array is taken as an array of audit events.
		if bytes.Contains(head[:min(len(head), 4096)], []byte(`"@message"`)) {
			return formatInsightsJSON
		}
		return formatJSONArray
	case '{':
		switch firstKey(head) {
		case "events", "nextToken", "searchedLogStreams":
			return formatFilterEvents
		case "results", "statistics", "status", "encryptionKey":
			return formatInsightsJSON
		case "messageType", "owner", "logGroup", "logStream", "subscriptionFilters", "logEvents":
			return formatSubscription
		}
		// An object that does not end on its first line is pretty-printed: events pasted
		// from a console or written by jq without -c.
		if nl := bytes.IndexByte(head, '\n'); nl >= 0 {
			if _, err := skipValue(head[:nl], 0); err == errUnexpectedEnd {
				return formatJSONStream
			}
		}
		return formatJSONLines
	}
	line := head
	if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	if bytes.Contains(line, []byte("@message")) {
		return formatInsightsCSV
	}
	if bytes.HasPrefix(head, []byte("H4sI")) { // base64 of the gzip magic
		return formatSubscription
	}
	return formatJSONLines
}

// firstKey returns the first key of the JSON object at the start of b.
func firstKey(b []byte) string {
	i := skipWS(b, 1)
	if i >= len(b) || b[i] != '"' {
		return ""
	}
	end := stringEnd(b, i)
	if end < 0 {
		return ""
	}
	return string(b[i+1 : end-1])
}

// ParseTimeFlag reads a --since/--until value: RFC 3339, or "2006-01-02", "2006-01-02 15:04",
// "2006-01-02 15:04:05" (also with T) in UTC. The empty string is the zero time.
func ParseTimeFlag(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time (RFC 3339, or 2006-01-02[ 15:04[:05]] in UTC)", s)
}
