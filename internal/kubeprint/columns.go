package kubeprint

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// column is one HEADER:jsonpath pair of -o custom-columns.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// CustomColumns prints one row per object with kubectl's custom-columns syntax
// (HEADER:.json.path,…), aligned like every kubectl table. A cell with no value is <none>; every
// cell is escaped with textsafe, since any field of a Lease is written by somebody else.
type CustomColumns struct {
	columns   []column
	noHeaders bool
}

// NewCustomColumns parses spec, e.g. "NAME:.metadata.name,HOLDER:.spec.holderIdentity".
func NewCustomColumns(spec string, noHeaders bool) (*CustomColumns, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("custom-columns needs a spec: -o custom-columns=NAME:.metadata.name,RENEWED:.spec.renewTime")
	}
	p := &CustomColumns{noHeaders: noHeaders}
	for i, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || header == "" || expr == "" {
			return nil, fmt.Errorf("custom-columns: column %d is %q; want HEADER:JSONPATH, e.g. NAME:.metadata.name", i+1, part)
		}
		jp, err := parseJSONPath("custom-columns "+header, expr)
		if err != nil {
			return nil, err
		}
		jp.AllowMissingKeys(true)
		p.columns = append(p.columns, column{header: header, path: jp})
	}
	return p, nil
}

// PrintObj implements printers.ResourcePrinter: a list prints a row per item.
func (p *CustomColumns) PrintObj(obj runtime.Object, w io.Writer) error {
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	tw := printers.GetNewTabWriter(w)
	if !p.noHeaders {
		headers := make([]string, len(p.columns))
		for i, c := range p.columns {
			headers[i] = textsafe.Escape(c.header)
		}
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
	}
	cells := make([]string, len(p.columns))
	for _, item := range items {
		data, err := toJSONValue(item)
		if err != nil {
			return err
		}
		for i, c := range p.columns {
			cells[i], err = cell(c.path, data)
			if err != nil {
				return fmt.Errorf("custom-columns %s: %w", c.header, err)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell is the values a path finds, comma-separated as kubectl prints them, or <none>.
func cell(jp *jsonpath.JSONPath, data any) (string, error) {
	results, err := jp.FindResults(data)
	if err != nil {
		return "", err
	}
	var values []string
	for _, set := range results {
		for _, v := range set {
			if !v.IsValid() || (v.CanInterface() && v.Interface() == nil) {
				continue
			}
			var b bytes.Buffer
			if err := jp.PrintResults(&b, []reflectValue{v}); err != nil {
				return "", err
			}
			values = append(values, textsafe.Escape(b.String()))
		}
	}
	if len(values) == 0 {
		return "<none>", nil
	}
	return strings.Join(values, ","), nil
}
