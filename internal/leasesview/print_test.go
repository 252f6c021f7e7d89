package leasesview

import (
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"

	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/golden"
)

// golden compares got with testdata/name, or rewrites the file with -update.
// assertGolden compares got with testdata/NAME (golden.Assert; -update rewrites it).
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), got)
}

func fixtureReport(opts Options) *Report {
	all, nodes := fixture()
	var leases []*coordinationv1.Lease
	for _, l := range all {
		if opts.Namespace == "" || l.Namespace == opts.Namespace { // the API server's job in List
			leases = append(leases, l)
		}
	}
	r := Build(leases, nodes, opts)
	if opts.Namespace == "" || opts.Namespace == "kube-system" {
		r.LeaseCandidateAPI = "coordination.k8s.io/v1beta1"
		r.LeaseCandidates = fixtureCandidates()
	}
	return r
}

func TestGoldenOutput(t *testing.T) {
	onlyNS := fixedOptions()
	onlyNS.Namespace = "kube-system"
	bad := fixedOptions()
	bad.Classes = []lease.Class{lease.Leaked, lease.Zombie}
	nothing := fixedOptions()
	nothing.Classes = []lease.Class{lease.Unowned}
	nothing.Namespace = "kube-system"
	tests := []struct {
		golden string
		opts   Options
		print  PrintOptions
	}{
		{"table.golden", fixedOptions(), PrintOptions{AllNamespaces: true}},
		{"wide.golden", fixedOptions(), PrintOptions{Format: FormatWide, AllNamespaces: true}},
		{"table-kube-system.golden", onlyNS, PrintOptions{}},
		{"table-leaked-zombie.golden", bad, PrintOptions{AllNamespaces: true}},
		{"table-no-headers.golden", bad, PrintOptions{AllNamespaces: true, NoHeaders: true}},
		{"table-empty.golden", nothing, PrintOptions{}},
		{"report.json.golden", fixedOptions(), PrintOptions{Format: FormatJSON}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			// Build the report twice: the output must be a pure function of objects and clock.
			var a, b bytes.Buffer
			if err := Print(&a, fixtureReport(tt.opts), tt.print); err != nil {
				t.Fatal(err)
			}
			if err := Print(&b, fixtureReport(tt.opts), tt.print); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("two renderings of the same report differ")
			}
			assertGolden(t, tt.golden, a.Bytes())
		})
	}
}

// TestTableSortedByClassThenName checks the order on the printed table itself, independently of
// the golden file: every row's class rank is ≥ the previous one, names ascend within a class.
func TestTableSortedByClassThenName(t *testing.T) {
	var out bytes.Buffer
	if err := Print(&out, fixtureReport(fixedOptions()), PrintOptions{AllNamespaces: true, NoHeaders: true}); err != nil {
		t.Fatal(err)
	}
	lastRank, lastName, rows := -1, "", 0
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		c, err := lease.ParseClass(f[2])
		if err != nil {
			continue // the LeaseCandidate table
		}
		rows++
		r := rank(c)
		if r < lastRank || (r == lastRank && f[1] < lastName) {
			t.Errorf("row %q out of order after class rank %d name %s", line, lastRank, lastName)
		}
		lastRank, lastName = r, f[1]
	}
	if leases, _ := fixture(); rows != len(leases) {
		t.Errorf("printed %d lease rows, want %d", rows, len(leases))
	}
}

// TestFixtureCoversEveryClass guards the golden files: if the taxonomy grows, the fixture must too.
func TestFixtureCoversEveryClass(t *testing.T) {
	r := fixtureReport(fixedOptions())
	for _, cc := range r.Summary.Counts {
		if cc.Count == 0 {
			t.Errorf("fixture has no %s lease", cc.Class)
		}
	}
	if a := r.Summary.APIServers; a == nil || a.Live != 1 || a.Stale != 1 {
		t.Errorf("API servers = %+v, want 1 live, 1 stale", a)
	}
}

func TestSummaryCountsAndExplanations(t *testing.T) {
	opts := fixedOptions()
	opts.Classes = []lease.Class{lease.Healthy}
	r := fixtureReport(opts)
	leases, _ := fixture()
	if r.Summary.Total != len(leases) {
		t.Errorf("total = %d, want %d (the summary ignores --class)", r.Summary.Total, len(leases))
	}
	if r.Summary.Shown != 1 || len(r.Items) != 1 || r.Items[0].Class != lease.Healthy {
		t.Errorf("shown %d items %v, want the one healthy lease", r.Summary.Shown, r.Items)
	}
	want := map[lease.Class]int{lease.Leaked: 2, lease.Zombie: 1, lease.Healthy: 1, lease.Stale: 1, lease.Unowned: 1,
		lease.StaleOwner: 1, lease.OwnerMissing: 1, lease.Leader: 2, lease.APIServerIdentity: 2, lease.Other: 2}
	for c, n := range want {
		if got := r.Summary.Count(c); got != n {
			t.Errorf("count(%s) = %d, want %d", c, got, n)
		}
	}
	if r.Summary.Counts[0].Class != lease.Leaked || r.Summary.Counts[1].Class != lease.Zombie {
		t.Errorf("summary must start with leaked and zombie, got %v", r.Summary.Counts[:2])
	}
	var out bytes.Buffer
	if err := PrintSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range lease.Classes() {
		line := "  " + string(c) + ": " + c.Explain()
		has := strings.Contains(out.String(), line)
		if has != needsExplanation(c) {
			t.Errorf("explanation line for %s present=%v, want %v:\n%s", c, has, needsExplanation(c), out.String())
		}
	}
	if !strings.HasPrefix(out.String(), "\nSummary: 2 leaked, 1 zombie, ") {
		t.Errorf("summary line does not start with the leaked and zombie counts:\n%s", out.String())
	}
}

// TestJSONRoundTrip decodes -o json and -o yaml output back into a Report and checks that nothing
// was lost: same objects (semantically: timestamps compare as instants) and byte-identical
// re-encoding.
func TestJSONRoundTrip(t *testing.T) {
	r := fixtureReport(fixedOptions())
	for _, format := range []string{FormatJSON, FormatYAML} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if err := Print(&out, r, PrintOptions{Format: format}); err != nil {
				t.Fatal(err)
			}
			var back Report
			var err error
			if format == FormatJSON {
				err = json.Unmarshal(out.Bytes(), &back)
			} else {
				err = yaml.UnmarshalStrict(out.Bytes(), &back)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(r, &back) {
				a, _ := json.Marshal(r)
				b, _ := json.Marshal(&back)
				t.Fatalf("round trip changed the report:\n%s\n%s", a, b)
			}
			var again bytes.Buffer
			if err := Print(&again, &back, PrintOptions{Format: format}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), again.Bytes()) {
				t.Errorf("re-encoding differs:\n%s\n%s", out.String(), again.String())
			}
			schematest.Validate(t, ReportKind, out.Bytes())
			if back.APIVersion != APIVersion || back.Kind != ReportKind {
				t.Errorf("apiVersion/kind = %s/%s", back.APIVersion, back.Kind)
			}
		})
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	r := fixtureReport(fixedOptions())
	c := r.DeepCopyObject().(*Report)
	if !equality.Semantic.DeepEqual(r, c) {
		t.Fatal("copy differs")
	}
	*c.Items[0].Holder = "changed"
	c.Items[0].Owners = append(c.Items[0].Owners, Owner{Name: "x"})
	c.Items[0].RenewTime.Time = fixedNow.Add(99)
	c.LeaseCandidates[0].RenewTime.Time = fixedNow.Add(99)
	c.Summary.Counts[0].Count = 99
	c.Summary.APIServers.StaleIdentities[0] = "changed"
	if equality.Semantic.DeepEqual(r, c) {
		t.Fatal("mutating the copy changed the original")
	}
	if *r.Items[0].Holder == "changed" || r.Summary.Counts[0].Count == 99 || r.Summary.APIServers.StaleIdentities[0] == "changed" ||
		r.Items[0].RenewTime.Time.Equal(fixedNow.Add(99)) || r.LeaseCandidates[0].RenewTime.Time.Equal(fixedNow.Add(99)) {
		t.Fatal("copy shares memory with the original")
	}
}

func TestValidation(t *testing.T) {
	if err := ValidateFormat("csv"); err == nil || !strings.Contains(err.Error(), "wide, json, yaml") {
		t.Errorf("ValidateFormat(csv) = %v", err)
	}
	if err := Print(&bytes.Buffer{}, fixtureReport(fixedOptions()), PrintOptions{Format: "csv"}); err == nil {
		t.Error("Print accepted -o csv")
	}
	if _, err := ParseClasses([]string{"leaked", "leak"}); err == nil {
		t.Error("ParseClasses accepted leak")
	}
	got, err := ParseClasses([]string{"zombie", "leaked", "zombie"})
	if err != nil || len(got) != 2 || got[0] != lease.Zombie || got[1] != lease.Leaked {
		t.Errorf("ParseClasses = %v, %v", got, err)
	}
	if err := (Options{ChunkSize: -1}).Validate(); err == nil {
		t.Error("negative chunk size accepted")
	}
	if len(ClassNames()) != len(lease.Classes()) || ClassNames()[0] != "leaked" {
		t.Errorf("ClassNames = %v", ClassNames())
	}
}

// TestWriteAlignedMatchesKubectlTabWriter: the two-pass writer lays tables out exactly as
// kubectl's tab writer does, including wide unicode-free and multi-byte cells and short columns.
func TestWriteAlignedMatchesKubectlTabWriter(t *testing.T) {
	tables := [][][]string{
		{{"A", "B"}, {"x", "y"}},
		{{"NAME", "CLASS", "REASON"}, {"ip-10-0-0-1", "healthy", "fine"}, {"ä-ü-ö", "zombie", "ünïcödé reason"}},
		{{"only"}},
		{{"", "", ""}, {"a", "", "c"}},
		{{"NAMESPACE", "NAME"}, {"kube-system", strings.Repeat("x", 300)}},
	}
	for i, rows := range tables {
		var want, got bytes.Buffer
		tw := printers.GetNewTabWriter(&want)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := writeAligned(&got, len(rows), func(j int) []string { return rows[j] }); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("table %d:\n--- got\n%q\n--- want\n%q", i, got.String(), want.String())
		}
	}
}

// TestControlCharactersCannotBreakTheTable: a holder identity is free text; a tab or newline in
// it must not shift columns or start a row.
func TestControlCharactersCannotBreakTheTable(t *testing.T) {
	r := fixtureReport(fixedOptions())
	for i := range r.Items {
		if r.Items[i].Class == lease.Leader {
			r.Items[i].Holder = ptr.To("evil\tholder\nkube-node-lease   fake-row   healthy")
		}
	}
	var out bytes.Buffer
	if err := Print(&out, r, PrintOptions{AllNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\t") || strings.Contains(out.String(), "\nkube-node-lease   fake-row") {
		t.Errorf("control characters leaked into the table:\n%s", out.String())
	}
}

// TestShowKind: --show-kind prefixes every lease name in the tables and the watch lines with
// kubectl's resource name, and nothing else.
func TestShowKind(t *testing.T) {
	r := fixtureReport(fixedOptions())
	for _, showKind := range []bool{false, true} {
		var b bytes.Buffer
		if err := Print(&b, r, PrintOptions{Format: FormatWide, NoHeaders: true, AllNamespaces: true, ShowKind: showKind}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) < len(r.Items) {
			t.Fatalf("%d lines for %d items", len(lines), len(r.Items))
		}
		for i, it := range r.Items {
			name := strings.Fields(lines[i])[1]
			want := it.Name
			if showKind {
				want = "lease.coordination.k8s.io/" + it.Name
			}
			if name != want {
				t.Errorf("show-kind=%v: row %d name %q, want %q", showKind, i, name, want)
			}
		}
		var w bytes.Buffer
		p := NewWatchPrinter(&w, PrintOptions{NoHeaders: true, ShowKind: showKind})
		if err := p.Change(&Change{Type: Added, Time: r.GeneratedAt, Item: r.Items[0]}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(w.String(), "lease.coordination.k8s.io/"+r.Items[0].Name); got != showKind {
			t.Errorf("show-kind=%v: watch line %q", showKind, w.String())
		}
	}
}

// TestTableReasonsPrintTheSameTables: a report built with TableReasons has no reason where the
// plain tables print none (every table but the other leases'), and prints those tables exactly
// as the report with every reason does; the other leases keep theirs.
func TestTableReasonsPrintTheSameTables(t *testing.T) {
	opts := fixedOptions()
	full := fixtureReport(opts)
	opts.TableReasons = true
	terse := fixtureReport(opts)
	if len(terse.Items) != len(full.Items) {
		t.Fatalf("%d rows with TableReasons, %d without", len(terse.Items), len(full.Items))
	}
	others := 0
	for i, it := range terse.Items {
		want := full.Items[i]
		if sectionOf(it.Class) == kindOther {
			others++
			if it.Reason == "" || it.Reason != want.Reason {
				t.Errorf("%s (%s): reason %q, want %q", it.Name, it.Class, it.Reason, want.Reason)
			}
		} else if it.Reason != "" {
			t.Errorf("%s (%s): reason %q, which the plain table does not print", it.Name, it.Class, it.Reason)
		}
		want.Reason, it.Reason = "", ""
		if !reflect.DeepEqual(it, want) {
			t.Errorf("%s: row differs beyond its reason:\n%+v\n%+v", it.Name, it, want)
		}
	}
	if others == 0 {
		t.Fatal("the fixture has no other lease, whose table prints its reason")
	}
	for _, p := range []PrintOptions{{AllNamespaces: true}, {NoHeaders: true}} {
		var a, b bytes.Buffer
		if err := Print(&a, full, p); err != nil {
			t.Fatal(err)
		}
		if err := Print(&b, terse, p); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%+v: the tables differ:\n%s\n---\n%s", p, a.String(), b.String())
		}
	}
}
