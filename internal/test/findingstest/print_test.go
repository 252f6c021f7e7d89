package findingstest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// fatalRecorder is a testing.TB that records a Fatal or Fatalf and ends the goroutine, as the
// real ones do, instead of failing the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// recordFatal runs fn with a recorder in its own goroutine and returns what it failed with.
func recordFatal(t *testing.T, fn func(tb testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.fatal
}

const hostile = "n\x1b]0;pwned\x07\u202e"

func hostileReport() *findings.Report {
	rule := findings.Rule{Code: "T101", Name: "test-rule", Section: "nodes", Severity: findings.Warning,
		Title: "a test rule", Remediation: "none", DocURL: "https://example.com/t101"}
	r := findings.NewReport("test", "unit", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC), findings.SectionSpec{Name: "nodes", Title: "Nodes"})
	r.Add(rule.New("node/"+hostile, "kubelet %s", hostile))
	return r
}

// TestSafeText: the escaped text report passes and is returned; the printer's own colours are
// escapes a terminal acts on, so the same report with colour on fails, naming the line.
func TestSafeText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		color bool
		fatal string
	}{
		{"escaped", false, ""},
		{"coloured", true, "report line "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var text string
			fatal := recordFatal(t, func(tb testing.TB) {
				text = SafeText(tb, "report", hostileReport(), findings.PrintOptions{Color: tc.color})
			})
			if tc.fatal != "" {
				if !strings.Contains(fatal, tc.fatal) || !strings.Contains(fatal, "reaches the terminal raw") {
					t.Fatalf("failed with %q, want %q", fatal, tc.fatal)
				}
				return
			}
			if fatal != "" {
				t.Fatalf("failed: %s", fatal)
			}
			if !strings.Contains(text, `node/n\x1b]0;pwned\x07\u202e`) {
				t.Errorf("text lacks the escaped resource:\n%s", text)
			}
		})
	}
}

// TestSafeJSON: the JSON report passes and is returned, and decodes to the text as written.
func TestSafeJSON(t *testing.T) {
	var js []byte
	if fatal := recordFatal(t, func(tb testing.TB) { js = SafeJSON(tb, hostileReport()) }); fatal != "" {
		t.Fatalf("failed: %s", fatal)
	}
	var doc struct {
		Sections []struct{ Findings []struct{ Resource string } }
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, js)
	}
	if len(doc.Sections) != 1 || len(doc.Sections[0].Findings) != 1 || doc.Sections[0].Findings[0].Resource != "node/"+hostile {
		t.Errorf("JSON decodes to %+v, want the resource node/%q", doc, hostile)
	}
}
