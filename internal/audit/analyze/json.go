package analyze

import (
	"bufio"
	"encoding/json"
	"io"
)

// WriteJSON writes the report as -o json prints it: byte for byte what a json.Encoder with
// SetIndent("", "  ") writes for r.Document(), final newline included. The encoder builds the
// whole document in memory, then an indented copy of it (about 40 MB for a report of 10 MB,
// when most leases of a large cluster leak); WriteJSON encodes one section at a time, and the
// report's lists (leases, leaks, zombies, node deletions, inputs, talkers) one item at a time,
// so that what it holds is the largest item, not the report.
func (r *Report) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	s := &jsonStream{w: bw}
	s.raw("{")
	for _, f := range r.jsonFields() {
		if f.omit {
			continue
		}
		s.key(f.key)
		f.write(s)
	}
	s.raw("\n}\n")
	if s.err != nil {
		return s.err
	}
	return bw.Flush()
}

// jsonField is one member of the report's JSON object, in the order encoding/json writes them
// (reportDocument's, then Report's, fields in declaration order).
type jsonField struct {
	key   string
	omit  bool // omitempty or omitzero says so
	write func(*jsonStream)
}

// jsonFields lists the members of the report's JSON document; TestWriteJSONFields keeps it in
// step with the struct tags.
func (r *Report) jsonFields() []jsonField {
	return []jsonField{
		{key: "apiVersion", write: value(APIVersion)},
		{key: "kind", write: value(ReportKind)},
		{key: "from", omit: r.From.IsZero(), write: value(&r.From)},
		{key: "to", omit: r.To.IsZero(), write: value(&r.To)},
		{key: "filters", write: value(&r.Filters)},
		{key: "inputs", write: list(r.Inputs)},
		{key: "totals", write: value(&r.Totals)},
		{key: "nodeDeletions", write: list(r.NodeDeletions)},
		{key: "leases", write: list(r.Leases)},
		{key: "leaks", write: list(r.Leaks)},
		{key: "zombies", write: list(r.Zombies)},
		{key: "throttling", write: value(&r.Throttling)},
		{key: "leaseChurn", write: value(&r.LeaseChurn)},
		{key: "heartbeats", write: value(&r.Heartbeats)},
		{key: "accessDenied", write: value(&r.AccessDenied)},
		{key: "topByRequests", write: list(r.TopByRequests)},
		{key: "topByLatency", write: list(r.TopByLatency)},
		{key: "timeline", write: value(&r.Timeline)},
		{key: "bounds", write: value(&r.Bounds)},
		{key: "errors", omit: len(r.Errors) == 0, write: list(r.Errors)},
	}
}

// jsonStream writes indented JSON to w, remembering the first error.
type jsonStream struct {
	w     *bufio.Writer
	err   error
	first bool // no member written yet at the top level
}

func (s *jsonStream) raw(t string) {
	if s.err == nil {
		_, s.err = s.w.WriteString(t)
	}
}

// key starts a member of the top-level object.
func (s *jsonStream) key(k string) {
	if s.first {
		s.raw(",")
	}
	s.first = true
	s.raw("\n  ")
	s.encode(k, "")
	s.raw(": ")
}

// encode writes v as encoding/json indents it when it sits at depth prefix/2 of the document.
func (s *jsonStream) encode(v any, prefix string) {
	if s.err != nil {
		return
	}
	var b []byte
	if b, s.err = json.MarshalIndent(v, prefix, "  "); s.err == nil {
		_, s.err = s.w.Write(b)
	}
}

// value writes a member's value whole. It takes a pointer for a struct so that, as in the
// document (which reaches the report through a pointer), methods with pointer receivers count.
func value(v any) func(*jsonStream) {
	return func(s *jsonStream) { s.encode(v, "  ") }
}

// list writes a slice an element at a time, as encoding/json writes it: null when nil, [] when
// empty, else one indented element a line.
func list[T any](items []T) func(*jsonStream) {
	return func(s *jsonStream) {
		switch {
		case items == nil:
			s.raw("null")
			return
		case len(items) == 0:
			s.raw("[]")
			return
		}
		s.raw("[")
		for i := range items {
			if i > 0 {
				s.raw(",")
			}
			s.raw("\n    ")
			s.encode(&items[i], "    ")
		}
		s.raw("\n  ]")
	}
}
