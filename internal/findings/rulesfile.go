package findings

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DocPages names the documentation pages rules link to by a short key, the doc field of a rules
// file: each page's address is written once, however many rules (of however many packages) cite it.
type DocPages map[string]string

// The fields of a rule in a rules file, in the order they are written.
var ruleFields = []string{"code", "name", "section", "severity", "title", "remediation", "doc"}

// ParseRules reads a package's rules file (its embedded rules.yaml): a list of rules, each a
// mapping of the fields code, name, section, severity, title, remediation and doc, all strings
// and all required. A section must be one of sections and a doc key must be in one of docs (the
// rule gets that page's address); the severity is skipped, info, warning or error. An unknown or
// repeated field, a code or name given twice, or a value that breaks these rules is an error that
// names the line, the rule's code and the field.
func ParseRules(data []byte, sections []string, docs ...DocPages) ([]Rule, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("rules file: line %d: want a list of rules", root.Line)
	}
	// A second document would be rules nobody reads.
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		return nil, fmt.Errorf("rules file: line %d: want one YAML document, the list of rules", more.Line)
	}
	var out []Rule
	codes, names := map[string]int{}, map[string]int{}
	for _, n := range root.Content[0].Content {
		r, err := parseRule(n, sections, docs)
		if err != nil {
			return nil, err
		}
		if l, dup := codes[r.Code]; dup {
			return nil, fmt.Errorf("rules file: line %d: rule %s: code: already used by the rule at line %d", n.Line, r.Code, l)
		}
		if l, dup := names[strings.ToLower(r.Name)]; dup {
			return nil, fmt.Errorf("rules file: line %d: rule %s: name: %q already used by the rule at line %d", n.Line, r.Code, r.Name, l)
		}
		codes[r.Code], names[strings.ToLower(r.Name)] = n.Line, n.Line
		out = append(out, r)
	}
	return out, nil
}

// parseRule reads one rule of a rules file.
func parseRule(n *yaml.Node, sections []string, docs []DocPages) (Rule, error) {
	if n.Kind != yaml.MappingNode {
		return Rule{}, fmt.Errorf("rules file: line %d: want a rule (a mapping of %s)", n.Line, strings.Join(ruleFields, ", "))
	}
	// The code names the rule in every error, so it is read first.
	code := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "code" {
			code = n.Content[i+1].Value
			break
		}
	}
	if strings.TrimSpace(code) == "" {
		return Rule{}, fmt.Errorf("rules file: line %d: rule without a code", n.Line)
	}
	fail := func(line int, field, format string, args ...any) error {
		return fmt.Errorf("rules file: line %d: rule %s: %s: %s", line, code, field, fmt.Sprintf(format, args...))
	}
	values := map[string]string{}
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(ruleFields, k.Value):
			return Rule{}, fail(k.Line, k.Value, "unknown field (want %s)", strings.Join(ruleFields, ", "))
		case lines[k.Value] != 0:
			return Rule{}, fail(k.Line, k.Value, "given twice (first at line %d)", lines[k.Value])
		case v.Kind != yaml.ScalarNode || v.Tag != "!!str":
			return Rule{}, fail(v.Line, k.Value, "want a string")
		}
		values[k.Value], lines[k.Value] = v.Value, k.Line
	}
	for _, f := range ruleFields {
		if strings.TrimSpace(values[f]) == "" {
			return Rule{}, fail(cmp.Or(lines[f], n.Line), f, "missing or empty")
		}
	}
	if !slices.Contains(sections, values["section"]) {
		return Rule{}, fail(lines["section"], "section", "unknown section %q (want one of %s)", values["section"], strings.Join(sections, ", "))
	}
	sev, err := ParseSeverity(values["severity"])
	if err != nil || sev == OK {
		return Rule{}, fail(lines["severity"], "severity", "unknown severity %q (want one of %s)", values["severity"], strings.Join(severityNames[Skipped:], ", "))
	}
	url, err := docURL(docs, values["doc"])
	if err != nil {
		return Rule{}, fail(lines["doc"], "doc", "%v", err)
	}
	return Rule{
		Code: code, Name: values["name"], Section: values["section"], Severity: sev,
		Title: values["title"], Remediation: values["remediation"], DocURL: url,
	}, nil
}

// docURL looks a doc key up in the tables; a key two tables give different pages is an error.
func docURL(docs []DocPages, key string) (string, error) {
	url := ""
	for _, d := range docs {
		if u, ok := d[key]; ok {
			if url != "" && u != url {
				return "", fmt.Errorf("doc key %q names two pages, %s and %s", key, url, u)
			}
			url = u
		}
	}
	if url == "" {
		return "", fmt.Errorf("unknown doc key %q", key)
	}
	return url, nil
}

// MustParseRules is ParseRules for the rules file a package embeds: an error is a bug that any
// test of the package finds (the file is read when the package is initialised), so it panics.
func MustParseRules(data []byte, sections []string, docs ...DocPages) []Rule {
	rs, err := ParseRules(data, sections, docs...)
	if err != nil {
		panic(err)
	}
	return rs
}

// MustRule returns the rule of list with the code. The Go names of a package's rules are such
// lookups in the list its rules file gives; a code missing from it is a bug that any test of the
// package finds, so it panics.
func MustRule(list []Rule, code string) Rule {
	for _, r := range list {
		if r.Code == code {
			return r
		}
	}
	panic(fmt.Sprintf("findings: no rule %s in the list", code))
}
