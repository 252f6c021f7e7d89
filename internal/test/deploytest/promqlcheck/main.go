// Command promqlcheck parses PromQL expressions with the Prometheus parser itself and reports the
// series selectors and grouping labels each one uses, so that internal/test/deploytest can hold the
// dashboard and alert expressions to the metrics contract in docs/metrics.md.
//
// It is a separate Go module because github.com/prometheus/prometheus would pull newer versions
// of pinned dependencies (client_golang, x/...) into nodekeeper's own go.mod.
//
// Input (stdin): a JSON array of {"id": "...", "expr": "..."}.
// Output (stdout): a JSON array of {"id", "error", "selectors": [{"metric", "matchers": [{"name",
// "type", "value"}]}], "grouping": ["label", ...]} in input order. A parse error is reported in
// "error" for that expression; only unreadable input makes the command itself fail.
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type input struct {
	ID   string `json:"id"`
	Expr string `json:"expr"`
}

type matcher struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

type selector struct {
	Metric   string    `json:"metric"`
	Matchers []matcher `json:"matchers"`
}

type output struct {
	ID        string     `json:"id"`
	Error     string     `json:"error,omitempty"`
	Selectors []selector `json:"selectors"`
	Grouping  []string   `json:"grouping"`
}

func main() {
	var in []input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "promqlcheck: reading the expressions:", err)
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	out := make([]output, 0, len(in))
	for _, e := range in {
		out = append(out, check(p, e))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promqlcheck:", err)
		os.Exit(2)
	}
}

func check(p parser.Parser, in input) output {
	o := output{ID: in.ID, Selectors: []selector{}, Grouping: []string{}}
	expr, err := p.ParseExpr(in.Expr)
	if err != nil {
		o.Error = err.Error()
		return o
	}
	grouping := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			s := selector{Metric: n.Name, Matchers: []matcher{}}
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName {
					// The metric name is also a matcher; a regex on __name__ would hide which
					// metrics are used, so report it for the caller to reject.
					if m.Type != labels.MatchEqual {
						s.Metric = ""
					}
					continue
				}
				s.Matchers = append(s.Matchers, matcher{Name: m.Name, Type: m.Type.String(), Value: m.Value})
			}
			o.Selectors = append(o.Selectors, s)
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				grouping[l] = true
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				for _, l := range n.VectorMatching.MatchingLabels {
					grouping[l] = true
				}
				for _, l := range n.VectorMatching.Include {
					grouping[l] = true
				}
			}
		}
		return nil
	})
	o.Grouping = append(o.Grouping, slices.Sorted(maps.Keys(grouping))...)
	return o
}
