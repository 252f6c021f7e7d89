package gc

import (
	"fmt"
	"io"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Summary says what a run deleted and what it left in kube-node-lease, and why, grouped by
// reason: a class gc never deletes (the Node exists, a zombie's kubelet is alive, …), a leaked
// lease the selection left (--name-regexp, --limit), or a safety check or error at delete time.
type Summary struct {
	// DryRun: Deleted counts the leases that would have been deleted.
	DryRun bool `json:"dryRun"`
	// Total is the number of leases listed in kube-node-lease.
	Total   int `json:"total"`
	Deleted int `json:"deleted"`
	// Left is Total − Deleted, the sum of Reasons' counts.
	Left    int          `json:"left"`
	Reasons []LeftReason `json:"reasons"`
}

// LeftReason is one reason leases were left, with how many.
type LeftReason struct {
	// Reason is a class name (healthy, zombie, …), a selection reason (not-selected,
	// over-limit), a delete outcome (precondition-failed, node-exists, not-leaked, gone, failed)
	// or not-attempted (the run was interrupted first).
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Meaning is the reason in words.
	Meaning string `json:"meaning"`
}

// LeftNotAttempted: a selected leaked lease the run did not reach (interrupted).
const LeftNotAttempted = "not-attempted"

// outcomeMeanings explains the delete outcomes that leave a lease.
var outcomeMeanings = []struct {
	outcome deleter.Outcome
	meaning string
}{
	{deleter.PreconditionFailed, "renewed, adopted or re-created since the listing"},
	{deleter.NodeExists, "a Node of that name exists now"},
	{deleter.NotLeaked, "no longer leaked when checked again"},
	{deleter.Gone, "already deleted by someone else"},
	{deleter.Failed, "the DELETE failed (see the results)"},
}

// Summarize builds the summary of a run from its plan and report (r nil: nothing was attempted).
func Summarize(p *Plan, r *Report, dryRun bool) Summary {
	s := Summary{DryRun: dryRun}
	for _, n := range p.Counts {
		s.Total += n
	}
	add := func(reason string, n int, meaning string) {
		if n > 0 {
			s.Reasons = append(s.Reasons, LeftReason{Reason: reason, Count: n, Meaning: meaning})
			s.Left += n
		}
	}
	for _, c := range lease.Classes() {
		if c != lease.Leaked {
			add(string(c), p.Counts[c], c.Describe().Meaning)
		}
	}
	add(LeftNotSelected, p.NotSelected, fmt.Sprintf("leaked, name does not match --name-regexp %q", p.Selection.NameRegexp))
	add(LeftOverLimit, p.OverLimit, fmt.Sprintf("leaked, beyond --limit %d (the leases idle longest go first)", p.Selection.Limit))
	attempted := 0
	if r != nil {
		s.Deleted = r.Counts[deleter.Deleted] + r.Counts[deleter.WouldDelete]
		for _, n := range r.Counts {
			attempted += n
		}
		for _, o := range outcomeMeanings {
			add(string(o.outcome), r.Counts[o.outcome], o.meaning)
		}
	}
	add(LeftNotAttempted, len(p.Leaked())-attempted, "selected, but the run stopped before it")
	return s
}

// Print writes the summary as one paragraph: "Deleted 3 of 12 leases in kube-node-lease; left
// 9: …".
func (s Summary) Print(w io.Writer) error {
	verb := "Deleted"
	if s.DryRun {
		verb = "Would delete (dry run)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d of %d leases in %s; left %d", verb, s.Deleted, s.Total, lease.NodeLeaseNamespace, s.Left)
	if len(s.Reasons) > 0 {
		b.WriteString(":")
		for i, r := range s.Reasons {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n  %d %s (%s)", r.Count, r.Reason, textsafe.Escape(r.Meaning))
		}
	}
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}
