package findings

import (
	"github.com/nodekeeper/nodekeeper/internal/typemeta"

	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Formats accepted by Print.
var Formats = []string{"text", "json", "junit"}

// PrintOptions tune the text printer.
type PrintOptions struct {
	// Color uses ANSI colours (the caller decides: a terminal and no NO_COLOR).
	Color bool
	// MaxPerRule limits the resources listed under one rule in text output (0 = 20; negative =
	// all). JSON and JUnit always carry everything.
	MaxPerRule int
	// Catalog gives each rule's title for its heading line (nil: the rule's name).
	Catalog *Catalog
}

// Print writes the report in format ("text", "json" or "junit").
func Print(w io.Writer, r *Report, format string, o PrintOptions) error {
	switch format {
	case "text", "":
		return PrintText(w, r, o)
	case "json":
		return PrintJSON(w, r)
	case "junit":
		return PrintJUnit(w, r)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
	ansiGrey   = "\x1b[90m"
)

func severityStyle(s Severity) (mark, colour string) {
	switch s {
	case Error:
		return "✖", ansiRed
	case Warning:
		return "▲", ansiYellow
	case Info:
		return "●", ansiCyan
	case Skipped:
		return "○", ansiGrey
	}
	return "✔", ansiGreen
}

func scoreColour(score int) string {
	switch {
	case score >= 90:
		return ansiGreen
	case score >= 70:
		return ansiYellow
	}
	return ansiRed
}

// PrintText writes the grouped human report: sections, then per rule the resources it hit.
//
// Resources, messages and evidence carry text written by others (a Node's kubeletVersion, a
// kubelet log line, an object name), so every field goes through textsafe.Escape before it reaches
// the terminal; the only escape sequences in the output are the colours this printer adds itself.
func PrintText(w io.Writer, r *Report, o PrintOptions) error {
	esc := textsafe.Escape
	paint := func(colour, s string) string {
		if !o.Color || colour == "" {
			return s
		}
		return colour + s + ansiReset
	}
	limit := o.MaxPerRule
	if limit == 0 {
		limit = 20
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s  %s\n", paint(ansiBold, "nodekeeper "+esc(r.Tool)), esc(r.Target), r.Generated.Format("2006-01-02T15:04:05Z"))
	total := map[Severity]int{}
	for _, s := range r.Sections() {
		for k, v := range s.Counts() {
			total[k] += v
		}
	}
	if score, ok := r.Score(); ok {
		fmt.Fprintf(&b, "score %s  ", paint(scoreColour(score), fmt.Sprintf("%d (%s)", score, Grade(score))))
	}
	fmt.Fprintf(&b, "errors %d  warnings %d  info %d  skipped %d\n", total[Error], total[Warning], total[Info], total[Skipped])
	if r.Partial != "" {
		fmt.Fprintf(&b, "%s %s\n", paint(ansiBold, "partial:"), esc(r.Partial))
	}

	for _, s := range r.Sections() {
		b.WriteString("\n")
		fmt.Fprintf(&b, "%s", paint(ansiBold, strings.ToUpper(esc(s.Title))))
		if s.Checked > 0 {
			fmt.Fprintf(&b, "  %d checked", s.Checked)
		}
		if score, ok := s.Score(); ok {
			fmt.Fprintf(&b, "  score %s", paint(scoreColour(score), fmt.Sprintf("%d (%s)", score, Grade(score))))
		}
		b.WriteString("\n")
		if len(s.Findings) == 0 {
			mark, colour := severityStyle(OK)
			fmt.Fprintf(&b, "  %s no findings\n", paint(colour, mark))
			continue
		}
		for _, grp := range Groups(s.Findings) {
			group := grp.Findings
			f := group[0]
			mark, colour := severityStyle(f.Severity)
			title := f.Name
			if rule, ok := o.Catalog.lookup(f.Code); ok {
				title = rule.Title
			}
			fmt.Fprintf(&b, "  %s %s %s", paint(colour, mark), paint(colour, esc(f.Code)), esc(title))
			if len(group) > 1 {
				fmt.Fprintf(&b, " (%d)", len(group))
			}
			b.WriteString("\n")
			for k, g := range group {
				if limit > 0 && k == limit {
					fmt.Fprintf(&b, "      ... and %d more (-o json lists all)\n", len(group)-limit)
					break
				}
				fmt.Fprintf(&b, "      %s: %s\n", esc(g.Resource), esc(g.Message))
				for _, e := range g.Evidence {
					fmt.Fprintf(&b, "        %s\n", paint(ansiGrey, esc(e)))
				}
				if grp.PerObject && g.Remediation != "" {
					fmt.Fprintf(&b, "        fix: %s\n", esc(g.Remediation))
				}
			}
			if grp.Fix != "" {
				fmt.Fprintf(&b, "      fix: %s\n", esc(grp.Fix))
			}
			if f.DocURL != "" {
				fmt.Fprintf(&b, "      doc: %s\n", paint(ansiGrey, esc(f.DocURL)))
			}
		}
	}
	if len(r.Ignored) > 0 {
		fmt.Fprintf(&b, "\nignored: %s\n", esc(strings.Join(r.Ignored, ", ")))
	}
	if len(r.Stats) > 0 || r.Duration > 0 {
		b.WriteString("\n")
		var parts []string
		if r.Duration > 0 {
			parts = append(parts, fmt.Sprintf("took %.2fs", r.Duration.Seconds()))
		}
		keys := make([]string, 0, len(r.Stats))
		for k := range r.Stats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", esc(k), r.Stats[k]))
		}
		fmt.Fprintf(&b, "%s\n", paint(ansiGrey, strings.Join(parts, ", ")))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonSection struct {
	Name     string         `json:"name"`
	Title    string         `json:"title"`
	Checked  int            `json:"checked"`
	Score    *int           `json:"score,omitempty"`
	Grade    string         `json:"grade,omitempty"`
	Counts   map[string]int `json:"counts"`
	Findings []Finding      `json:"findings"`
}

type jsonReport struct {
	// APIVersion and Kind (DoctorReport, BundleReport) identify the document (docs/schemas).
	APIVersion      string           `json:"apiVersion"`
	Kind            string           `json:"kind"`
	Tool            string           `json:"tool"`
	Target          string           `json:"target"`
	Generated       string           `json:"generated"`
	DurationSeconds float64          `json:"durationSeconds,omitempty"`
	Score           *int             `json:"score,omitempty"`
	Grade           string           `json:"grade,omitempty"`
	MaxSeverity     Severity         `json:"maxSeverity"`
	ExitCode        int              `json:"exitCode"`
	Partial         bool             `json:"partial,omitempty"`
	PartialReason   string           `json:"partialReason,omitempty"`
	Counts          map[string]int   `json:"counts"`
	Stats           map[string]int64 `json:"stats,omitempty"`
	Ignored         []string         `json:"ignored,omitempty"`
	Sections        []jsonSection    `json:"sections"`
}

// APIVersion is the apiVersion of the JSON report.
const APIVersion = typemeta.APIVersion

// KindOf is the kind of the JSON report of tool: DoctorReport for doctor, BundleReport for bundle.
func KindOf(tool string) string {
	if tool == "" {
		return "Report"
	}
	return strings.ToUpper(tool[:1]) + tool[1:] + "Report"
}

// PrintJSON writes the report as one JSON document (indented).
func PrintJSON(w io.Writer, r *Report) error {
	out := jsonReport{
		APIVersion: APIVersion, Kind: KindOf(r.Tool),
		Tool: r.Tool, Target: r.Target, Generated: r.Generated.Format("2006-01-02T15:04:05Z"),
		DurationSeconds: r.Duration.Seconds(), MaxSeverity: r.MaxSeverity(), Counts: map[string]int{},
		Stats: r.Stats, Ignored: r.Ignored, Partial: r.Partial != "", PartialReason: r.Partial,
	}
	out.ExitCode = ExitCodeAt(out.MaxSeverity, r.FailOn)
	if score, ok := r.Score(); ok {
		out.Score, out.Grade = &score, Grade(score)
	}
	for _, s := range r.Sections() {
		js := jsonSection{Name: s.Name, Title: s.Title, Checked: s.Checked, Counts: map[string]int{}, Findings: s.Findings}
		if js.Findings == nil {
			js.Findings = []Finding{}
		}
		if score, ok := s.Score(); ok {
			js.Score, js.Grade = &score, Grade(score)
		}
		for k, v := range s.Counts() {
			js.Counts[k.String()] = v
			out.Counts[k.String()] += v
		}
		out.Sections = append(out.Sections, js)
	}
	enc := json.NewEncoder(textsafe.NewJSONWriter(w))
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Failures  int             `xml:"failures,attr"`
	Errors    int             `xml:"errors,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Timestamp string          `xml:"timestamp,attr"`
	Props     *junitPropsList `xml:"properties,omitempty"`
	Cases     []junitCase     `xml:"testcase"`
}

type junitPropsList struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// escapeFinding is f with the text others may have written escaped for a terminal.
func escapeFinding(f Finding) Finding {
	f.Resource, f.Message, f.Remediation = textsafe.Escape(f.Resource), textsafe.Escape(f.Message), textsafe.Escape(f.Remediation)
	ev := make([]string, len(f.Evidence))
	for i, e := range f.Evidence {
		ev[i] = textsafe.Escape(e)
	}
	f.Evidence = ev
	return f
}

// PrintJUnit writes the report as JUnit XML for CI: one test suite per section, one failing test
// case per warning or error, a skipped case per skipped check, a passing case per info finding,
// and one passing case per section for the resources without findings.
func PrintJUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: "nodekeeper " + r.Tool, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
	for _, s := range r.Sections() {
		suite := junitSuite{Name: s.Name, Timestamp: r.Generated.Format("2006-01-02T15:04:05")}
		if score, ok := s.Score(); ok {
			suite.Props = &junitPropsList{Props: []junitProp{{Name: "score", Value: fmt.Sprint(score)}, {Name: "grade", Value: Grade(score)}, {Name: "checked", Value: fmt.Sprint(s.Checked)}}}
		}
		class := "nodekeeper." + r.Tool + "." + s.Name
		withFindings := map[string]bool{}
		for _, f := range s.Findings {
			withFindings[f.Resource] = true
			// CI systems show these fields on terminals and web pages, and Go's XML encoder replaces
			// only C0 controls: the text others wrote is escaped as in the text report.
			f = escapeFinding(f)
			c := junitCase{Name: f.Code + " " + f.Name + " " + f.Resource, Classname: class}
			text := f.Message
			if len(f.Evidence) > 0 {
				text += "\n" + strings.Join(f.Evidence, "\n")
			}
			if f.Remediation != "" {
				text += "\nfix: " + f.Remediation
			}
			if f.DocURL != "" {
				text += "\ndoc: " + f.DocURL
			}
			switch f.Severity {
			case Error, Warning:
				c.Failure = &junitFailure{Message: f.Message, Type: f.Severity.String(), Text: text}
				suite.Failures++
			case Skipped:
				c.Skipped = &junitSkipped{Message: f.Message}
				suite.Skipped++
			default:
				c.SystemOut = text
			}
			suite.Cases = append(suite.Cases, c)
		}
		switch passed := s.Checked - len(withFindings); {
		case s.Checked == 0 && len(s.Findings) == 0:
			suite.Cases = append(suite.Cases, junitCase{Name: "nothing to check", Classname: class})
		case passed > 0:
			suite.Cases = append(suite.Cases, junitCase{Name: fmt.Sprintf("%d of %d resources without findings", passed, s.Checked), Classname: class})
		}
		suite.Tests = len(suite.Cases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Skipped += suite.Skipped
		out.Suites = append(out.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
