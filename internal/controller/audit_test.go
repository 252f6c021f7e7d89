package controller

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the assertions read. It is decoded here
// rather than with the API types so that the test depends only on the log's documented fields.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		APIGroup  string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
	Received       time.Time       `json:"requestReceivedTimestamp"`
	Completed      time.Time       `json:"stageTimestamp"`
}

func (e auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (e auditEvent) resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Resource
}

func (e auditEvent) name() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Name
}

// readAudit returns every completed request in the test API server's audit log.
func readAudit(t testing.TB) []auditEvent {
	t.Helper()
	return readAuditFile(t, env.AuditLogPath())
}

// readAuditFile returns every completed request in the audit log at path.
func readAuditFile(t testing.TB, path string) []auditEvent {
	t.Helper()
	return scanAudit(t, path, func(e auditEvent) bool { return e.Stage == "ResponseComplete" || e.Stage == "Panic" })
}

// scanAudit returns the events of the audit log at path that keep accepts.
func scanAudit(t testing.TB, path string, keep func(auditEvent) bool) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	dec := json.NewDecoder(f)
	for {
		var e auditEvent
		if err := dec.Decode(&e); err != nil {
			break // io.EOF, or the API server is mid-line on the last event: everything before it counts
		}
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// auditDeletes returns the lease DELETEs (any outcome) user sent.
func auditDeletes(events []auditEvent, user string) []auditEvent {
	var out []auditEvent
	for _, e := range events {
		if e.User.Username == user && e.Verb == "delete" && e.resource() == "leases" {
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
		if e.resource() != "leases" || e.Verb == "delete" || len(e.ResponseObject) == 0 {
			continue
		}
		var l coordinationv1.Lease
		if json.Unmarshal(e.ResponseObject, &l) == nil && l.UID != "" {
			versions[string(l.UID)+"/"+l.ResourceVersion] = &l
		}
	}
	checked := 0
	for _, d := range auditDeletes(events, user) {
		if d.code() != 200 {
			continue // refused by a precondition or gone: nothing was deleted
		}
		checked++
		name := d.name()
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
func nodeAt(events []auditEvent, name string, at time.Time) *lease.NodeRef {
	exists := false
	for _, e := range events {
		if e.resource() != "nodes" || !e.Completed.Before(at) {
			continue
		}
		switch {
		case e.Verb == "create" && e.code() == 201 && e.name() == name:
			exists = true
		case e.Verb == "delete" && e.code() == 200 && e.name() == name:
			exists = false
		case e.Verb == "deletecollection" && e.code() == 200:
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
func readAuditStarted(t testing.TB) []auditEvent {
	t.Helper()
	return scanAudit(t, env.AuditLogPath(), func(e auditEvent) bool {
		return (e.Verb == "watch" && e.Stage == "ResponseStarted") || (e.Verb != "watch" && e.Stage == "ResponseComplete")
	})
}

// isList reports a list: a LIST, or a streaming list (a WATCH with sendInitialEvents=true).
func (e auditEvent) isList() bool {
	return e.Verb == "list" || (e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true"))
}

// firstRequest is the earliest request (by arrival) of user on resource, or nil.
func firstRequest(events []auditEvent, user, resource string) *auditEvent {
	var first *auditEvent
	for i := range events {
		e := &events[i]
		if e.User.Username == user && e.resource() == resource && (first == nil || e.Received.Before(first.Received)) {
			first = e
		}
	}
	return first
}

// countRequests counts user's completed requests of verb on resource at or after since.
func countRequests(events []auditEvent, user, verb, resource string, since time.Time) int {
	n := 0
	for _, e := range events {
		if e.User.Username == user && e.Verb == verb && e.resource() == resource && !e.Received.Before(since) {
			n++
		}
	}
	return n
}
