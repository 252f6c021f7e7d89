// Package deleter is the single place where nodekeeper decides to DELETE a lease, shared by the
// in-cluster controller and the one-shot `nodekeeper gc`. It also adopts unowned leases (adds the
// Node ownerReference), the controller's only other write.
//
// A lease is deleted only when all three safety rules hold, checked in this order:
//
//  1. the lease, as the caller last saw it (informer cache or LIST), classifies as lease.Leaked;
//  2. a live read of the Node with the lease's name finds none (the cache may lag behind a Node
//     that has just registered): a GET started after the decision, or for bulk deletes one
//     consistent LIST of Nodes started after all the decisions it answers (see NodeChecker);
//  3. the DELETE carries Preconditions{UID, ResourceVersion} of that very lease, so a lease that
//     was renewed, adopted or re-created in between is never removed. A precondition failure is
//     reported as PreconditionFailed for the caller to re-classify from fresh data; the deleter
//     never retries it.
//
// The deleter keeps no state, so any number of goroutines may share one.
package deleter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Outcome is what happened to one lease.
type Outcome string

const (
	// Deleted: the DELETE succeeded.
	Deleted Outcome = "deleted"
	// WouldDelete: dry run; every check passed and the DELETE was not sent.
	WouldDelete Outcome = "would-delete"
	// NotLeaked: the lease does not classify as leaked (rule 1); nothing was sent.
	NotLeaked Outcome = "not-leaked"
	// NodeExists: the live GET found the Node (rule 2); the caller's Node data is stale.
	NodeExists Outcome = "node-exists"
	// PreconditionFailed: the lease changed (renewed, adopted, re-created) since it was read
	// (rule 3); re-classify from fresh data, never retry blindly.
	PreconditionFailed Outcome = "precondition-failed"
	// Gone: the lease no longer existed when the DELETE arrived.
	Gone Outcome = "gone"
	// Adopted: the Node ownerReference was added to an unowned lease.
	Adopted Outcome = "adopted"
	// WouldAdopt: dry run of an adoption.
	WouldAdopt Outcome = "would-adopt"
	// NotUnowned: an adoption was asked for a lease that does not classify as unowned.
	NotUnowned Outcome = "not-unowned"
	// NodeMissing: an adoption found no Node on its live GET.
	NodeMissing Outcome = "node-missing"
	// Failed: an API error other than the above; Result.Err has it.
	Failed Outcome = "failed"
)

// Result reports one decision.
type Result struct {
	Outcome Outcome
	// Verdict is the classification the decision was based on.
	Verdict lease.Verdict
	// Reason is one line explaining the outcome (for logs, events and gc output).
	Reason string
	// Step names the request that failed ("get node", "delete lease", "patch lease") when
	// Outcome is Failed.
	Step string
	// Err is set when Outcome is Failed.
	Err error
	// Requests counts the API requests this decision sent (for benchmarks and summaries).
	Requests int
}

// Options configure a Deleter.
type Options struct {
	// Classify holds the grace period; it must match what the caller classified with.
	Classify lease.Options
	// DryRun runs every read and check but sends no DELETE and no PATCH.
	DryRun bool
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
	// NodeChecker performs the live Node check of Delete; nil means a GET per lease.
	NodeChecker NodeChecker
	// MaxWritesInFlight bounds the DELETEs and PATCHes sent at once (0: no bound). A bulk caller
	// with many workers keeps its writes within one HTTP/2 connection's stream limit with it:
	// beyond that limit the client dials a new TLS connection for every request that finds no
	// free stream, which costs both ends a handshake. A write waits for its slot after its live
	// Node check; the preconditions still pin the lease version the decision was made on.
	MaxWritesInFlight int
}

// Deleter deletes leaked leases and adopts unowned ones in kube-node-lease.
type Deleter struct {
	leases coordinationclient.LeaseInterface
	nodes  metadata.ResourceInterface
	check  NodeChecker
	opts   Options
	slots  chan struct{} // MaxWritesInFlight; nil: unbounded
}

// New builds a Deleter from clients the caller configured (content type, rate limits).
func New(leases coordinationclient.LeasesGetter, nodes metadata.Interface, opts Options) (*Deleter, error) {
	if err := opts.Classify.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	d := &Deleter{
		leases: leases.Leases(lease.NodeLeaseNamespace),
		nodes:  nodes.Resource(kube.NodesResource),
		check:  opts.NodeChecker,
		opts:   opts,
	}
	if d.check == nil {
		d.check = GetNodeChecker{Nodes: d.nodes}
	}
	if opts.MaxWritesInFlight < 0 {
		return nil, fmt.Errorf("deleter: MaxWritesInFlight must not be negative, got %d", opts.MaxWritesInFlight)
	}
	if opts.MaxWritesInFlight > 0 {
		d.slots = make(chan struct{}, opts.MaxWritesInFlight)
	}
	return d, nil
}

// DryRun reports whether the deleter sends no writes.
func (d *Deleter) DryRun() bool { return d.opts.DryRun }

// Delete deletes l if and only if it is leaked (classified with node, the caller's view of the
// Node named like the lease: nil for none), a live GET of that Node returns NotFound, and the
// lease still has l's UID and resourceVersion on the server.
func (d *Deleter) Delete(ctx context.Context, l *coordinationv1.Lease, node *lease.NodeRef) Result {
	r, ok := d.admit(l, node, lease.Leaked, NotLeaked, "deleted", "delete")
	if !ok {
		if f, ok := d.check.(interface{ Forget(name string) }); ok {
			f.Forget(l.Name) // a prefetched check nobody will ask for must not hold its window
		}
		return r
	}
	v := r.Verdict

	exists, n, err := d.check.NodeExists(ctx, l.Name)
	r.Requests += n
	switch {
	case err != nil:
		return r.failed("get node", err, fmt.Sprintf("not deleted: live read of Node %s failed: %v", l.Name, err))
	case exists:
		r.Outcome = NodeExists
		r.Reason = fmt.Sprintf("not deleted: a live read found Node %s (the cached view was stale)", l.Name)
		return r
	}

	if d.opts.DryRun {
		r.Outcome = WouldDelete
		r.Reason = "dry run: would delete; " + v.Reason
		return r
	}
	uid, rv := l.UID, l.ResourceVersion
	release, err := d.acquire(ctx)
	if err != nil {
		return r.failed("delete lease", err, fmt.Sprintf("not deleted: %v", err))
	}
	r.Requests++
	err = d.leases.Delete(ctx, l.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	release()
	switch {
	case err == nil:
		r.Outcome = Deleted
		r.Reason = "deleted: " + v.Reason
	case apierrors.IsNotFound(err):
		r.Outcome = Gone
		r.Reason = "already gone when the DELETE arrived"
	case apierrors.IsConflict(err):
		r.Outcome = PreconditionFailed
		r.Reason = fmt.Sprintf("not deleted: lease changed since resourceVersion %s (renewed, adopted or re-created): %v", rv, err)
	default:
		r = r.failed("delete lease", err, fmt.Sprintf("DELETE failed: %v", err))
	}
	return r
}

// failed is r for a request (step) that failed with err; reason is its line for the user.
func (r Result) failed(step string, err error, reason string) Result {
	r.Outcome, r.Step, r.Err, r.Reason = Failed, step, err, reason
	return r
}

// acquire waits for a write slot (MaxWritesInFlight) and returns its release.
func (d *Deleter) acquire(ctx context.Context) (func(), error) {
	if d.slots == nil {
		return func() {}, nil
	}
	select {
	case d.slots <- struct{}{}:
		return func() { <-d.slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// admit classifies l and reports whether a write to it may go ahead: it must be a node lease of
// class want (else the result is skip, "not <done>") with a UID and resourceVersion to pin, since
// a write without both preconditions could hit a newer lease of the same name. verb names the write.
func (d *Deleter) admit(l *coordinationv1.Lease, node *lease.NodeRef, want lease.Class, skip Outcome, done, verb string) (Result, bool) {
	v := lease.Classify(l, node, d.opts.Clock.Now(), d.opts.Classify)
	r := Result{Verdict: v}
	if v.Class != want || l.Namespace != lease.NodeLeaseNamespace {
		r.Outcome = skip
		r.Reason = fmt.Sprintf("not %s: classified %s (%s)", done, v.Class, v.Reason)
		return r, false
	}
	if l.UID == "" || l.ResourceVersion == "" {
		err := fmt.Errorf("lease %s/%s has no uid or resourceVersion; refusing to %s without preconditions", l.Namespace, l.Name, verb)
		return r.failed("check lease", err, err.Error()), false
	}
	return r, true
}

// Adopt adds the ownerReference {v1, Node, name, uid} to l if l is unowned (classified with node,
// the caller's view of the Node). The Node's UID comes from a live GET, never from the cache: a
// stale UID would make the upstream garbage collector delete the lease at once. The patch carries
// l's UID and resourceVersion, so it fails (PreconditionFailed) if anyone changed the lease since.
func (d *Deleter) Adopt(ctx context.Context, l *coordinationv1.Lease, node *lease.NodeRef) Result {
	r, ok := d.admit(l, node, lease.Unowned, NotUnowned, "adopted", "patch")
	if !ok {
		return r
	}
	r.Requests++
	live, err := d.nodes.Get(ctx, l.Name, metav1.GetOptions{})
	switch {
	case NodeAbsent(err, l.Name):
		r.Outcome = NodeMissing
		r.Reason = fmt.Sprintf("not adopted: a live GET found no Node %s", l.Name)
		return r
	case err != nil:
		return r.failed("get node", err, fmt.Sprintf("not adopted: live GET of Node %s failed: %v", l.Name, err))
	}
	if d.opts.DryRun {
		r.Outcome = WouldAdopt
		r.Reason = fmt.Sprintf("dry run: would add ownerReference to Node %s (uid %s)", live.Name, live.UID)
		return r
	}
	patch, err := AdoptPatch(l, live.Name, live.UID)
	if err != nil {
		return r.failed("build patch", err, err.Error())
	}
	release, err := d.acquire(ctx)
	if err != nil {
		return r.failed("patch lease", err, fmt.Sprintf("not adopted: %v", err))
	}
	r.Requests++
	_, err = d.leases.Patch(ctx, l.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: kube.FieldManager})
	release()
	switch {
	case err == nil:
		r.Outcome = Adopted
		r.Reason = fmt.Sprintf("adopted: ownerReference to Node %s (uid %s) added", live.Name, live.UID)
	case apierrors.IsNotFound(err):
		r.Outcome = Gone
		r.Reason = "lease gone before adoption"
	case apierrors.IsConflict(err):
		r.Outcome = PreconditionFailed
		r.Reason = fmt.Sprintf("not adopted: lease changed since resourceVersion %s: %v", l.ResourceVersion, err)
	default:
		r = r.failed("patch lease", err, fmt.Sprintf("adoption PATCH failed: %v", err))
	}
	return r
}

// AdoptPatch is the JSON merge patch that adopts l: it sets ownerReferences (a merge patch
// replaces the list, which is right because the lease has none at the resourceVersion the patch
// pins) and pins uid and resourceVersion so that the API server rejects it with a Conflict if the
// lease changed.
func AdoptPatch(l *coordinationv1.Lease, nodeName string, nodeUID types.UID) ([]byte, error) {
	if len(l.OwnerReferences) != 0 {
		return nil, errors.New("lease already has ownerReferences; adoption would replace them")
	}
	if nodeName != l.Name || nodeUID == "" {
		return nil, fmt.Errorf("refusing to adopt lease %s into Node %q uid %q", l.Name, nodeName, nodeUID)
	}
	type ref struct {
		APIVersion string    `json:"apiVersion"`
		Kind       string    `json:"kind"`
		Name       string    `json:"name"`
		UID        types.UID `json:"uid"`
	}
	type meta struct {
		UID             types.UID `json:"uid"`
		ResourceVersion string    `json:"resourceVersion"`
		OwnerReferences []ref     `json:"ownerReferences"`
	}
	return json.Marshal(map[string]meta{"metadata": {
		UID: l.UID, ResourceVersion: l.ResourceVersion,
		OwnerReferences: []ref{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}},
	}})
}
