// Package findings is the report model that `nodekeeper doctor` (live cluster) and `nodekeeper
// bundle` (EKS logs collector archive) share: rules with stable codes, findings against resources,
// sections with a popeye-like score, and the text, JSON and JUnit printers. A check never prints;
// it returns findings, so both commands print, filter (--ignore) and gate CI the same way.
package findings

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Severity orders findings. The zero value is OK (no finding).
type Severity int

const (
	OK Severity = iota
	// Skipped: the check could not run (missing permission, missing input); not a failure.
	Skipped
	Info
	Warning
	Error
)

var severityNames = []string{"ok", "skipped", "info", "warning", "error"}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity is the inverse of String.
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if n == s {
			return Severity(i), nil
		}
	}
	return OK, fmt.Errorf("unknown severity %q (want one of %s)", s, strings.Join(severityNames, ", "))
}

func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

func (s *Severity) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	v, err := ParseSeverity(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Exit codes by the highest severity in a report (docs/exit-codes.md): 3 when a finding is at
// or above the --fail-on threshold. 1 (the run itself failed) and 2 (bad usage) are the
// command's.
const (
	ExitOK       = 0
	ExitFindings = 3
)

// DefaultFailOn is the --fail-on threshold when none is given: a warning fails the run.
const DefaultFailOn = Warning

// FailNever is the --fail-on threshold "none": no severity reaches it.
const FailNever Severity = math.MaxInt

// FailOnNames are the values --fail-on accepts.
var FailOnNames = []string{"info", "warning", "error", "none"}

// ParseFailOn reads a --fail-on value: one of FailOnNames, a severity's name or none.
func ParseFailOn(s string) (Severity, error) {
	switch {
	case !slices.Contains(FailOnNames, s):
		return OK, fmt.Errorf("unknown --fail-on %q (want one of %s)", s, strings.Join(FailOnNames, ", "))
	case s == "none":
		return FailNever, nil
	}
	return ParseSeverity(s)
}

// ExitCode maps the highest severity of a report to the process exit code under the default
// threshold: ExitFindings for a warning or an error, else (info, skipped, nothing) ExitOK.
func ExitCode(max Severity) int { return ExitCodeAt(max, DefaultFailOn) }

// ExitCodeAt is ExitFindings when max is at or above failOn (OK, the zero value, means
// DefaultFailOn), else ExitOK.
func ExitCodeAt(max, failOn Severity) int {
	if failOn == OK {
		failOn = DefaultFailOn
	}
	if max >= failOn {
		return ExitFindings
	}
	return ExitOK
}

// Rule describes one check. Codes are stable: they appear in --ignore lists, CI configurations
// and docs, so a code is never reused for a different meaning.
type Rule struct {
	Code        string   `json:"code"`
	Name        string   `json:"name"`
	Section     string   `json:"section"`
	Severity    Severity `json:"severity"`
	Title       string   `json:"title"`
	Remediation string   `json:"remediation"`
	DocURL      string   `json:"doc"`
}

// Catalog is the set of rules one program knows: the lists of the packages that declare rules
// (internal/rules, doctor, bundle), put together by NewCatalog. --ignore, completion and the docs
// tests look rules up in it; nothing registers a rule behind the caller's back.
type Catalog struct {
	rules  []Rule // sorted by code
	byCode map[string]Rule
	byName map[string]Rule // lower-case names
}

// NewCatalog builds a catalog from rule lists. A rule listed twice (the same value) counts once;
// an incomplete rule, or two different rules with one code or one name, is an error.
func NewCatalog(lists ...[]Rule) (*Catalog, error) {
	c := &Catalog{byCode: map[string]Rule{}, byName: map[string]Rule{}}
	for _, l := range lists {
		for _, r := range l {
			if r.Code == "" || r.Name == "" || r.Section == "" || r.Title == "" || r.Remediation == "" || r.DocURL == "" {
				return nil, fmt.Errorf("findings: incomplete rule %+v", r)
			}
			if o, dup := c.byCode[r.Code]; dup {
				if o == r {
					continue
				}
				return nil, fmt.Errorf("findings: duplicate rule code %s", r.Code)
			}
			if _, dup := c.byName[strings.ToLower(r.Name)]; dup {
				return nil, fmt.Errorf("findings: duplicate rule name %s", r.Name)
			}
			c.byCode[r.Code], c.byName[strings.ToLower(r.Name)] = r, r
			c.rules = append(c.rules, r)
		}
	}
	sort.Slice(c.rules, func(i, j int) bool { return c.rules[i].Code < c.rules[j].Code })
	return c, nil
}

// MustCatalog is NewCatalog for rule lists declared in the program: an error is a bug that every
// test of the catalog's builder finds, so it panics.
func MustCatalog(lists ...[]Rule) *Catalog {
	c, err := NewCatalog(lists...)
	if err != nil {
		panic(err)
	}
	return c
}

// Rules returns the catalog's rules sorted by code.
func (c *Catalog) Rules() []Rule { return append([]Rule(nil), c.rules...) }

// Lookup finds a rule by code or name (case-insensitive).
func (c *Catalog) Lookup(codeOrName string) (Rule, bool) {
	if r, ok := c.byCode[strings.ToUpper(codeOrName)]; ok {
		return r, true
	}
	r, ok := c.byName[strings.ToLower(codeOrName)]
	return r, ok
}

// lookup is Lookup on a catalog that may be nil (none: nothing is found).
func (c *Catalog) lookup(codeOrName string) (Rule, bool) {
	if c == nil {
		return Rule{}, false
	}
	return c.Lookup(codeOrName)
}

// Finding is one result of a rule against one resource.
type Finding struct {
	Code        string   `json:"code"`
	Name        string   `json:"name"`
	Section     string   `json:"section"`
	Severity    Severity `json:"severity"`
	Resource    string   `json:"resource"`
	Message     string   `json:"message"`
	Remediation string   `json:"remediation,omitempty"`
	DocURL      string   `json:"doc,omitempty"`
	// Evidence holds supporting lines (log lines with their position, values read).
	Evidence []string `json:"evidence,omitempty"`
}

// New makes a finding of the rule's default severity.
func (r Rule) New(resource, format string, args ...any) Finding {
	return r.At(r.Severity, resource, format, args...)
}

// At makes a finding with an explicit severity (a check may escalate or soften its rule's default).
func (r Rule) At(sev Severity, resource, format string, args ...any) Finding {
	return Finding{
		Code: r.Code, Name: r.Name, Section: r.Section, Severity: sev, Resource: resource,
		Message: fmt.Sprintf(format, args...), Remediation: r.Remediation, DocURL: r.DocURL,
	}
}

// Skip makes a "skipped" finding: the check could not run for the reason given.
func (r Rule) Skip(resource, reason string) Finding {
	f := r.At(Skipped, resource, "skipped: %s", reason)
	f.Remediation = ""
	return f
}

// WithEvidence returns f with lines appended to its evidence.
func (f Finding) WithEvidence(lines ...string) Finding {
	f.Evidence = append(append([]string(nil), f.Evidence...), lines...)
	return f
}

// Noun is what a message counts, in the singular and the plural, so that counts read right.
type Noun struct{ One, Many string }

// Count writes n of the noun: "1 hostname change", "2 hostname changes", "0 hostname changes".
func (w Noun) Count(n int) string {
	if n == 1 {
		return "1 " + w.One
	}
	return fmt.Sprintf("%d %s", n, w.Many)
}

// Section groups the findings of one area (nodes, kubelet, aws-node, ...).
type Section struct {
	Name     string    `json:"name"`
	Title    string    `json:"title"`
	Checked  int       `json:"checked"`
	Findings []Finding `json:"findings"`
}

// Score is the share (0-100) of checked resources without a warning or an error, like popeye's
// section scores; ok is false when nothing was checked.
func (s *Section) Score() (score int, ok bool) {
	if s.Checked <= 0 {
		return 0, false
	}
	bad := map[string]bool{}
	for _, f := range s.Findings {
		if f.Severity >= Warning {
			bad[f.Resource] = true
		}
	}
	n := s.Checked - len(bad)
	if n < 0 {
		n = 0
	}
	return n * 100 / s.Checked, true
}

// Counts returns the number of findings per severity.
func (s *Section) Counts() map[Severity]int {
	c := map[Severity]int{}
	for _, f := range s.Findings {
		c[f.Severity]++
	}
	return c
}

// Grade turns a score into a letter: A (90+), B (80+), C (70+), D (60+), E (50+), F.
func Grade(score int) string {
	switch {
	case score >= 90:
		return "A"
	case score >= 80:
		return "B"
	case score >= 70:
		return "C"
	case score >= 60:
		return "D"
	case score >= 50:
		return "E"
	}
	return "F"
}

// Report is the whole result of one doctor or bundle run. It is safe for concurrent Add calls.
type Report struct {
	mu sync.Mutex

	Tool      string    `json:"tool"`
	Target    string    `json:"target"`
	Generated time.Time `json:"generated"`
	// Duration of the run.
	Duration time.Duration `json:"-"`
	// Stats are numbers about the run itself (requests made, nodes read).
	Stats   map[string]int64 `json:"stats,omitempty"`
	Ignored []string         `json:"ignored,omitempty"`
	// FailOn is the threshold the exit code is computed with (OK: DefaultFailOn).
	FailOn Severity `json:"-"`
	// Partial, when set, says why the report covers only part of its input (a cap was reached
	// while reading it): what was read before is reported, and the rest was not checked.
	Partial  string `json:"-"`
	sections []*Section
}

// SectionSpec names a report section and gives the title printed above it; a report's sections
// are listed in the order given to NewReport.
type SectionSpec struct {
	Name  string // the section's key: every finding of a rule of this section goes in it
	Title string // the heading, for people
}

// NewReport starts a report with its sections in display order (name and title pairs).
func NewReport(tool, target string, now time.Time, sections ...SectionSpec) *Report {
	r := &Report{Tool: tool, Target: target, Generated: now.UTC(), Stats: map[string]int64{}}
	for _, s := range sections {
		r.sections = append(r.sections, &Section{Name: s.Name, Title: s.Title})
	}
	return r
}

func (r *Report) section(name string) *Section {
	for _, s := range r.sections {
		if s.Name == name {
			return s
		}
	}
	s := &Section{Name: name, Title: name}
	r.sections = append(r.sections, s)
	return s
}

// Add records findings in their sections.
func (r *Report) Add(fs ...Finding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range fs {
		s := r.section(f.Section)
		s.Findings = append(s.Findings, f)
	}
}

// Checked counts n more resources examined in a section (the score's denominator).
func (r *Report) Checked(section string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.section(section).Checked += n
}

// AddStat adds v to a named run statistic.
func (r *Report) AddStat(name string, v int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Stats == nil {
		r.Stats = map[string]int64{}
	}
	r.Stats[name] += v
}

// Sections returns the sections in display order with findings sorted by severity (worst first),
// code and resource, so output is deterministic whatever order concurrent checks finished in.
func (r *Report) Sections() []*Section {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sections {
		sort.SliceStable(s.Findings, func(i, j int) bool {
			a, b := s.Findings[i], s.Findings[j]
			if a.Severity != b.Severity {
				return a.Severity > b.Severity
			}
			if a.Code != b.Code {
				return a.Code < b.Code
			}
			return a.Resource < b.Resource
		})
	}
	return append([]*Section(nil), r.sections...)
}

// Ignore drops the findings of the given rules (codes or names, looked up in cat). Unknown
// entries are an error so that a typo in a CI configuration does not silently ignore nothing.
func (r *Report) Ignore(cat *Catalog, codesOrNames []string) error {
	drop := map[string]bool{}
	for _, c := range codesOrNames {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		rule, ok := cat.Lookup(c)
		if !ok {
			return fmt.Errorf("--ignore %q: no such check code or name (see the docs for the list)", c)
		}
		drop[rule.Code] = true
		r.Ignored = append(r.Ignored, rule.Code)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sections {
		kept := s.Findings[:0]
		for _, f := range s.Findings {
			if !drop[f.Code] {
				kept = append(kept, f)
			}
		}
		s.Findings = kept
	}
	sort.Strings(r.Ignored)
	return nil
}

// MaxSeverity is the highest severity of any finding.
func (r *Report) MaxSeverity() Severity {
	r.mu.Lock()
	defer r.mu.Unlock()
	max := OK
	for _, s := range r.sections {
		for _, f := range s.Findings {
			if f.Severity > max {
				max = f.Severity
			}
		}
	}
	return max
}

// Score is the mean of the section scores (sections that checked nothing do not count).
func (r *Report) Score() (int, bool) {
	sum, n := 0, 0
	for _, s := range r.Sections() {
		if v, ok := s.Score(); ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / n, true
}

// Findings returns every finding in display order.
func (r *Report) Findings() []Finding {
	var out []Finding
	for _, s := range r.Sections() {
		out = append(out, s.Findings...)
	}
	return out
}
