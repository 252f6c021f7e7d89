package gc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// leakedPlan is a plan with the given leaked lease names, oldest first.
func leakedPlan(names ...string) *Plan {
	p := &Plan{GracePeriod: time.Hour, Counts: map[lease.Class]int{lease.Leaked: len(names), lease.Healthy: 2, lease.Zombie: 1}}
	for _, n := range names {
		p.leaked = append(p.leaked, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: lease.NodeLeaseNamespace, UID: types.UID("uid-" + n)}})
	}
	return p
}

func names(ls []*coordinationv1.Lease) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return strings.Join(out, " ")
}

func TestSelect(t *testing.T) {
	all := []string{"ip-10-0-1-5", "ip-10-0-11-5", "ip-10-0-1-7", "ip-10-0-2-1", "ip-10-0-1-9"}
	for _, tc := range []struct {
		sel                    Selection
		want                   string
		notSelected, overLimit int
	}{
		{Selection{}, strings.Join(all, " "), 0, 0},
		{Selection{Limit: 2}, "ip-10-0-1-5 ip-10-0-11-5", 0, 3},
		{Selection{Limit: 99}, strings.Join(all, " "), 0, 0},
		// Anchored: ip-10-0-1-.* never selects ip-10-0-11-5, and a bare prefix selects nothing.
		{Selection{NameRegexp: `ip-10-0-1-.*`}, "ip-10-0-1-5 ip-10-0-1-7 ip-10-0-1-9", 2, 0},
		{Selection{NameRegexp: `ip-10-0-1`}, "", 5, 0},
		{Selection{NameRegexp: `ip-10-0-1-.*`, Limit: 1}, "ip-10-0-1-5", 2, 2},
		{Selection{NameRegexp: `a|ip-10-0-2-1`}, "ip-10-0-2-1", 4, 0},
	} {
		t.Run(fmt.Sprintf("%q limit %d", tc.sel.NameRegexp, tc.sel.Limit), func(t *testing.T) {
			p := leakedPlan(all...)
			if err := p.Select(tc.sel); err != nil {
				t.Fatal(err)
			}
			if got := names(p.Leaked()); got != tc.want {
				t.Errorf("selected %q, want %q", got, tc.want)
			}
			if p.NotSelected != tc.notSelected || p.OverLimit != tc.overLimit {
				t.Errorf("not selected %d over limit %d, want %d and %d", p.NotSelected, p.OverLimit, tc.notSelected, tc.overLimit)
			}
			if err := p.Select(tc.sel); err == nil {
				t.Error("a second Select was accepted")
			}
		})
	}
	for _, bad := range []Selection{{Limit: -1}, {NameRegexp: "ip-("}} {
		if err := leakedPlan("a").Select(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestSummarize(t *testing.T) {
	p := leakedPlan("a", "b", "c", "d", "e")
	if err := p.Select(Selection{NameRegexp: "[a-d]", Limit: 3}); err != nil {
		t.Fatal(err)
	}
	r := &Report{Counts: map[deleter.Outcome]int{deleter.Deleted: 1, deleter.PreconditionFailed: 1}}
	s := Summarize(p, r, false)
	if s.Total != 8 || s.Deleted != 1 || s.Left != 7 {
		t.Errorf("total %d deleted %d left %d, want 8, 1, 7", s.Total, s.Deleted, s.Left)
	}
	got := map[string]int{}
	sum := 0
	for _, lr := range s.Reasons {
		got[lr.Reason] = lr.Count
		sum += lr.Count
	}
	want := map[string]int{"healthy": 2, "zombie": 1, LeftNotSelected: 1, LeftOverLimit: 1, "precondition-failed": 1, LeftNotAttempted: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) || sum != s.Left {
		t.Errorf("reasons %v (sum %d), want %v (sum %d)", got, sum, want, s.Left)
	}
	var b bytes.Buffer
	if err := s.Print(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Deleted 1 of 8 leases in kube-node-lease; left 7:", "  1 over-limit (leaked, beyond --limit 3", "  2 healthy (kubelet heartbeating)"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, b.String())
		}
	}
}

func TestPrintLeasesObjects(t *testing.T) {
	p := leakedPlan("a", "b", "c")
	r := &Report{Results: []Result{
		{Name: "a", UID: "uid-a", Outcome: deleter.Deleted},
		{Name: "b", UID: "uid-b", Outcome: deleter.PreconditionFailed},
		{Name: "c", UID: "uid-c", Outcome: deleter.WouldDelete},
	}}
	for _, tc := range []struct{ output, sortBy, want string }{
		{"name", "", "lease.coordination.k8s.io/a\nlease.coordination.k8s.io/c\n"},
		{"name", "{.metadata.uid}", "lease.coordination.k8s.io/a\nlease.coordination.k8s.io/c\n"},
		{"jsonpath={.items[*].metadata.name}", "", "a c"},
	} {
		f := NewOutputFlags()
		f.Output, f.SortBy = tc.output, tc.sortBy
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := f.PrintLeases(&b, p, r); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("-o %s: %q, want %q (only deleted and would-delete leases)", tc.output, b.String(), tc.want)
		}
	}
	if err := (&OutputFlags{}).Validate(); err == nil {
		t.Error("empty -o accepted by gc")
	}
}
