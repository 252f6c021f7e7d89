package deploytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "deploy/prometheus/nodekeeper.rules.yaml"
	dashboardFile = "deploy/grafana/nodekeeper.json"
)

// copies are the files that must carry the canonical rules and dashboard: Helm can only read files
// inside the chart and kustomize only inside the kustomization, so each keeps its own copy.
var copies = []struct {
	from, to string
	wrap     func(canonical []byte) ([]byte, error)
}{
	{rulesFile, "deploy/helm/nodekeeper/files/nodekeeper.rules.yaml", nil},
	{dashboardFile, "deploy/helm/nodekeeper/files/nodekeeper-dashboard.json", nil},
	{dashboardFile, "deploy/kustomize/components/monitoring/nodekeeper-dashboard.json", nil},
	{rulesFile, "deploy/kustomize/components/monitoring/prometheusrule.yaml", wrapPrometheusRule},
}

// wrapPrometheusRule embeds the rule file's groups (comments included) as the spec of the
// kustomize component's PrometheusRule.
func wrapPrometheusRule(canonical []byte) ([]byte, error) {
	i := bytes.Index(canonical, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, fmt.Errorf("%s has no top-level groups: line", rulesFile)
	}
	var b bytes.Buffer
	b.WriteString(`# Generated from ` + rulesFile + ` by
# go test ./internal/test/deploytest -run TestCopiesInSync -update
# Edit that file, not this one.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: nodekeeper
  namespace: nodekeeper
  labels:
    app.kubernetes.io/name: nodekeeper
    app.kubernetes.io/component: controller
spec:
`)
	for _, line := range strings.SplitAfter(string(canonical[i+1:]), "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.Bytes(), nil
}

func TestCopiesInSync(t *testing.T) {
	for _, c := range copies {
		t.Run(c.to, func(t *testing.T) {
			want := readRepoFile(t, c.from)
			if c.wrap != nil {
				var err error
				if want, err = c.wrap(want); err != nil {
					t.Fatal(err)
				}
			}
			if *update {
				if err := os.WriteFile(repoPath(t, c.to), want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(repoPath(t, c.to))
			if err != nil {
				t.Fatalf("%v (run: go test ./internal/test/deploytest -run TestCopiesInSync -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is out of date with %s; run: go test ./internal/test/deploytest -run TestCopiesInSync -update", c.to, c.from)
			}
		})
	}
}

type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	var rf ruleFile
	if err := yaml.UnmarshalStrict(readRepoFile(t, rulesFile), &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// specGroups returns a PrometheusRule's spec.groups in the rule-file structure.
func specGroups(t *testing.T, u *unstructured.Unstructured) []ruleGroup {
	t.Helper()
	if u == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec")
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(data, &rf); err != nil {
		t.Fatalf("PrometheusRule %s spec: %v", u.GetName(), err)
	}
	return rf.Groups
}

// The chart (default alert values) and the kustomize component ship exactly the rule file's alerts.
func TestPrometheusRulesMatchRuleFile(t *testing.T) {
	want := loadRules(t).Groups
	helmRule := find(helmTemplate(t, "nodekeeper", "nodekeeper", "metrics: {prometheusRule: {enabled: true}}"), "PrometheusRule", "nodekeeper", "nodekeeper")
	kustomizeRule := find(kustomize(t, "deploy/kustomize/overlays/monitoring"), "PrometheusRule", "nodekeeper", "nodekeeper")
	for name, u := range map[string]*unstructured.Unstructured{"helm": helmRule, "kustomize": kustomizeRule} {
		if got := specGroups(t, u); !reflect.DeepEqual(got, want) {
			t.Errorf("%s PrometheusRule groups differ from %s:\n got %+v\nwant %+v", name, rulesFile, got, want)
		}
	}
}

// Every alert is complete (severity, summary, description, runbook), has a valid `for`, refers in
// its annotations only to labels its expression keeps, and uses only contract metrics.
func TestAlertRules(t *testing.T) {
	rf := loadRules(t)
	var exprs []promqlInput
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		if len(g.Rules) == 0 {
			t.Errorf("group %s has no rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s has a rule without alert name (recording rules are not expected)", g.Name)
				continue
			}
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s has no %s annotation", r.Alert, a)
				}
			}
			exprs = append(exprs, promqlInput{ID: r.Alert, Expr: r.Expr})
		}
	}
	for _, want := range []string{"NodekeeperLeakedLeasesGrowing", "NodekeeperZombieKubelets", "NodekeeperDown", "NodekeeperNoLeader", "NodekeeperLeaseDeletionErrors"} {
		if !seen[want] {
			t.Errorf("alert %s is missing", want)
		}
	}
	results := checkPromQL(t, exprs)
	// Each alert fires per cluster when one Prometheus scrapes many: every aggregation keeps the
	// cluster label (an expression that drops it, such as a bare absent(), would fire once for all
	// clusters and never say which).
	for id, res := range results {
		if !slices.Contains(res.Grouping, "cluster") {
			t.Errorf("%s: the expression keeps only %v; group by cluster too", id, res.Grouping)
		}
	}
	labelRef := regexp.MustCompile(`\$labels\.(\w+)`)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			res, ok := results[r.Alert]
			if !ok {
				continue
			}
			for _, a := range r.Annotations {
				for _, m := range labelRef.FindAllStringSubmatch(a, -1) {
					if !slices.Contains(res.Grouping, m[1]) {
						t.Errorf("%s: annotation uses $labels.%s but the expression keeps only %v", r.Alert, m[1], res.Grouping)
					}
				}
			}
		}
	}
}

type promqlInput struct {
	ID   string `json:"id"`
	Expr string `json:"expr"`
}

type promqlResult struct {
	ID        string `json:"id"`
	Error     string `json:"error"`
	Selectors []struct {
		Metric   string `json:"metric"`
		Matchers []struct {
			Name, Type, Value string
		} `json:"matchers"`
	} `json:"selectors"`
	Grouping []string `json:"grouping"`
}

// buildPromQLCheck builds bin/promqlcheck (its own module, with the Prometheus parser) once.
var buildPromQLCheck = sync.OnceValues(func() (string, error) {
	root, err := findRepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "promqlcheck")
	if _, err := run(filepath.Join(root, "internal", "test", "deploytest", "promqlcheck"), nil, "go", "build", "-o", bin, "."); err != nil {
		return "", fmt.Errorf("building promqlcheck: %w", err)
	}
	return bin, nil
})

// checkPromQL parses the expressions with the Prometheus parser (the promqlcheck module) and fails
// the test for a parse error or any use of a series or label outside the metrics contract.
func checkPromQL(t *testing.T, in []promqlInput) map[string]promqlResult {
	t.Helper()
	trackInputs(t, "internal/test/deploytest/promqlcheck")
	promqlBin := mustGet(t, buildPromQLCheck)
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(repoRoot(t), bytes.NewReader(data), promqlBin)
	if err != nil {
		t.Fatal(err)
	}
	var results []promqlResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("promqlcheck output: %v\n%s", err, out)
	}
	if len(results) != len(in) {
		t.Fatalf("promqlcheck answered %d results for %d expressions", len(results), len(in))
	}
	byID := map[string]promqlResult{}
	for i, r := range results {
		byID[r.ID] = r
		for _, p := range contractViolations(r) {
			t.Errorf("%s: %s\n  expr: %s", r.ID, p, in[i].Expr)
		}
	}
	return byID
}

// contractViolations lists what an expression uses outside the metrics contract.
func contractViolations(r promqlResult) []string {
	if r.Error != "" {
		return []string{"PromQL parse error: " + r.Error}
	}
	var problems []string
	if len(r.Selectors) == 0 {
		problems = append(problems, "selects no series")
	}
	known := map[string]bool{"le": true}
	for l := range targetLabels {
		known[l] = true
	}
	for _, s := range r.Selectors {
		if s.Metric == "" {
			problems = append(problems, "selects series by a __name__ pattern instead of a metric name")
			continue
		}
		base, spec, extra, ok := lookupSeries(s.Metric)
		if !ok {
			problems = append(problems, fmt.Sprintf("series %s is not in the metrics contract", s.Metric))
			continue
		}
		for l := range spec.labels {
			known[l] = true
		}
		for _, m := range s.Matchers {
			values, isMetricLabel := spec.labels[m.Name]
			switch {
			case isMetricLabel:
				if values != nil && (m.Type == "=" || m.Type == "!=") && !slices.Contains(values, m.Value) {
					problems = append(problems, fmt.Sprintf("%s{%s%s%q}: %q is not a value of %s (want one of %v)", s.Metric, m.Name, m.Type, m.Value, m.Value, m.Name, values))
				}
			case targetLabels[m.Name] || extra[m.Name]:
			default:
				problems = append(problems, fmt.Sprintf("%s has no label %s (metric %s)", s.Metric, m.Name, base))
			}
		}
	}
	for _, l := range r.Grouping {
		if !known[l] {
			problems = append(problems, fmt.Sprintf("groups or matches by label %s, which none of its metrics has", l))
		}
	}
	return problems
}

// dashboard is the part of the Grafana dashboard model the checks read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource json.RawMessage          `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

var grafanaVariable = regexp.MustCompile(`\$(?:\{(\w+)(?::\w+)?\}|(\w+))`)

// TestDashboard checks the Grafana dashboard's layout and that every query parses as PromQL and
// uses only contract metrics, and that it charts every metric of the contract.
func TestDashboard(t *testing.T) {
	raw := readRepoFile(t, dashboardFile)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and a current schema", d.UID, d.Title, d.SchemaVersion)
	}

	variables := map[string]bool{}
	for _, v := range d.Templating.List {
		variables[v.Name] = true
	}
	var exprs []promqlInput
	labelValues := regexp.MustCompile(`^label_values\((\w+(?:\{[^}]*\})?),\s*(\w+)\)$`)
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
		case "query":
			q, _ := v.Query.(map[string]any)
			s, _ := q["query"].(string)
			m := labelValues.FindStringSubmatch(s)
			if m == nil {
				t.Errorf("variable %s: query %q is not label_values(metric, label) or label_values(metric{selector}, label)", v.Name, s)
				continue
			}
			selector, err := expandGrafanaVariables(m[1], variables)
			if err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
				continue
			}
			exprs = append(exprs, promqlInput{ID: "variable " + v.Name, Expr: fmt.Sprintf("count by (%s) (%s)", m[2], selector)})
		default:
			t.Errorf("variable %s has unexpected type %s", v.Name, v.Type)
		}
	}
	if !variables["datasource"] {
		t.Error("no datasource variable: the dashboard would be tied to one Prometheus")
	}
	// One Prometheus may scrape many clusters: the dashboard selects one or several by the
	// cluster label, and every other variable lists only the selected clusters' values.
	if !variables["cluster"] {
		t.Error("no cluster variable: a central Prometheus's clusters would be mixed together")
	}

	ids := map[int]bool{}
	var boxes []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, g)
			}
			boxes = append(boxes, p)
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if !bytes.Contains(p.Datasource, []byte(`"${datasource}"`)) {
				t.Errorf("panel %q does not use the datasource variable: %s", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no queries", p.Title)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("panel %q: refId %q empty or repeated", p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				expr, err := expandGrafanaVariables(tg.Expr, variables)
				if err != nil {
					t.Errorf("panel %q: %v", p.Title, err)
					continue
				}
				exprs = append(exprs, promqlInput{ID: fmt.Sprintf("panel %q %s", p.Title, tg.RefID), Expr: expr})
			}
		}
	}
	walk(d.Panels)
	for i, a := range boxes {
		for _, b := range boxes[i+1:] {
			if overlap(a, b) {
				t.Errorf("panels %q and %q overlap", a.Title, b.Title)
			}
		}
	}

	used := map[string]bool{}
	for id, r := range checkPromQL(t, exprs) {
		for _, s := range r.Selectors {
			if base, _, _, ok := lookupSeries(s.Metric); ok {
				used[base] = true
			}
			if id != "variable cluster" && !slices.ContainsFunc(s.Matchers, func(m struct{ Name, Type, Value string }) bool { return m.Name == "cluster" }) {
				t.Errorf("%s: selector of %s does not match the cluster variable (cluster=~\"$cluster\")", id, s.Metric)
			}
		}
	}
	var missing []string
	for m := range metricsContract {
		if !used[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard charts no panel for %v", missing)
	}
}

// expandGrafanaVariables replaces Grafana's interval variables with a duration and the
// dashboard's own variables with a match-all regex, so that the query parses as plain PromQL.
func expandGrafanaVariables(expr string, variables map[string]bool) (string, error) {
	var unknown []string
	out := grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVariable.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		switch {
		case name == "__rate_interval" || name == "__interval" || name == "__range":
			return "5m"
		case variables[name]:
			return ".*"
		}
		unknown = append(unknown, name)
		return m
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("query %q uses undefined variables %v", expr, unknown)
	}
	return out, nil
}

func overlap(a, b panel) bool {
	ga, gb := a.GridPos, b.GridPos
	return ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H
}

// githubAnchor is the fragment GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// docs/metrics.md is the operator-facing contract: it documents every metric and label value,
// and every alert's runbook_url points at a heading in it. docs/install.md documents every
// controller flag and every top-level chart value.
func TestDocsCoverContract(t *testing.T) {
	metricsDoc := string(readRepoFile(t, "docs/metrics.md"))
	anchors := map[string]bool{}
	for _, line := range strings.Split(metricsDoc, "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "#"))] = true
		}
	}
	for name, spec := range metricsContract {
		if !strings.Contains(metricsDoc, "`"+name+"`") {
			t.Errorf("docs/metrics.md does not document `%s`", name)
		}
		if !strings.Contains(metricsDoc, string(spec.kind)) {
			t.Errorf("docs/metrics.md does not mention the type %s", spec.kind)
		}
		for label, values := range spec.labels {
			if !strings.Contains(metricsDoc, "`"+label+"`") {
				t.Errorf("docs/metrics.md does not document label `%s` of %s", label, name)
			}
			for _, v := range values {
				if !strings.Contains(metricsDoc, "`"+v+"`") {
					t.Errorf("docs/metrics.md does not document value `%s` of %s{%s}", v, name, label)
				}
			}
		}
	}
	const runbookBase = "https://github.com/nodekeeper/nodekeeper/blob/main/docs/metrics.md#"
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not a heading of docs/metrics.md", r.Alert, r.Annotations["runbook_url"])
			}
			if anchor != githubAnchor(r.Alert) {
				t.Errorf("%s: runbook_url anchor %q, want #%s", r.Alert, anchor, githubAnchor(r.Alert))
			}
		}
	}

	installDoc := string(readRepoFile(t, "docs/install.md"))
	for flag := range controllerFlags {
		if !strings.Contains(installDoc, "`--"+flag) {
			t.Errorf("docs/install.md does not document --%s", flag)
		}
	}
	var values map[string]any
	if err := yaml.Unmarshal(readRepoFile(t, chartDir+"/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	for k := range values {
		if !strings.Contains(installDoc, "`"+k) {
			t.Errorf("docs/install.md does not document the chart value %s", k)
		}
	}
}
