package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/controlplane"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
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

// writtenVersions indexes every lease version an audited write produced (its response body) by
// "uid/resourceVersion", the key a DELETE's preconditions name.
func writtenVersions(events []testenv.AuditEvent) map[string]*coordinationv1.Lease {
	versions := map[string]*coordinationv1.Lease{}
	for _, e := range events {
		if e.Resource() != "leases" || e.Verb == "delete" || len(e.ResponseObject) == 0 {
			continue
		}
		var l coordinationv1.Lease
		if json.Unmarshal(e.ResponseObject, &l) == nil && l.UID != "" {
			versions[string(l.UID)+"/"+l.ResourceVersion] = &l
		}
	}
	return versions
}

// preconditionVersion is the "uid/resourceVersion" an audited lease DELETE's preconditions name;
// a DELETE without both preconditions fails the test (nodekeeper never sends one), and ok is false.
func preconditionVersion(t testing.TB, d testenv.AuditEvent) (version string, ok bool) {
	t.Helper()
	var opts metav1.DeleteOptions
	if err := json.Unmarshal(d.RequestObject, &opts); err != nil || opts.Preconditions == nil ||
		opts.Preconditions.UID == nil || opts.Preconditions.ResourceVersion == nil {
		t.Errorf("audit: DELETE of lease %s without UID and resourceVersion preconditions (%s)", d.Name(), d.RequestObject)
		return "", false
	}
	return string(*opts.Preconditions.UID) + "/" + *opts.Preconditions.ResourceVersion, true
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
	versions := writtenVersions(events)
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
		version, ok := preconditionVersion(t, d)
		if !ok {
			continue
		}
		l := versions[version]
		if l == nil || l.Name != name {
			t.Errorf("audit: DELETE of lease %s names version %s, which no audited write produced", name, version)
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

// The fault proof reads two witnesses. The audit log says who sent which DELETE, when it
// arrived and with which preconditions; etcd's history (kept whole: testenv.Options.KeepHistory)
// says exactly which version of which lease each delete removed, at which revision, and whether
// the Node existed at that revision. A stopped or overloaded API server can commit a write whose
// audit event is lost; etcd cannot lose it. So the proof starts from etcd's list of deletions —
// every one of them, audited or not — and never skips a DELETE for want of an audit event.

// deleteProof is the outcome of proveDeletes.
type deleteProof struct {
	// byReplica counts the controller's lease deletions, proven leaked at the moment each happened.
	byReplica int
	// versionFromAudit and versionFromEtcd split byReplica by where the deleted version was read:
	// the audited write that produced it, or etcd (its audit event was lost).
	versionFromAudit, versionFromEtcd int
	// unaudited counts deletions of ownerless leases with no audited DELETE at all (proven at
	// the earliest moment they can have happened, from the audited writes around them).
	unaudited int
	// byGarbageCollector counts deletions of leases owned by a Node (the garbage collector's).
	byGarbageCollector int
	// deletedAt is, per lease name, when its last ownerless version was deleted: the DELETE's
	// arrival, or for an unaudited one the latest moment it can have happened.
	deletedAt map[string]time.Time
	// deletedVersion is, per lease name, the version that deletion removed.
	deletedVersion map[string]*coordinationv1.Lease
	// deletions counts, per lease name, the deletions of an ownerless version.
	deletions map[string]int
}

// revisionClock bounds when an etcd revision was committed, from audited writes whose response
// names the revision they wrote: a revision after a write's was committed after that request
// arrived, and a revision before one was committed before that request completed.
type revisionClock struct {
	revs      []int64
	earliest  []time.Time // earliest[i]: the latest arrival among writes at revs[0..i]
	latestEnd []time.Time // latestEnd[i]: the earliest completion among writes at revs[i..]
}

func newRevisionClock(events []testenv.AuditEvent) *revisionClock {
	type write struct {
		rev                 int64
		received, completed time.Time
	}
	var writes []write
	for _, e := range events {
		if e.Verb == "delete" || len(e.ResponseObject) == 0 || e.Code() >= 300 {
			continue // a delete's response is the removed version, not the revision of the delete
		}
		var m struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if json.Unmarshal(e.ResponseObject, &m) != nil {
			continue
		}
		if rev, err := strconv.ParseInt(m.Metadata.ResourceVersion, 10, 64); err == nil {
			writes = append(writes, write{rev, e.Received, e.Completed})
		}
	}
	sort.Slice(writes, func(i, j int) bool { return writes[i].rev < writes[j].rev })
	rc := &revisionClock{revs: make([]int64, len(writes)), earliest: make([]time.Time, len(writes)), latestEnd: make([]time.Time, len(writes))}
	for i, w := range writes {
		rc.revs[i] = w.rev
		rc.earliest[i] = w.received
		if i > 0 && rc.earliest[i-1].After(w.received) {
			rc.earliest[i] = rc.earliest[i-1]
		}
	}
	for i := len(writes) - 1; i >= 0; i-- {
		rc.latestEnd[i] = writes[i].completed
		if i < len(writes)-1 && rc.latestEnd[i+1].Before(writes[i].completed) {
			rc.latestEnd[i] = rc.latestEnd[i+1]
		}
	}
	return rc
}

// bounds returns the earliest and latest moment revision rev can have been committed (zero
// when no audited write lies before, respectively after it).
func (rc *revisionClock) bounds(rev int64) (from, to time.Time) {
	i := sort.Search(len(rc.revs), func(i int) bool { return rc.revs[i] >= rev })
	if i > 0 {
		from = rc.earliest[i-1]
	}
	j := sort.Search(len(rc.revs), func(i int) bool { return rc.revs[i] > rev })
	if j < len(rc.revs) {
		to = rc.latestEnd[j]
	}
	return from, to
}

// proveDeletes checks every lease deletion etcd recorded in kube-node-lease against the audit
// log, and fails the benchmark for every one that was not proven:
//
//   - a deletion matched by user's audited DELETE (same lease, its preconditions naming the removed
//     version's UID and resourceVersion) must classify as leaked at the DELETE's arrival, with the
//     version it removed (from the audited write that produced it, else from etcd) and the Node as
//     etcd held it at the deletion's revision;
//   - a deletion of an ownerless lease that no audited DELETE explains must classify as leaked at
//     the earliest moment it can have happened;
//   - a deletion of a lease owned by a Node is the garbage collector's (user never deletes one:
//     if user's audited DELETE matched it, the first rule fails it);
//   - every audited DELETE by user that succeeded must match a deletion in etcd.
//
// The API server must be stopped (testenv.Env.Deletions reads etcd's history to its end).
func proveDeletes(b testing.TB, e *testenv.Env, events []testenv.AuditEvent, user string, grace time.Duration) deleteProof {
	b.Helper()
	ctx := context.Background()
	dels, err := e.Deletions(ctx, controlplane.LeasePrefix(lease.NodeLeaseNamespace))
	if err != nil {
		b.Fatal(err)
	}
	audited := writtenVersions(events)
	// user's successful DELETEs by the version their preconditions named.
	type auditedDelete struct {
		ev      testenv.AuditEvent
		matched bool
	}
	deletes := map[string]*auditedDelete{}
	for _, d := range auditDeletes(events, user) {
		if d.Code() != 200 {
			continue // refused by a precondition, or gone: nothing was deleted
		}
		if version, ok := preconditionVersion(b, d); ok {
			deletes[version] = &auditedDelete{ev: d}
		}
	}
	clock := newRevisionClock(events)
	p := deleteProof{deletedAt: map[string]time.Time{}, deletedVersion: map[string]*coordinationv1.Lease{}, deletions: map[string]int{}}
	for _, del := range dels {
		obj, err := del.Previous.Decode()
		if err != nil {
			b.Errorf("etcd: %v", err)
			continue
		}
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			b.Errorf("etcd: %s holds a %T, not a Lease", del.Previous.Key, obj)
			continue
		}
		name := strings.TrimPrefix(del.Previous.Key, controlplane.LeasePrefix(lease.NodeLeaseNamespace))
		node, err := e.StoredAt(ctx, controlplane.NodeKey(name), del.Revision)
		if err != nil {
			b.Fatal(err)
		}
		var nodeRef *lease.NodeRef
		if node != nil {
			nodeRef = &lease.NodeRef{Name: name, UID: "existing-node"}
			if obj, err := node.Decode(); err == nil {
				if m, ok := obj.(metav1.Object); ok {
					nodeRef.UID = m.GetUID()
				}
			}
		}
		version := string(l.UID) + "/" + l.ResourceVersion
		from, to := clock.bounds(del.Revision)
		var at time.Time // the moment the proof classifies at
		switch d := deletes[version]; {
		case d != nil:
			d.matched = true
			p.byReplica++
			if w := audited[version]; w != nil {
				l = w
				p.versionFromAudit++
			} else {
				p.versionFromEtcd++
			}
			at = d.ev.Received
			p.deletedAt[name] = d.ev.Received
		case len(l.OwnerReferences) > 0:
			p.byGarbageCollector++
			continue
		default:
			p.unaudited++
			at = from
			p.deletedAt[name] = to
		}
		p.deletedVersion[name] = l
		p.deletions[name]++
		if at.IsZero() {
			b.Errorf("lease %s deleted at revision %d with no audited write before it: cannot date the deletion", name, del.Revision)
			continue
		}
		if v := lease.Classify(l, nodeRef, at, lease.Options{GracePeriod: grace}); v.Class != lease.Leaked {
			b.Errorf("lease %s (uid %s, resourceVersion %s) deleted at revision %d, at %s, while it was %s: %s",
				name, l.UID, l.ResourceVersion, del.Revision, at.Format(time.RFC3339Nano), v.Class, v.Reason)
		}
	}
	for version, d := range deletes {
		if !d.matched {
			b.Errorf("audit: %s's DELETE of lease %s (version %s) succeeded, but etcd recorded no deletion of that version", user, d.ev.Name(), version)
		}
	}
	return p
}

// String is the proof's one-line summary.
func (p deleteProof) String() string {
	return fmt.Sprintf("%d deletes by the controller proven leaked (deleted version from the audit log: %d, from etcd: %d; Node from etcd at each delete's revision), %d unaudited deletes proven from etcd, %d by the garbage collector",
		p.byReplica, p.versionFromAudit, p.versionFromEtcd, p.unaudited, p.byGarbageCollector)
}
