package leasesview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// writeJSON writes r exactly as cli-runtime's JSONPrinter would (json.MarshalIndent with four
// spaces), but one item at a time: the printer marshals the whole report and then indents it, two
// full copies of a 100,000-lease report (tens of megabytes each) on top of the rows themselves.
func writeJSON(w io.Writer, r *Report) error {
	w = textsafe.NewJSONWriter(w) // C1 and bidi controls as \u escapes (docs/security.md)
	// JSON strings cannot hold a raw newline, so this marker only matches the field itself;
	// what follows it is "," (more fields) or "\n}".
	const marker = "\n    \"items\": []"
	head, tail, err := splitAround(r, func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "    ") }, []byte(marker))
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head)
	if len(r.Items) == 0 {
		bw.WriteString(marker)
	} else {
		bw.WriteString("\n    \"items\": [")
		for i := range r.Items {
			b, err := json.MarshalIndent(&r.Items[i], "        ", "    ")
			if err != nil {
				return err
			}
			if i > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n        ")
			bw.Write(b)
		}
		bw.WriteString("\n    ]")
	}
	bw.Write(tail)
	bw.WriteString("\n")
	return bw.Flush()
}

// writeYAML writes r exactly as cli-runtime's YAMLPrinter would (sigs.k8s.io/yaml: keys sorted,
// sequences not indented), one item at a time, for the same reason as writeJSON.
func writeYAML(w io.Writer, r *Report) error {
	head, tail, err := splitAround(r, yaml.Marshal, []byte("\nitems: []\n"))
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head)
	if len(r.Items) == 0 {
		bw.WriteString("\nitems: []\n")
	} else {
		bw.WriteString("\nitems:\n")
		for i := range r.Items {
			// A one-element sequence at column 0 is exactly how the entry appears under "items:"
			// (sequences are not indented), line folding included.
			b, err := yaml.Marshal(r.Items[i : i+1])
			if err != nil {
				return err
			}
			bw.Write(b)
		}
	}
	bw.Write(tail)
	return bw.Flush()
}

// splitAround marshals r without its items and splits the result around the empty items field
// (marker), which the caller replaces with the items written one by one.
func splitAround(r *Report, marshal func(any) ([]byte, error), marker []byte) (head, tail []byte, err error) {
	shell := *r
	shell.Items = []Item{}
	b, err := marshal(&shell)
	if err != nil {
		return nil, nil, err
	}
	i := bytes.Index(b, marker)
	if i < 0 || bytes.Count(b, marker) != 1 {
		return nil, nil, fmt.Errorf("internal error: cannot place the items in the %s report", ReportKind)
	}
	return b[:i], b[i+len(marker):], nil
}
