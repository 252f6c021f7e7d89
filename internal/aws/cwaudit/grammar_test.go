package cwaudit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// The queries and the filter pattern nodekeeper sends are checked against the syntax CloudWatch
// documents, by a small parser of the subset they use, and what they select is computed from the
// parsed expression, not from a literal comparison of the text:
//
//   - Logs Insights query syntax: commands separated by "|" (CWL_QuerySyntax.html), fields
//     (CWL_QuerySyntax-Fields.html), filter with comparison operators, "and"/"or"/"not",
//     "in [...]", "like /regex/" (CWL_QuerySyntax-Filter.html), stats with count(*), "as" and
//     "by bin(period)" (CWL_QuerySyntax-Stats.html, CWL_QuerySyntax-operations-functions.html),
//     sort ... asc|desc (CWL_QuerySyntax-Sort.html), limit, at most 10,000
//     (CWL_QuerySyntax-Limit.html); all under https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/.
//   - Filter pattern syntax for JSON log events: { SELECTOR OPERATOR VALUE } with selectors $.a.b,
//     "=" and "!=" for strings (with * as wildcard), = != < <= > >= for numbers, && and || with
//     parentheses (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html);
//     FilterLogEvents takes at most 1,024 characters of filterPattern (API reference).

// ---- Logs Insights ----

type itok struct {
	kind string // ident, string, regex, number, duration, op, punct
	text string
}

var durationRE = regexp.MustCompile(`^[0-9]+(ms|s|m|h|d|w|mo|q|y)$`)

// lexInsights splits a query into tokens; a "/" after "like" opens a regular expression.
func lexInsights(q string) ([]itok, error) {
	var out []itok
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'', c == '/' && len(out) > 0 && out[len(out)-1] == (itok{"ident", "like"}):
			kind := "string"
			if c == '/' {
				kind = "regex"
			}
			j := closing(q, i)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %s at %d", kind, i)
			}
			out = append(out, itok{kind, q[i+1 : j]})
			i = j + 1
		case strings.ContainsRune("|,()[]*", rune(c)):
			out = append(out, itok{"punct", string(c)})
			i++
		case strings.ContainsRune("=!<>", rune(c)):
			j := i + 1
			if j < len(q) && q[j] == '=' {
				j++
			}
			op := q[i:j]
			if op == "!" {
				return nil, fmt.Errorf("lone ! at %d", i)
			}
			out = append(out, itok{"op", op})
			i = j
		case c == '@' || c == '_' || c == '.' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)):
			j := i
			for j < len(q) && (q[j] == '@' || q[j] == '_' || q[j] == '.' || unicode.IsLetter(rune(q[j])) || unicode.IsDigit(rune(q[j]))) {
				j++
			}
			w := q[i:j]
			kind := "ident"
			if _, err := strconv.ParseFloat(w, 64); err == nil {
				kind = "number"
			} else if durationRE.MatchString(w) {
				kind = "duration"
			} else if unicode.IsDigit(rune(w[0])) {
				return nil, fmt.Errorf("bad token %q", w)
			}
			out = append(out, itok{kind, w})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	return out, nil
}

// closing is the index of the delimiter that closes the one at q[open] (a backslash escapes
// the next byte), or -1.
func closing(q string, open int) int {
	for j := open + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			j++
		case q[open]:
			return j
		}
	}
	return -1
}

// insightsQuery is a parsed query: its commands, and the filter expressions to evaluate.
type insightsQuery struct {
	commands []string
	filters  []iexpr
	limit    int
}

// iexpr is a filter expression evaluated on one log event's fields.
type iexpr func(fields func(string) (any, bool)) bool

type iparser struct {
	toks []itok
	pos  int
}

func (p *iparser) peek() itok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return itok{}
}

func (p *iparser) next() itok { t := p.peek(); p.pos++; return t }

func (p *iparser) expect(kind, text string) error {
	if t := p.next(); t.kind != kind || (text != "" && t.text != text) {
		return fmt.Errorf("want %s %q, got %s %q", kind, text, t.kind, t.text)
	}
	return nil
}

var identRE = regexp.MustCompile(`^@?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

func (p *iparser) field() (string, error) {
	t := p.next()
	if t.kind != "ident" || !identRE.MatchString(t.text) {
		return "", fmt.Errorf("want a field name, got %q", t.text)
	}
	return t.text, nil
}

func parseInsights(q string) (*insightsQuery, error) {
	toks, err := lexInsights(q)
	if err != nil {
		return nil, err
	}
	p := &iparser{toks: toks}
	out := &insightsQuery{}
	for {
		cmd := p.next()
		if cmd.kind != "ident" {
			return nil, fmt.Errorf("want a command, got %q", cmd.text)
		}
		out.commands = append(out.commands, cmd.text)
		switch cmd.text {
		case "fields":
			for {
				if _, err := p.field(); err != nil {
					return nil, err
				}
				if p.peek() != (itok{"punct", ","}) {
					break
				}
				p.next()
			}
		case "filter":
			e, err := p.or()
			if err != nil {
				return nil, fmt.Errorf("filter: %w", err)
			}
			out.filters = append(out.filters, e)
		case "stats":
			if err := p.stats(); err != nil {
				return nil, fmt.Errorf("stats: %w", err)
			}
		case "sort":
			if _, err := p.field(); err != nil {
				return nil, err
			}
			if t := p.peek(); t.kind == "ident" && (t.text == "asc" || t.text == "desc") {
				p.next()
			}
		case "limit":
			n, err := strconv.Atoi(p.next().text)
			if err != nil || n < 1 || n > 10000 {
				return nil, fmt.Errorf("limit takes 1 to 10000 rows")
			}
			out.limit = n
		default:
			return nil, fmt.Errorf("unknown command %q", cmd.text)
		}
		if p.pos == len(p.toks) {
			return out, nil
		}
		if err := p.expect("punct", "|"); err != nil {
			return nil, fmt.Errorf("after %s: %w", cmd.text, err)
		}
	}
}

func (p *iparser) stats() error {
	for {
		fn := p.next()
		if fn.kind != "ident" || !map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true}[fn.text] {
			return fmt.Errorf("want an aggregate function, got %q", fn.text)
		}
		if err := p.expect("punct", "("); err != nil {
			return err
		}
		if p.peek() == (itok{"punct", "*"}) {
			if fn.text != "count" {
				return fmt.Errorf("%s(*)", fn.text)
			}
			p.next()
		} else if _, err := p.field(); err != nil {
			return err
		}
		if err := p.expect("punct", ")"); err != nil {
			return err
		}
		if p.peek() == (itok{"ident", "as"}) {
			p.next()
			if _, err := p.field(); err != nil {
				return err
			}
		}
		if p.peek() != (itok{"punct", ","}) {
			break
		}
		p.next()
	}
	if p.peek() != (itok{"ident", "by"}) {
		return nil
	}
	p.next()
	if p.peek() == (itok{"ident", "bin"}) {
		p.next()
		if err := p.expect("punct", "("); err != nil {
			return err
		}
		if t := p.next(); t.kind != "duration" {
			return fmt.Errorf("bin takes a period like 5m, got %q", t.text)
		}
		return p.expect("punct", ")")
	}
	_, err := p.field()
	return err
}

// leftFold parses operand (operator operand)..., joining the operands from the left; operator
// consumes the operator when it comes next. Both grammars' "or" and "and" are such chains.
func leftFold[E any](operand func() (E, error), operator func() bool, join func(a, b E) E) (E, error) {
	l, err := operand()
	for err == nil && operator() {
		var r E
		if r, err = operand(); err == nil {
			l = join(l, r)
		}
	}
	return l, err
}

func (p *iparser) or() (iexpr, error)  { return leftFold(p.and, p.word("or"), iOr) }
func (p *iparser) and() (iexpr, error) { return leftFold(p.unary, p.word("and"), iAnd) }

func iOr(a, b iexpr) iexpr  { return func(f func(string) (any, bool)) bool { return a(f) || b(f) } }
func iAnd(a, b iexpr) iexpr { return func(f func(string) (any, bool)) bool { return a(f) && b(f) } }

// word is the operator that is the keyword w.
func (p *iparser) word(w string) func() bool {
	return func() bool {
		if p.peek() != (itok{"ident", w}) {
			return false
		}
		p.next()
		return true
	}
}

func (p *iparser) unary() (iexpr, error) {
	switch p.peek() {
	case itok{"ident", "not"}:
		p.next()
		e, err := p.unary()
		return func(f func(string) (any, bool)) bool { return !e(f) }, err
	case itok{"punct", "("}:
		p.next()
		e, err := p.or()
		if err == nil {
			err = p.expect("punct", ")")
		}
		return e, err
	}
	return p.comparison()
}

func (p *iparser) literal() (any, error) {
	t := p.next()
	switch t.kind {
	case "string":
		return t.text, nil
	case "number":
		return strconv.ParseFloat(t.text, 64)
	}
	return nil, fmt.Errorf("want a string or number, got %q", t.text)
}

func (p *iparser) comparison() (iexpr, error) {
	name, err := p.field()
	if err != nil {
		return nil, err
	}
	t := p.next()
	switch {
	case t == itok{"ident", "like"}:
		r := p.next()
		var re *regexp.Regexp
		switch r.kind {
		case "regex":
			re, err = regexp.Compile(r.text)
		case "string": // like "text": a substring
			re, err = regexp.Compile(regexp.QuoteMeta(r.text))
		default:
			err = fmt.Errorf("like takes /regex/ or a string, got %q", r.text)
		}
		if err != nil {
			return nil, err
		}
		return func(f func(string) (any, bool)) bool {
			v, ok := f(name)
			return ok && re.MatchString(fmt.Sprint(v))
		}, nil
	case t == itok{"ident", "in"}:
		if err := p.expect("punct", "["); err != nil {
			return nil, err
		}
		var set []any
		for {
			v, err := p.literal()
			if err != nil {
				return nil, err
			}
			set = append(set, v)
			if p.peek() != (itok{"punct", ","}) {
				break
			}
			p.next()
		}
		if err := p.expect("punct", "]"); err != nil {
			return nil, err
		}
		return func(f func(string) (any, bool)) bool {
			v, ok := f(name)
			for _, s := range set {
				if ok && equal(v, s) {
					return true
				}
			}
			return false
		}, nil
	case t.kind == "op":
		want, err := p.literal()
		if err != nil {
			return nil, err
		}
		return func(f func(string) (any, bool)) bool {
			v, ok := f(name)
			return ok && compare(v, t.text, want)
		}, nil
	}
	return nil, fmt.Errorf("want an operator after %s, got %q", name, t.text)
}

func equal(v, want any) bool { return compare(v, "=", want) }

// compare applies a comparison operator: numbers as numbers, strings as strings.
func compare(v any, op string, want any) bool {
	if w, ok := want.(float64); ok {
		n, ok := v.(float64)
		if !ok {
			return false
		}
		switch op {
		case "=":
			return n == w
		case "!=":
			return n != w
		case "<":
			return n < w
		case "<=":
			return n <= w
		case ">":
			return n > w
		case ">=":
			return n >= w
		}
		return false
	}
	s, ok := v.(string)
	switch op {
	case "=":
		return ok && s == want
	case "!=":
		return !ok || s != want
	}
	return false
}

// jsonFields looks fields of a JSON message up by dotted path, as Logs Insights discovers them,
// and the system fields @message and @logStream.
func jsonFields(stream, message string) func(string) (any, bool) {
	var doc map[string]any
	_ = json.Unmarshal([]byte(message), &doc)
	return func(name string) (any, bool) {
		switch name {
		case "@message":
			return message, true
		case "@logStream":
			return stream, true
		}
		var cur any = doc
		for _, part := range strings.Split(name, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[part]; !ok {
				return nil, false
			}
		}
		return cur, cur != nil
	}
}

// ---- filter patterns ----

type pparser struct {
	s   string
	pos int
}

func (p *pparser) space() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *pparser) eat(lit string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], lit) {
		p.pos += len(lit)
		return true
	}
	return false
}

// pexpr is a filter pattern expression evaluated on a decoded JSON event.
type pexpr func(doc map[string]any) bool

func parsePattern(s string) (pexpr, error) {
	if len(s) > 1024 {
		return nil, fmt.Errorf("%d characters: FilterLogEvents takes at most 1024", len(s))
	}
	p := &pparser{s: s}
	if !p.eat("{") {
		return nil, fmt.Errorf("a JSON filter pattern starts with {")
	}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if !p.eat("}") {
		return nil, fmt.Errorf("want } at %d", p.pos)
	}
	if p.space(); p.pos != len(s) {
		return nil, fmt.Errorf("text after } at %d", p.pos)
	}
	return e, nil
}

func (p *pparser) or() (pexpr, error)  { return leftFold(p.and, p.operator("||"), pOr) }
func (p *pparser) and() (pexpr, error) { return leftFold(p.atom, p.operator("&&"), pAnd) }

func pOr(a, b pexpr) pexpr  { return func(d map[string]any) bool { return a(d) || b(d) } }
func pAnd(a, b pexpr) pexpr { return func(d map[string]any) bool { return a(d) && b(d) } }

// operator is the operator lit.
func (p *pparser) operator(lit string) func() bool { return func() bool { return p.eat(lit) } }

var (
	selectorRE = regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\[[0-9]+\])+`)
	opRE       = regexp.MustCompile(`^(!=|<=|>=|=|<|>)`)
	numberRE   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?`)
	quotedRE   = regexp.MustCompile(`^"((?:[^"\\]|\\.)*)"`)
)

func (p *pparser) atom() (pexpr, error) {
	if p.eat("(") {
		e, err := p.or()
		if err == nil && !p.eat(")") {
			err = fmt.Errorf("want ) at %d", p.pos)
		}
		return e, err
	}
	p.space()
	sel := selectorRE.FindString(p.s[p.pos:])
	if sel == "" {
		return nil, fmt.Errorf("want a selector $.name at %d", p.pos)
	}
	p.pos += len(sel)
	path := strings.Split(strings.TrimPrefix(sel, "$."), ".")
	p.space()
	op := opRE.FindString(p.s[p.pos:])
	if op == "" {
		return nil, fmt.Errorf("want an operator after %s", sel)
	}
	p.pos += len(op)
	p.space()
	if m := quotedRE.FindStringSubmatch(p.s[p.pos:]); m != nil {
		if op != "=" && op != "!=" {
			return nil, fmt.Errorf("%s compares numbers, not the string %s", op, m[0])
		}
		p.pos += len(m[0])
		// "*" is a wildcard in string values.
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(m[1]), `\*`, ".*") + "$")
		return func(d map[string]any) bool {
			s, ok := lookup(d, path).(string)
			return ok && re.MatchString(s) == (op == "=")
		}, nil
	}
	num := numberRE.FindString(p.s[p.pos:])
	if num == "" {
		return nil, fmt.Errorf("want a quoted string or a number after %s %s", sel, op)
	}
	p.pos += len(num)
	want, _ := strconv.ParseFloat(num, 64)
	return func(d map[string]any) bool { return compare(lookup(d, path), op, want) }, nil
}

func lookup(d map[string]any, path []string) any {
	var cur any = d
	for _, part := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// ---- the tests ----

// recordingLogs is the fake CloudWatch Logs, recording each query and filter pattern sent.
type recordingLogs struct {
	*awsfake.Cloud
	mu       sync.Mutex
	queries  map[string]bool
	patterns map[string]bool
}

func (r *recordingLogs) StartQuery(ctx context.Context, in *cloudwatchlogs.StartQueryInput, o ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.StartQueryOutput, error) {
	r.mu.Lock()
	r.queries[*in.QueryString] = true
	r.mu.Unlock()
	return r.Cloud.StartQuery(ctx, in, o...)
}

func (r *recordingLogs) FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, o ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	r.mu.Lock()
	r.patterns[*in.FilterPattern] = true
	r.mu.Unlock()
	return r.Cloud.FilterLogEvents(ctx, in, o...)
}

// sentQueries reads a log through Insights (the plan's counting query, the windows) and through the
// FilterLogEvents fallback, and returns what was sent.
func sentQueries(t *testing.T) (queries, patterns []string) {
	t.Helper()
	rec := &recordingLogs{Cloud: newCloud(), queries: map[string]bool{}, patterns: map[string]bool{}}
	for i := 0; i < 400; i++ {
		at := t0.Add(time.Duration(i) * 5 * time.Second)
		rec.AddLogEvents(group, awsfake.LogEvent{Stream: "kube-apiserver-audit-1", Timestamp: at.UnixMilli(), Message: leaseRenewal(i, at)})
	}
	for _, deny := range []bool{false, true} {
		rec.Deny[nkaws.PermStartQuery] = deny
		src, err := cwaudit.New(rec, cwaudit.Options{LogGroup: group, Start: t0, End: t0.Add(time.Hour), PollInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(readAll(t, src)); n != 400 {
			t.Fatalf("read %d events, want 400", n)
		}
	}
	for q := range rec.queries {
		queries = append(queries, q)
	}
	for p := range rec.patterns {
		patterns = append(patterns, p)
	}
	if len(queries) < 2 || len(patterns) != 1 {
		t.Fatalf("sent %d queries and %d patterns: the read did not take both paths", len(queries), len(patterns))
	}
	return queries, patterns
}

// grammarEvents are audit events with what the selection must say of each, and the stream.
var grammarEvents = []struct {
	name, stream, message string
}{
	{"lease renewal by a kubelet", "kube-apiserver-audit-1", leaseRenewal(1, t0)},
	{"pod list by a controller", "kube-apiserver-audit-1", podList(2, t0)},
	{"node delete by a user", "kube-apiserver-audit-1", `{"kind":"Event","verb":"delete","user":{"username":"alice"},"objectRef":{"resource":"nodes","name":"ip-10-0-1-5.ec2.internal"},"responseStatus":{"code":200}}`},
	{"kubelet pod GET", "kube-apiserver-audit-1", `{"kind":"Event","verb":"get","user":{"username":"system:node:ip-10-0-1-5.ec2.internal"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}`},
	{"a user named like a kubelet elsewhere", "kube-apiserver-audit-1", `{"kind":"Event","verb":"get","user":{"username":"x-system:node:a"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}`},
	{"forbidden", "kube-apiserver-audit-1", `{"kind":"Event","verb":"list","user":{"username":"bob"},"objectRef":{"resource":"secrets"},"responseStatus":{"code":403}}`},
	{"throttled", "kube-apiserver-audit-1", `{"kind":"Event","verb":"list","user":{"username":"bob"},"objectRef":{"resource":"pods"},"responseStatus":{"code":429}}`},
	{"server error", "kube-apiserver-audit-1", `{"kind":"Event","verb":"list","user":{"username":"bob"},"objectRef":{"resource":"pods"},"responseStatus":{"code":503}}`},
	{"not found", "kube-apiserver-audit-1", `{"kind":"Event","verb":"get","user":{"username":"bob"},"objectRef":{"resource":"pods"},"responseStatus":{"code":404}}`},
	{"no objectRef", "kube-apiserver-audit-1", `{"kind":"Event","verb":"get","user":{"username":"bob"},"responseStatus":{"code":200}}`},
	{"lease event in the authenticator's stream", "authenticator-1", leaseRenewal(3, t0)},
}

// TestQueriesFollowTheInsightsGrammar: every query a read sends parses under the documented
// syntax, and its filters select exactly what cwaudit.Matches means (in the audit streams only).
func TestQueriesFollowTheInsightsGrammar(t *testing.T) {
	queries, _ := sentQueries(t)
	for _, q := range queries {
		parsed, err := parseInsights(q)
		if err != nil {
			t.Errorf("query does not parse: %v\n%s", err, q)
			continue
		}
		if parsed.commands[0] != "fields" || len(parsed.filters) != 2 {
			t.Errorf("query %q: commands %v, want fields then the two filters", q, parsed.commands)
		}
		if parsed.limit > cwaudit.RowLimit {
			t.Errorf("limit %d over Insights' row limit", parsed.limit)
		}
		for _, ev := range grammarEvents {
			fields := jsonFields(ev.stream, ev.message)
			got := true
			for _, f := range parsed.filters {
				got = got && f(fields)
			}
			want := strings.HasPrefix(ev.stream, cwaudit.StreamPrefix) && cwaudit.Matches(ev.message)
			if got != want {
				t.Errorf("%s: the query selects it %v, cwaudit.Matches %v\n%s", ev.name, got, want, q)
			}
		}
	}
}

// TestFilterPatternFollowsTheGrammar: the FilterLogEvents pattern parses under the documented
// JSON filter pattern syntax and selects exactly what cwaudit.Matches means.
func TestFilterPatternFollowsTheGrammar(t *testing.T) {
	_, patterns := sentQueries(t)
	match, err := parsePattern(patterns[0])
	if err != nil {
		t.Fatalf("the filter pattern does not parse: %v\n%s", err, patterns[0])
	}
	for _, ev := range grammarEvents {
		var doc map[string]any
		if err := json.Unmarshal([]byte(ev.message), &doc); err != nil {
			t.Fatal(err)
		}
		if got, want := match(doc), cwaudit.Matches(ev.message); got != want {
			t.Errorf("%s: the pattern selects it %v, cwaudit.Matches %v", ev.name, got, want)
		}
	}
}

// TestGrammarParsersRefuse: the parsers above refuse what the documented syntax does not allow,
// so that passing them means something.
func TestGrammarParsersRefuse(t *testing.T) {
	for _, q := range []string{
		"fields @timestamp, @message | filter objectRef.resource like /^unclosed",
		"fields @timestamp | limit 20000",
		"fields @timestamp | filter user.username in [\"a\", ]",
		"fields @timestamp | stats count(*) by bin(5 minutes)",
		"fields @timestamp | sort",
		"fields @timestamp filter x = 1",
		"fields @timestamp | grep x",
		"fields @timestamp | filter responseStatus.code >= ",
		"fields @timestamp | stats sum(*)",
		"fields @timestamp | filter x like /[/",
	} {
		if _, err := parseInsights(q); err == nil {
			t.Errorf("Insights parser accepts %q", q)
		}
	}
	for _, p := range []string{
		`$.objectRef.resource = "nodes"`,
		`{ $.objectRef.resource = "nodes" `,
		`{ objectRef.resource = "nodes" }`,
		`{ $.objectRef.resource > "nodes" }`,
		`{ $.a = 1 & $.b = 2 }`,
		`{ ($.a = 1 || $.b = 2 }`,
		`{ $.a = }`,
		`{ $.a = 1 } x`,
		"{ " + strings.Repeat(`($.objectRef.resource = "leases") || `, 40) + `$.a = 1 }`,
	} {
		if _, err := parsePattern(p); err == nil {
			t.Errorf("filter pattern parser accepts %q", p)
		}
	}
}
