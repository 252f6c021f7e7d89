package explain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
	"github.com/nodekeeper/nodekeeper/internal/typemeta"
)

// Titles of the text report's parts (and of the page's sections).
const (
	TitleTimeline = "Timeline"
	TitleFindings = "Findings"
	TitleFixes    = "Fix (printed, never run)"
	TitleGaps     = "Gaps"
)

// JSON is the document: apiVersion, kind (NodeStory), then the story.
func JSON(s *Story) ([]byte, error) { return typemeta.Marshal(Kind, s) }

// WriteJSON writes the document and a newline, escaped as every JSON output is (textsafe).
func WriteJSON(w io.Writer, s *Story) error {
	b, err := JSON(s)
	if err != nil {
		return err
	}
	_, err = textsafe.NewJSONWriter(w).Write(append(b, '\n'))
	return err
}

// WriteYAML writes the same document as YAML.
func WriteYAML(w io.Writer, s *Story) error {
	b, err := JSON(s)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(b)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, textsafe.Escape(string(y)))
	return err
}

func esc(s string) string { return textsafe.Escape(s) }

// SourceText is a line's source as printed: "audit FILE:LINE", "bundle NAME FILE:LINE", or the
// source alone.
func SourceText(l Line) string {
	if l.Where != "" {
		return l.Source + " " + l.Where
	}
	return l.Source
}

// TimeText prints a line's time (UTC, to the second), "-" for a line without one.
func TimeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// WriteText prints the story kubectl's way: a header, the timeline as a table, the findings,
// the fixes and the gaps. Every text read from elsewhere is escaped.
func WriteText(w io.Writer, s *Story) error {
	tw := printers.GetNewTabWriter(w)
	tg := s.Target
	node := esc(tg.Node)
	if !tg.NodeExists {
		node += " (no Node object)"
	}
	fmt.Fprintf(tw, "Node:\t%s\n", node)
	fmt.Fprintf(tw, "Given as:\t%s %s\n", tg.As, esc(tg.Given))
	if tg.InstanceID != "" {
		fmt.Fprintf(tw, "Instance:\t%s\n", esc(tg.InstanceID))
	}
	if tg.Lease != "" {
		fmt.Fprintf(tw, "Lease:\t%s (%s)\n", esc(tg.Lease), esc(tg.LeaseClass))
	} else {
		fmt.Fprintf(tw, "Lease:\tnone\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s:\n", TitleTimeline)
	tw = printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "TIME\tSOURCE\tWHAT")
	for _, l := range s.Timeline {
		what := esc(l.What)
		if l.Gap {
			what = "GAP " + what
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", TimeText(l.Time), esc(SourceText(l)), what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s:\n", TitleFindings)
	if len(s.Findings) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, f := range s.Findings {
		fmt.Fprintf(w, "  %s %s %s: %s\n", f.Code, strings.ToUpper(f.Severity.String()), esc(f.Resource), esc(f.Message))
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "      %s\n", esc(e))
		}
	}
	fmt.Fprintf(w, "\n%s:\n", TitleFixes)
	if len(s.Fixes) == 0 {
		fmt.Fprintln(w, "  nothing to fix")
	}
	for i, f := range s.Fixes {
		fmt.Fprintf(w, "  %d. %s\n", i+1, esc(f))
	}
	if len(s.Gaps) > 0 {
		fmt.Fprintf(w, "\n%s:\n", TitleGaps)
		for _, g := range s.Gaps {
			fmt.Fprintf(w, "  %s: %s %s (%s)\n", g.Source, esc(g.Verb), esc(g.Resource), esc(g.Reason))
		}
	}
	_, err := fmt.Fprintf(w, "\nReads: %d Kubernetes API requests, %d AWS calls, %d gaps\n", s.Requests.Kubernetes, s.Requests.AWS, len(s.Gaps))
	return err
}
