package findings

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

// testRule is a complete rule of a rules file, with the fields given replaced (a field set to ""
// is left out).
func testRule(fields ...string) string {
	values := map[string]string{
		"code": "NK901", "name": "test-rule", "section": "nodes", "severity": "warning",
		"title": "a title", "remediation": "a fix", "doc": "page",
	}
	for i := 0; i+1 < len(fields); i += 2 {
		values[fields[i]] = fields[i+1]
	}
	var b strings.Builder
	sep := "- "
	for _, f := range ruleFields {
		if v := values[f]; v != "" {
			b.WriteString(sep + f + ": " + v + "\n")
			sep = "  "
		}
	}
	return b.String()
}

func TestParseRules(t *testing.T) {
	sections := []string{"nodes", "kubelet"}
	pages := DocPages{"page": "https://example.com/page", "other": "https://example.com/other"}
	shared := DocPages{"shared": "https://example.com/shared", "page": "https://example.com/page"}
	tests := []struct {
		name    string
		in      string
		docs    []DocPages
		want    []Rule
		wantErr string
	}{
		{
			name: "two rules, the second's page from the second table",
			in: testRule() + testRule("code", "NK902", "name", "second", "section", "kubelet", "severity", "skipped",
				"remediation", ">-\n    folded\n    over two lines", "doc", "shared"),
			want: []Rule{
				{Code: "NK901", Name: "test-rule", Section: "nodes", Severity: Warning, Title: "a title", Remediation: "a fix", DocURL: "https://example.com/page"},
				{Code: "NK902", Name: "second", Section: "kubelet", Severity: Skipped, Title: "a title", Remediation: "folded over two lines", DocURL: "https://example.com/shared"},
			},
		},
		{name: "a table may give a page another has too", in: testRule(), docs: []DocPages{pages, shared},
			want: []Rule{{Code: "NK901", Name: "test-rule", Section: "nodes", Severity: Warning, Title: "a title", Remediation: "a fix", DocURL: "https://example.com/page"}}},
		{name: "not YAML", in: "- code: [NK901\n", wantErr: "rules file: yaml: line 1"},
		{name: "empty file", in: "", wantErr: "rules file: EOF"},
		{name: "not a list", in: "code: NK901\n", wantErr: "line 1: want a list of rules"},
		{name: "a second document", in: testRule() + "---\n" + testRule("code", "NK902", "name", "second"), wantErr: "line 8: want one YAML document, the list of rules"},
		{name: "a second document that is not YAML", in: testRule() + "---\n- [\n", wantErr: "want one YAML document"},
		{name: "an item not a mapping", in: testRule() + "- NK902\n", wantErr: "line 8: want a rule (a mapping of code, name,"},
		{name: "no code", in: testRule("code", ""), wantErr: "line 1: rule without a code"},
		{name: "unknown field", in: testRule() + "  titel: a title\n", wantErr: `line 8: rule NK901: titel: unknown field (want code, name, section, severity, title, remediation, doc)`},
		{name: "field given twice", in: testRule() + "  title: again\n", wantErr: `line 8: rule NK901: title: given twice (first at line 5)`},
		{name: "value not a string", in: testRule("title", "[a, b]"), wantErr: `line 5: rule NK901: title: want a string`},
		{name: "number for a string", in: testRule("code", "901"), wantErr: `line 1: rule 901: code: want a string`},
		{name: "code not a string", in: testRule("code", "[NK901]"), wantErr: "line 1: rule without a code"},
		{name: "missing remediation", in: testRule("remediation", ""), wantErr: "line 1: rule NK901: remediation: missing or empty"},
		{name: "empty title", in: testRule("title", `""`), wantErr: "line 5: rule NK901: title: missing or empty"},
		{name: "blank title", in: testRule("title", `"  "`), wantErr: "line 5: rule NK901: title: missing or empty"},
		{name: "unknown section", in: testRule("section", "node"), wantErr: `line 3: rule NK901: section: unknown section "node" (want one of nodes, kubelet)`},
		{name: "unknown severity", in: testRule("severity", "fatal"), wantErr: `line 4: rule NK901: severity: unknown severity "fatal" (want one of skipped, info, warning, error)`},
		{name: "severity ok is no rule's", in: testRule("severity", "ok"), wantErr: `rule NK901: severity: unknown severity "ok"`},
		{name: "unknown doc key", in: testRule("doc", "pages"), wantErr: `line 7: rule NK901: doc: unknown doc key "pages"`},
		{name: "a URL for a doc key", in: testRule("doc", "https://example.com/page"), wantErr: `doc: unknown doc key "https://example.com/page"`},
		{name: "doc key with two pages", in: testRule("doc", "page"),
			docs:    []DocPages{pages, {"page": "https://example.com/elsewhere"}},
			wantErr: `rule NK901: doc: doc key "page" names two pages, https://example.com/page and https://example.com/elsewhere`},
		{name: "code given twice", in: testRule() + "\n" + testRule("name", "other"), wantErr: "line 9: rule NK901: code: already used by the rule at line 1"},
		{name: "name given twice, in another case", in: testRule() + testRule("code", "NK902", "name", "Test-Rule"),
			wantErr: `line 8: rule NK902: name: "Test-Rule" already used by the rule at line 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs := tc.docs
			if docs == nil {
				docs = []DocPages{pages, shared}
			}
			got, err := ParseRules([]byte(tc.in), sections, docs...)
			if textcheck.WantError(t, err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMustRule(t *testing.T) {
	list := []Rule{{Code: "NK901", Name: "a"}, {Code: "NK902", Name: "b"}}
	tests := []struct {
		code      string
		wantName  string
		wantPanic bool
	}{
		{code: "NK902", wantName: "b"},
		{code: "NK903", wantPanic: true},
		{code: "nk901", wantPanic: true}, // codes are matched exactly, as written in the Go names
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			defer func() {
				if p := recover(); (p != nil) != tc.wantPanic {
					t.Errorf("panic %v, want one: %v", p, tc.wantPanic)
				}
			}()
			if r := MustRule(list, tc.code); r.Name != tc.wantName {
				t.Errorf("rule %+v, want the one named %q", r, tc.wantName)
			}
		})
	}
}
