package findings

import (
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"

	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/golden"
)

var (
	ruleCap = (Rule{Code: "T101", Name: "test-capacity", Section: "nodes", Severity: Error,
		Title: "max pods above capacity", Remediation: "lower maxPods", DocURL: "https://example.com/t101"})
	ruleQPS = (Rule{Code: "T201", Name: "test-qps", Section: "kubelet", Severity: Warning,
		Title: "pull QPS too low", Remediation: "raise registryPullQPS", DocURL: "https://example.com/t201"})
	ruleInfo = (Rule{Code: "T202", Name: "test-info", Section: "kubelet", Severity: Info,
		Title: "serial pulls", Remediation: "set serializeImagePulls false", DocURL: "https://example.com/t202"})
	testCatalog = MustCatalog([]Rule{ruleCap, ruleQPS, ruleInfo})
)

func sample() *Report {
	r := NewReport("doctor", "https://127.0.0.1:6443", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
		SectionSpec{Name: "nodes", Title: "Nodes"}, SectionSpec{Name: "kubelet", Title: "Kubelet configuration"}, SectionSpec{Name: "apf", Title: "API priority and fairness"})
	r.Checked("nodes", 4)
	r.Checked("kubelet", 4)
	r.Add(ruleCap.New("node/b", "capacity %d above %d", 110, 20))
	r.Add(ruleCap.New("node/a", "capacity %d above %d", 110, 29).WithEvidence("maxPods=110 (configz)"))
	r.Add(ruleQPS.New("node/a", "burst 10 below 110 pods"))
	r.Add(ruleInfo.New("node/c", "serializeImagePulls true"))
	r.Add(ruleQPS.Skip("node/d", "needs get on nodes/proxy"))
	r.Duration = 1500 * time.Millisecond
	r.AddStat("configzRequests", 4)
	return r
}

// assertGolden compares got with testdata/NAME (golden.Assert; -update rewrites it).
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), got)
}

func TestPrintGolden(t *testing.T) {
	for _, tc := range []struct {
		file, format string
		opts         PrintOptions
	}{
		{"report.txt", "text", PrintOptions{Catalog: testCatalog}},
		{"report-color.txt", "text", PrintOptions{Color: true, Catalog: testCatalog}},
		{"report-limit.txt", "text", PrintOptions{MaxPerRule: 1, Catalog: testCatalog}},
		{"report.json", "json", PrintOptions{Catalog: testCatalog}},
		{"report.xml", "junit", PrintOptions{Catalog: testCatalog}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Print(&buf, sample(), tc.format, tc.opts); err != nil {
				t.Fatal(err)
			}
			assertGolden(t, tc.file, buf.Bytes())
			if tc.format == "json" {
				schematest.Validate(t, "DoctorReport", buf.Bytes())
			}
		})
	}
	if err := Print(&bytes.Buffer{}, sample(), "yaml", PrintOptions{}); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestScoresAndExit(t *testing.T) {
	r := sample()
	secs := r.Sections()
	// nodes: 2 of 4 resources have an error -> 50; kubelet: node/a warning -> 75 (info and
	// skipped do not count); apf checked nothing -> no score.
	want := map[string]int{"nodes": 50, "kubelet": 75}
	for _, s := range secs {
		got, ok := s.Score()
		if w, has := want[s.Name]; has != ok || got != w {
			t.Errorf("%s: score %d %v, want %d %v", s.Name, got, ok, w, has)
		}
	}
	if s, _ := r.Score(); s != 62 {
		t.Errorf("report score %d, want 62", s)
	}
	if r.MaxSeverity() != Error || ExitCode(r.MaxSeverity()) != ExitFindings {
		t.Errorf("max %v exit %d", r.MaxSeverity(), ExitCode(r.MaxSeverity()))
	}
	if err := r.Ignore(testCatalog, []string{"T101", "test-qps"}); err != nil {
		t.Fatal(err)
	}
	if r.MaxSeverity() != Info || ExitCode(r.MaxSeverity()) != ExitOK {
		t.Errorf("after ignore: max %v", r.MaxSeverity())
	}
	if err := r.Ignore(testCatalog, []string{"NOPE"}); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("unknown code: %v", err)
	}
	if ExitCode(Warning) != ExitFindings || ExitCode(Skipped) != ExitOK {
		t.Error("exit codes")
	}
}

// TestExitCodeAt: 3 at or above the --fail-on threshold, 0 below it; none fails nothing.
func TestExitCodeAt(t *testing.T) {
	for _, tc := range []struct {
		max    Severity
		failOn string
		want   int
	}{
		{Error, "error", ExitFindings},
		{Warning, "error", ExitOK},
		{Warning, "warning", ExitFindings},
		{Info, "warning", ExitOK},
		{Info, "info", ExitFindings},
		{Skipped, "info", ExitOK},
		{Error, "none", ExitOK},
		{OK, "none", ExitOK},
	} {
		failOn, err := ParseFailOn(tc.failOn)
		if err != nil {
			t.Fatal(err)
		}
		if got := ExitCodeAt(tc.max, failOn); got != tc.want {
			t.Errorf("max %s, --fail-on %s: %d, want %d", tc.max, tc.failOn, got, tc.want)
		}
	}
	if ExitCodeAt(Warning, OK) != ExitFindings {
		t.Error("the zero threshold is not the default (warning)")
	}
	// Severities below info (ok, skipped) are no threshold, and names are lower case.
	for _, bad := range []string{"warn", "ok", "skipped", "Error", ""} {
		if _, err := ParseFailOn(bad); err == nil {
			t.Errorf("--fail-on %q accepted", bad)
		}
	}
}

func TestJSONAndJUnitRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintJSON(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ExitCode int `json:"exitCode"`
		Sections []struct {
			Findings []Finding `json:"findings"`
		} `json:"sections"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ExitCode != ExitFindings || len(doc.Sections) != 3 || doc.Sections[0].Findings[0].Severity != Error {
		t.Fatalf("%+v", doc)
	}
	buf.Reset()
	if err := PrintJUnit(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &suites); err != nil {
		t.Fatal(err)
	}
	// 3 failures (2 errors + 1 warning), 1 skipped; cases: nodes 2+1, kubelet 3+1, apf 1.
	if suites.Failures != 3 || suites.Skipped != 1 || suites.Tests != 8 {
		t.Fatalf("failures %d skipped %d tests %d", suites.Failures, suites.Skipped, suites.Tests)
	}
}

func TestNewCatalogRejects(t *testing.T) {
	for _, r := range []Rule{
		{Code: "T101", Name: "other", Section: "s", Title: "t", Remediation: "r", DocURL: "d"},
		{Code: "T999", Name: "test-qps", Section: "s", Title: "t", Remediation: "r", DocURL: "d"},
		{Code: "T998", Name: "x", Section: "s"},
	} {
		if _, err := NewCatalog([]Rule{ruleCap, ruleQPS, ruleInfo}, []Rule{r}); err == nil {
			t.Errorf("NewCatalog accepted %+v", r)
		}
	}
	// The same rule in two lists (a shared rule listed by both commands) is one rule.
	c, err := NewCatalog([]Rule{ruleCap, ruleQPS}, []Rule{ruleQPS, ruleInfo})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Rules()); got != 3 {
		t.Errorf("%d rules, want 3", got)
	}
	if r, ok := c.Lookup("TEST-QPS"); !ok || r.Code != "T201" {
		t.Errorf("Lookup by name: %v %v", r, ok)
	}
	if r, ok := c.Lookup("t202"); !ok || r.Name != "test-info" {
		t.Errorf("Lookup by code: %v %v", r, ok)
	}
}

func TestConcurrentAdd(t *testing.T) {
	r := NewReport("doctor", "x", time.Now(), SectionSpec{Name: "nodes", Title: "Nodes"})
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r.Add(ruleCap.New(fmt.Sprintf("node/%d", i), "x"))
			r.Checked("nodes", 1)
			r.AddStat("n", 1)
		}(i)
	}
	wg.Wait()
	if s := r.Sections()[0]; len(s.Findings) != 50 || s.Checked != 50 || r.Stats["n"] != 50 {
		t.Fatalf("%d findings, %d checked", len(s.Findings), s.Checked)
	}
}

func TestSeverityJSON(t *testing.T) {
	for _, s := range []Severity{OK, Skipped, Info, Warning, Error} {
		b, _ := json.Marshal(s)
		var back Severity
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%v -> %s -> %v %v", s, b, back, err)
		}
	}
	var s Severity
	if err := json.Unmarshal([]byte(`"fatal"`), &s); err == nil {
		t.Error("unknown severity accepted")
	}
}

// TestJSONKinds: doctor's and bundle's JSON reports name their own kind and match its schema.
func TestJSONKinds(t *testing.T) {
	for tool, kind := range map[string]string{"doctor": "DoctorReport", "bundle": "BundleReport"} {
		r := sample()
		r.Tool = tool
		var buf bytes.Buffer
		if err := Print(&buf, r, "json", PrintOptions{}); err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, kind, buf.Bytes())
	}
}

// TestNounCount: counts read right in the singular and the plural, irregular plurals included.
func TestNounCount(t *testing.T) {
	tests := []struct {
		noun Noun
		n    int
		want string
	}{
		{Noun{"hostname change", "hostname changes"}, 1, "1 hostname change"},
		{Noun{"hostname change", "hostname changes"}, 2, "2 hostname changes"},
		{Noun{"hostname change", "hostname changes"}, 0, "0 hostname changes"},
		{Noun{"iptables flush", "iptables flushes"}, 1, "1 iptables flush"},
		{Noun{"iptables flush", "iptables flushes"}, 12, "12 iptables flushes"},
		{Noun{"line says", "lines say"}, 3, "3 lines say"},
		{Noun{"process", "processes"}, -1, "-1 processes"},
	}
	for _, tc := range tests {
		if got := tc.noun.Count(tc.n); got != tc.want {
			t.Errorf("%v.Count(%d) = %q, want %q", tc.noun, tc.n, got, tc.want)
		}
	}
}
