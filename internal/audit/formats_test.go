package audit

import (
	"encoding/json"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// story is the part of a report that must not depend on the layout the events came in.
func story(t *testing.T, r *analyze.Report) string {
	t.Helper()
	clean := func(e *analyze.Event) {
		e.Where = ""
	}
	s := struct {
		D []analyze.NodeDeletion
		L []analyze.Leak
		Z []analyze.Zombie
		C []analyze.LeaseLifecycle
		T []analyze.Talker
	}{r.NodeDeletions, r.Leaks, r.Zombies, r.Leases, r.TopByRequests}
	for i := range s.D {
		clean(&s.D[i].Event)
	}
	for i := range s.L {
		clean(&s.L[i].Created)
		if s.L[i].NodeDeletion != nil {
			clean(s.L[i].NodeDeletion)
		}
	}
	for i := range s.Z {
		if s.Z[i].Deletion != nil {
			clean(s.Z[i].Deletion)
		}
	}
	for i := range s.C {
		for k := range s.C[i].Events {
			clean(&s.C[i].Events[k])
		}
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func analyzeFiles(t *testing.T, opts analyze.Options, files ...string) (*analyze.Report, error) {
	t.Helper()
	inputs, err := read.ExpandInputs(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return analyze.Analyze(inputs, opts)
}

func TestEKSExportFormats(t *testing.T) {
	base, err := analyzeFiles(t, analyze.Options{}, "testdata/seed001/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := story(t, base)
	for _, tc := range []struct{ file, format string }{
		{"testdata/seed001/events-pretty.json", "json-stream"},
		{"testdata/eks/filter-log-events.json", "filter-log-events"},
		{"testdata/eks/insights-results.json", "logs-insights-json"},
		{"testdata/eks/insights-console.json", "logs-insights-json"},
		{"testdata/eks/insights.csv", "logs-insights-csv"},
		{"testdata/eks/subscription-b64.txt", "cloudwatch-subscription"},
		{"testdata/eks/subscription-firehose.gz", "cloudwatch-subscription"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := analyzeFiles(t, analyze.Options{}, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Inputs[0].Format; got != tc.format {
				t.Errorf("format %q, want %q", got, tc.format)
			}
			if r.Totals.Events != 6 || r.Totals.Bad != 0 {
				t.Errorf("events %d bad %d, want 6 and 0: %+v", r.Totals.Events, r.Totals.Bad, r.Inputs)
			}
			if got := story(t, r); got != want {
				t.Errorf("story differs from the JSON lines one:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// A message cut by CloudWatch keeps what came before the cut: who deleted which Node, with
// the export's timestamp standing in for the lost requestReceivedTimestamp.
func TestTruncatedMessageSalvaged(t *testing.T) {
	r, err := analyzeFiles(t, analyze.Options{}, "testdata/eks/filter-log-events-truncated.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Totals.Salvaged != 1 || r.Totals.Events != 6 {
		t.Fatalf("salvaged %d events %d, want 1 and 6", r.Totals.Salvaged, r.Totals.Events)
	}
	if len(r.NodeDeletions) != 1 {
		t.Fatalf("node deletions: %+v", r.NodeDeletions)
	}
	d := r.NodeDeletions[0]
	if !d.Event.Salvaged || d.Event.Actor.User != "kubernetes-admin" || d.Event.Code != 200 ||
		d.Event.Time.UnixMilli() != 1712296732744 {
		t.Fatalf("deletion %+v", d.Event)
	}
	if d.LeaseDeleted == nil || d.LeaseDeleted.Actor.User != "system:serviceaccount:kube-system:generic-garbage-collector" {
		t.Fatalf("lease deletion after it: %+v", d.LeaseDeleted)
	}
}

func TestSniffFormatDefaultsToLines(t *testing.T) {
	r, err := analyze.AnalyzeReader("x", jsonReader("not json at all\n{\"kind\":\"Event\"}\n"), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Inputs[0].Format != "json-lines" || r.Totals.Bad != 2 {
		t.Fatalf("%+v", r.Inputs[0])
	}
}
