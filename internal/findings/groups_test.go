package findings

import (
	"bytes"
	"testing"
	"time"
)

// ruleZombie is NK801's shape: the rule's remediation is replaced per instance by the command
// that removes that instance (doctor's zombieReport), so two zombies carry two different fixes.
var ruleZombie = Rule{Code: "T801", Name: "test-zombie", Section: "ec2", Severity: Error,
	Title: "instance without a Node", Remediation: "terminate it", DocURL: "https://example.com/t801"}

func zombies() *Report {
	r := NewReport("doctor", "https://127.0.0.1:6443", time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC), SectionSpec{Name: "nodes", Title: "Nodes"}, SectionSpec{Name: "ec2", Title: "EC2"})
	for _, id := range []string{"i-0aaa", "i-0bbb"} {
		f := ruleZombie.New("instance/"+id, "running with no Node")
		f.Remediation = "once sure nothing runs on it, remove it with: aws ec2 terminate-instances --instance-ids " + id + " (nodekeeper never runs it)"
		r.Add(f)
	}
	r.Add(ruleCap.New("node/a", "capacity 110 above 29"), ruleCap.New("node/b", "capacity 110 above 20"))
	return r
}

// TestPrintPerObjectFixes: with two zombie instances the JSON has both terminate commands, and so
// must the text report (it printed the first instance's for the whole group); a rule whose
// findings share one remediation still prints it once under the group.
func TestPrintPerObjectFixes(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintText(&buf, zombies(), PrintOptions{Catalog: MustCatalog([]Rule{ruleZombie, ruleCap})}); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "report-perobject.txt", buf.Bytes())
}

func TestGroups(t *testing.T) {
	r := zombies()
	var got []Group
	for _, s := range r.Sections() {
		got = append(got, Groups(s.Findings)...)
	}
	if len(got) != 2 {
		t.Fatalf("%d groups, want 2 (T101 and T801)", len(got))
	}
	for _, g := range got {
		switch code := g.Findings[0].Code; {
		case code == "T801" && (!g.PerObject || g.Fix != "" || len(g.Findings) != 2):
			t.Errorf("T801: %+v, want two findings with a fix each", g)
		case code == "T101" && (g.PerObject || g.Fix != "lower maxPods"):
			t.Errorf("T101: %+v, want the one shared fix", g)
		}
	}
}
