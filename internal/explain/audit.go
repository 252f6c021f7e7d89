package explain

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// readAudit reads the audit log inputs with audit's bounded readers, narrowed to this node, and
// puts what happened to the Node and its lease on the timeline: each creation and deletion of
// the Node with who and where (file:line), the lease's lifecycle, and what its kubelet did
// after the deletion (a zombie's requests and lease renewals).
func (t *teller) readAudit() error {
	name := t.s.Target.Node
	if len(t.o.Audit) == 0 || name == "" {
		return nil
	}
	rep, err := analyze.Analyze(t.o.Audit, analyze.Options{Node: name})
	if err != nil && rep == nil {
		return fmt.Errorf("audit log: %w", err)
	}
	src := t.o.AuditSource
	if err != nil {
		t.gap(src, "read", "audit log", err)
	}
	if rep.Totals.Events == 0 {
		t.gap(src, "read", "audit log", fmt.Errorf("no kube-apiserver audit event in %d lines", rep.Totals.Lines))
		return nil
	}
	for _, e := range rep.NodeCreations {
		t.add(e.Time, src, e.Where, "Node %s created by %s", name, actor(e.Actor))
	}
	for _, d := range rep.NodeDeletions {
		e := d.Event
		t.add(e.Time, src, e.Where, "Node %s deleted by %s", name, actor(e.Actor))
		t.deletions = append(t.deletions, doctor.NodeDeletion{Node: d.Node, Time: e.Time, User: e.Actor.User, UserAgent: e.Actor.UserAgent, SourceIP: e.Actor.SourceIP, Where: e.Where})
		if e.Time.After(t.deletedAt) {
			t.deletedAt = e.Time
		}
		if d.RequestsAfter > 0 && d.FirstRequest != nil && d.LastRequest != nil {
			t.add(*d.LastRequest, src, "", "its kubelet made %d requests after the deletion, from %s to %s", d.RequestsAfter,
				d.FirstRequest.UTC().Format(time.RFC3339), d.LastRequest.UTC().Format(time.RFC3339))
		}
		if f := d.NodeRecreated; f != nil {
			t.add(f.Time, src, "", "%s by %s, %s after the deletion", f.How, actor(f.Actor), elapsed(f.After))
		}
	}
	for _, ll := range rep.Leases {
		if ll.Namespace != lease.NodeLeaseNamespace || ll.Name != name {
			continue
		}
		for _, e := range ll.Events {
			switch e.Action {
			case "create", "update-created", "patch-created":
				owners := "no owner"
				if e.OwnersKnown && e.Owners != "" {
					owners = "owner " + e.Owners
				} else if !e.OwnersKnown {
					owners = "owner not in the log"
				}
				how := "created"
				if e.Action != "create" {
					how = "re-created by an " + strings.TrimSuffix(e.Action, "-created") + " (HTTP 201)"
				}
				t.add(e.Time, src, e.Where, "lease %s by %s, %s", how, actor(e.Actor), owners)
			case "delete":
				t.add(e.Time, src, e.Where, "lease deleted by %s", actor(e.Actor))
			}
		}
		if ll.Omitted > 0 {
			t.add(time.Time{}, src, "", "%d more lifecycle events of the lease not kept (the first and last are)", ll.Omitted)
		}
	}
	for _, z := range rep.Zombies {
		renewals := int64(0)
		var calls []string
		for _, c := range z.Calls {
			if c.Verb == "update" && c.Resource == "leases" && c.Code/100 == 2 {
				renewals += c.Count
			}
			calls = append(calls, fmt.Sprintf("%s %s %d ×%d", c.Verb, c.Resource, c.Code, c.Count))
		}
		t.add(z.FirstSeen, src, "", "kubelet still calling after its Node's deletion: first request (from %s)", strings.Join(z.SourceIPs, ", "))
		what := fmt.Sprintf("kubelet kept calling for %s after the deletion: %d requests (%s), %d lease renewals, %d lease re-creations; %s",
			elapsed(z.Duration), z.Requests, strings.Join(calls, ", "), renewals, z.LeaseRecreations, z.Status)
		t.add(z.LastSeen, src, "", "%s", what)
	}
	if !rep.Bounds.Exact() {
		t.add(time.Time{}, src, "", "the audit log reached the analysis' memory bounds: some counts are approximate")
	}
	return nil
}

// actor names who made a request: the user, and the user agent when known.
func actor(a analyze.Actor) string {
	s := a.User
	if a.UserAgent != "" {
		s += " (" + a.UserAgent + ")"
	}
	return s
}

// elapsed prints a duration as the rest of the CLI does, kubectl's way ("60m", "3h", "2m30s"),
// never Go's "1h0m0s".
func elapsed(d time.Duration) string { return lease.Elapsed(d) }
