package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/testenv"
)

// readAudit returns every completed request in the test API server's audit log.
func readAudit(t testing.TB) []testenv.AuditEvent {
	t.Helper()
	return env.AuditEvents(t, "", nil)
}

// readAuditFile returns every completed request in the audit log at path.
func readAuditFile(t testing.TB, path string) []testenv.AuditEvent {
	t.Helper()
	return testenv.ReadAudit(t, path, "", testenv.AuditEvent.Done)
}

// auditDeletes returns the lease DELETEs (any outcome) user sent.
func auditDeletes(events []testenv.AuditEvent, user string) []testenv.AuditEvent {
	var out []testenv.AuditEvent
	for _, e := range events {
		if e.User.Username == user && e.Verb == "delete" && e.Resource() == "leases" {
			out = append(out, e)
		}
	}
	return out
}

// assertDeletesWereLeaked proves from the audit log alone that every lease DELETE user's
// requests actually performed removed a lease that was leaked at that moment. The DELETE's
// preconditions name the lease's UID and resourceVersion; the audited write that produced exactly
// that version shows the lease as it was deleted (the precondition guarantees no other version
// was). That lease must classify as leaked at the DELETE's arrival, with the Node as the audited
// Node creates and deletes say it was then. It returns how many deletes it checked.
func assertDeletesWereLeaked(t testing.TB, user string, grace time.Duration) int {
	t.Helper()
	events := readAudit(t)
	versions := map[string]*coordinationv1.Lease{} // uid/resourceVersion → lease as written
	for _, e := range events {
		if e.Resource() != "leases" || e.Verb == "delete" || len(e.ResponseObject) == 0 {
			continue
		}
		var l coordinationv1.Lease
		if json.Unmarshal(e.ResponseObject, &l) == nil && l.UID != "" {
			versions[string(l.UID)+"/"+l.ResourceVersion] = &l
		}
	}
	checked := 0
	for _, d := range auditDeletes(events, user) {
		if d.Code() != 200 {
			continue // refused by a precondition or gone: nothing was deleted
		}
		checked++
		name := d.Name()
		if d.ObjectRef.Namespace != lease.NodeLeaseNamespace {
			t.Errorf("audit: %s deleted lease %s/%s outside %s", user, d.ObjectRef.Namespace, name, lease.NodeLeaseNamespace)
			continue
		}
		var opts metav1.DeleteOptions
		if err := json.Unmarshal(d.RequestObject, &opts); err != nil || opts.Preconditions == nil ||
			opts.Preconditions.UID == nil || opts.Preconditions.ResourceVersion == nil {
			t.Errorf("audit: DELETE of lease %s without UID and resourceVersion preconditions (%s)", name, d.RequestObject)
			continue
		}
		l := versions[string(*opts.Preconditions.UID)+"/"+*opts.Preconditions.ResourceVersion]
		if l == nil || l.Name != name {
			t.Errorf("audit: DELETE of lease %s names version %s/%s, which no audited write produced",
				name, *opts.Preconditions.UID, *opts.Preconditions.ResourceVersion)
			continue
		}
		v := lease.Classify(l, nodeAt(events, name, d.Received), d.Received, lease.Options{GracePeriod: grace})
		if v.Class != lease.Leaked {
			t.Errorf("audit: %s deleted lease %s at %s while it was %s: %s", user, name, d.Received.Format(time.RFC3339Nano), v.Class, v.Reason)
		}
	}
	return checked
}

// nodeAt says whether a Node named name existed at time at, by the last audited create or delete
// of that Node (or of all Nodes) completed before it. The returned UID is not known from
// metadata-level events, so a placeholder stands in.
func nodeAt(events []testenv.AuditEvent, name string, at time.Time) *lease.NodeRef {
	exists := false
	for _, e := range events {
		if e.Resource() != "nodes" || !e.Completed.Before(at) {
			continue
		}
		switch {
		case e.Verb == "create" && e.Code() == 201 && e.Name() == name:
			exists = true
		case e.Verb == "delete" && e.Code() == 200 && e.Name() == name:
			exists = false
		case e.Verb == "deletecollection" && e.Code() == 200:
			exists = false
		}
	}
	if exists {
		return &lease.NodeRef{Name: name, UID: "existing-node"}
	}
	return nil
}

// readAuditStarted returns every request once: a watch at its start (stage ResponseStarted), any
// other request at its completion.
func readAuditStarted(t testing.TB) []testenv.AuditEvent {
	t.Helper()
	return testenv.ReadAudit(t, env.AuditLogPath(), "", func(e testenv.AuditEvent) bool {
		return (e.Verb == "watch" && e.Stage == "ResponseStarted") || (e.Verb != "watch" && e.Stage == "ResponseComplete")
	})
}

// isList reports a list: a LIST, or a streaming list (a WATCH with sendInitialEvents=true).
func isList(e testenv.AuditEvent) bool {
	return e.Verb == "list" || (e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true"))
}

// firstRequest is the earliest request (by arrival) of user on resource, or nil.
func firstRequest(events []testenv.AuditEvent, user, resource string) *testenv.AuditEvent {
	var first *testenv.AuditEvent
	for i := range events {
		e := &events[i]
		if e.User.Username == user && e.Resource() == resource && (first == nil || e.Received.Before(first.Received)) {
			first = e
		}
	}
	return first
}

// countRequests counts user's completed requests of verb on resource at or after since.
func countRequests(events []testenv.AuditEvent, user, verb, resource string, since time.Time) int {
	n := 0
	for _, e := range events {
		if e.User.Username == user && e.Verb == verb && e.Resource() == resource && !e.Received.Before(since) {
			n++
		}
	}
	return n
}
