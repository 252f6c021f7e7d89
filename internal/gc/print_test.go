package gc

import (
	"bytes"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

func testPlan(now time.Time) *Plan {
	counts := map[lease.Class]int{}
	for _, c := range lease.Classes() {
		counts[c] = 0
	}
	counts[lease.Healthy], counts[lease.Zombie], counts[lease.Leaked] = 3, 1, 2
	old := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-9.ec2.internal", Namespace: lease.NodeLeaseNamespace, CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("ip-10-0-0-9.ec2.internal"),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{Time: now.Add(-2 * time.Hour)},
		},
	}
	return &Plan{At: now, GracePeriod: time.Hour, Counts: counts, Nodes: 3, leaked: []*coordinationv1.Lease{old, old}}
}

func TestPrintPlan(t *testing.T) {
	now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	for _, dry := range []bool{false, true} {
		var b bytes.Buffer
		PrintPlan(&b, testPlan(now), dry)
		out := b.String()
		for _, want := range []string{
			"CLASS", "leaked          2        delete",
			"zombie          1        keep (kubelet alive)",
			"6 leases in kube-node-lease, 3 Nodes; 2 leaked; 2 ",
			"Longest idle: ip-10-0-0-9.ec2.internal, last active 120m ago.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("dry=%v: output lacks %q:\n%s", dry, want, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, string(lease.Leader)+" ") || strings.HasPrefix(line, string(lease.APIServerIdentity)+" ") {
				t.Errorf("dry=%v: a class outside kube-node-lease is listed: %q", dry, line)
			}
		}
		if got := strings.Contains(out, "would be deleted (dry run)"); got != dry {
			t.Errorf("dry=%v: dry-run wording present=%v:\n%s", dry, got, out)
		}
	}
}

func TestWriteReport(t *testing.T) {
	now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	r := &Report{
		Counts: map[deleter.Outcome]int{deleter.Deleted: 1, deleter.PreconditionFailed: 1},
		Results: []Result{
			{Name: "a", UID: "u1", Outcome: deleter.Deleted, Reason: "leaked"},
			{Name: "b", UID: "u2", Outcome: deleter.PreconditionFailed, Reason: "renewed since it was classified"},
		},
		Requests: 4, Duration: 1500 * time.Millisecond, Seconds: 1.5,
	}

	var table bytes.Buffer
	if err := WriteReport(&table, "table", testPlan(now), r, false); err != nil {
		t.Fatal(err)
	}
	if out := table.String(); !strings.Contains(out, "2 leases in 1.5s: 1 deleted, 1 precondition-failed") ||
		!strings.Contains(out, "  b: precondition-failed: renewed since it was classified") || strings.Contains(out, "  a:") {
		t.Errorf("table report: kept and failed leases are listed, deleted ones are not:\n%s", out)
	}

	for _, format := range []string{"json", "yaml"} {
		var b bytes.Buffer
		if err := WriteReport(&b, format, testPlan(now), r, true); err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, GCResultKind, b.Bytes())
		// JSON is YAML: one reader for both (the schema check above parses JSON strictly).
		var doc Document
		if err := yaml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, b.String())
		}
		if doc.APIVersion != APIVersion || doc.Kind != GCResultKind || doc.GracePeriodSeconds != 3600 || doc.Summary.Deleted != 1 {
			t.Errorf("%s: apiVersion %q kind %q gracePeriodSeconds %v summary %+v", format, doc.APIVersion, doc.Kind, doc.GracePeriodSeconds, doc.Summary)
		}
		if !doc.DryRun || doc.GracePeriod != "1h0m0s" || doc.Nodes != 3 || doc.Classes[lease.Leaked] != 2 ||
			doc.Outcomes[deleter.PreconditionFailed] != 1 || len(doc.Results) != 2 || doc.Results[1].Name != "b" {
			t.Errorf("%s report does not round-trip: %+v", format, doc)
		}
	}
}
