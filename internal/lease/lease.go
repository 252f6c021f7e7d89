// Package lease is nodekeeper's lease taxonomy: the one place that decides what a Lease object is
// (a live node heartbeat, a stale one, a leak, a zombie kubelet's, a leader-election lock, an API
// server identity, ...). Every command classifies through Classify so that the controller, the
// one-shot gc, `nodekeeper leases`, `doctor` and `audit` never disagree about a lease.
//
// The package is pure: no client code, no clock of its own. The caller passes the lease, the Node
// that has the lease's name (nil when there is none) and the time. The classification is
// deliberately conservative: the only class that allows a delete is Leaked, and every doubt (an
// unknown owner, a holder that is not the node, a renewTime in the future, missing timestamps)
// resolves to a class that is reported, never deleted.
package lease

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Class is the kind of a lease. The string values are stable: they appear in metrics labels,
// JSON output, events and docs.
type Class string

const (
	// Healthy: a node lease owned by its current Node and renewed within its duration.
	Healthy Class = "healthy"
	// Stale: a node lease whose Node exists but which has not been renewed within its duration.
	Stale Class = "stale"
	// Unowned: a node lease without ownerReferences whose Node exists; adopting it (adding the
	// ownerReference) lets the upstream garbage collector remove it with its Node later.
	Unowned Class = "unowned"
	// StaleOwner: a node lease whose Node ownerReference has another UID than the Node that now has
	// that name (the Node was re-created). The upstream garbage collector removes it.
	StaleOwner Class = "stale-owner"
	// OwnerMissing: a node lease owned by a Node that no longer exists; the upstream garbage
	// collector has yet to remove it.
	OwnerMissing Class = "owner-missing"
	// Zombie: a node lease with no Node and no owner that was renewed within the grace period: a
	// kubelet is (or was until very recently) running without its Node. Never deleted: a live
	// kubelet re-creates it at once.
	Zombie Class = "zombie"
	// Leaked: a node lease with no Node and no owner that has not been renewed for longer than the
	// grace period. The only class that may be deleted.
	Leaked Class = "leaked"
	// Leader: a leader-election lease outside kube-node-lease.
	Leader Class = "leader"
	// APIServerIdentity: a kube-apiserver identity lease (kube-system, label
	// apiserver.kubernetes.io/identity=kube-apiserver), garbage-collected by kube-apiserver itself.
	APIServerIdentity Class = "apiserver-identity"
	// Other: any other lease, including leases in kube-node-lease that a kubelet did not write
	// (holder is not the lease's name, owned by something other than its Node). Report only.
	Other Class = "other"
)

// Classes lists every class in display order (node classes from good to bad, then the rest).
// Callers use it to initialise per-class metrics and summary tables so that zero counts show.
func Classes() []Class {
	return []Class{Healthy, Stale, Unowned, StaleOwner, OwnerMissing, Zombie, Leaked, Leader, APIServerIdentity, Other}
}

// ParseClass turns a class name (as printed) back into a Class.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes() {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, 0, len(Classes()))
	for _, c := range Classes() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("unknown lease class %q (want one of %s)", s, strings.Join(names, ", "))
}

// NodeLeaseNamespace is where kubelets keep their heartbeat leases (client-go's own constant).
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// APIServerIdentityLabel marks kube-apiserver identity leases (value "kube-apiserver").
const APIServerIdentityLabel = "apiserver.kubernetes.io/identity"

// DefaultNodeLeaseDuration is the kubelet's default nodeLeaseDurationSeconds; it stands in when a
// node lease has no spec.leaseDurationSeconds.
const DefaultNodeLeaseDuration = 40 * time.Second

// DefaultGracePeriod is how long an ownerless lease without a Node must go unrenewed before it is
// leaked. An hour is far beyond any kubelet restart or Node registration, and a leaked lease costs
// almost nothing while it waits, whereas deleting a lease a kubelet still uses costs a node.
const DefaultGracePeriod = time.Hour

// NodeRef identifies the Node that currently has a lease's name.
type NodeRef struct {
	Name string
	UID  types.UID
}

// Options tune the classification.
type Options struct {
	// GracePeriod is how long an ownerless lease without a Node must go unrenewed before it is
	// Leaked. Zero means DefaultGracePeriod. A grace period shorter than the lease's own duration
	// is raised to that duration: a lease is never leaked while its holder may still hold it.
	GracePeriod time.Duration
}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if o.GracePeriod < 0 {
		return fmt.Errorf("grace period must not be negative, got %s", o.GracePeriod)
	}
	return nil
}

func (o Options) grace() time.Duration {
	if o.GracePeriod <= 0 {
		return DefaultGracePeriod
	}
	return o.GracePeriod
}

// Verdict is the result of classifying one lease at one moment.
type Verdict struct {
	Class  Class
	Reason string // one line, with the facts that decided the class
	// RenewTime is spec.renewTime (zero when the lease was never renewed).
	RenewTime time.Time
	// RenewAge is now − spec.renewTime; negative when renewTime is in the future (clock skew);
	// zero when the lease was never renewed.
	RenewAge time.Duration
	// Expired reports that the lease was not renewed within its duration (or never renewed).
	Expired bool
	// LastActivity is the latest of renewTime, acquireTime and creationTimestamp: the last time
	// anything said the lease was alive. The grace period counts from it. renewTime and
	// acquireTime come from the kubelet's clock; creationTimestamp is stamped by the API server.
	// A kubelet whose clock runs behind writes a renewTime that is already old when it creates
	// its lease; without the creation time a pre-1.29 zombie with a lagging clock would be
	// deleted the moment it re-created its lease, and fought forever.
	LastActivity time.Time
	// RecheckAt is the moment this lease's class changes by the passage of time alone
	// (healthy→stale, zombie→leaked); zero when no time-driven change is pending. Classifying at
	// or after RecheckAt yields the new class.
	RecheckAt time.Time
}

// Classify decides the class of l at time now. node is the Node whose name equals the lease's name,
// or nil when no such Node exists; it is ignored for leases outside kube-node-lease.
func Classify(l *coordinationv1.Lease, node *NodeRef, now time.Time, opts Options) Verdict {
	return classify(l, node, now, opts, explainer(true))
}

// ClassOf is Classify without the Reason (left empty), for hot paths that classify every lease
// of a large cluster often, such as a metrics scrape: it does not format a single string.
// Every other field is exactly what Classify returns.
func ClassOf(l *coordinationv1.Lease, node *NodeRef, now time.Time, opts Options) Verdict {
	return classify(l, node, now, opts, explainer(false))
}

// explainer says whether to format reasons; every fmt.Sprintf of a reason sits behind it, so that
// ClassOf allocates nothing for them.
type explainer bool

func (e explainer) s(text string) string {
	if !e {
		return ""
	}
	return text
}

func classify(l *coordinationv1.Lease, node *NodeRef, now time.Time, opts Options, why explainer) Verdict {
	if l == nil {
		return Verdict{Class: Other, Reason: why.s("no lease")}
	}
	v := Verdict{}
	if l.Spec.RenewTime != nil {
		v.RenewTime = l.Spec.RenewTime.Time
		v.RenewAge = now.Sub(v.RenewTime)
	}
	v.LastActivity = latest(l.Spec.RenewTime, l.Spec.AcquireTime, &l.CreationTimestamp)

	if l.Namespace != NodeLeaseNamespace {
		return classifyNonNode(l, now, v, why)
	}

	duration := DefaultNodeLeaseDuration
	durationNote := ""
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		duration = time.Duration(*d) * time.Second
	} else {
		if why {
			durationNote = fmt.Sprintf(" (no leaseDurationSeconds, assumed %s)", Setting(DefaultNodeLeaseDuration))
		}
	}
	var deadline time.Time // zero when never renewed
	if !v.RenewTime.IsZero() {
		deadline = v.RenewTime.Add(duration)
		v.Expired = !now.Before(deadline)
	} else {
		v.Expired = true
	}
	renewed := ""
	if why {
		renewed = describeRenew(v, now) + durationNote
	}

	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder != l.Name {
		v.Class = Other
		if l.Spec.HolderIdentity == nil {
			v.Reason = why.s("in " + NodeLeaseNamespace + " but has no holderIdentity, so no kubelet wrote it")
		} else {
			if why {
				v.Reason = fmt.Sprintf("in %s but held by %q, not by a kubelet named like the lease", NodeLeaseNamespace, holder)
			}
		}
		return v
	}

	switch first := NodeOwner(l); {
	case first != nil:
		return classifyOwned(l, node, first, v, deadline, renewed, why)
	case len(l.OwnerReferences) > 0:
		v.Class = Other
		if why {
			_, foreign := splitOwners(l)
			v.Reason = fmt.Sprintf("owned by %s, not by its Node; left to that owner's garbage collection", describeRefs(foreign))
		}
		return v
	case node != nil:
		v.Class = Unowned
		if why {
			v.Reason = fmt.Sprintf("Node %s (uid %s) exists but the lease has no ownerReference; %s", node.Name, node.UID, renewed)
		}
		return v
	}

	// No Node, no owner: zombie or leaked, decided by how long the lease has been idle.
	if v.LastActivity.IsZero() {
		v.Class = Other
		v.Reason = why.s("no Node and no owner, but neither renewTime nor creationTimestamp is set, so its age cannot be judged")
		return v
	}
	grace := opts.grace()
	graceNote := ""
	if grace < duration {
		grace = duration
		if why {
			graceNote = fmt.Sprintf(" (grace raised to the lease duration %s)", Setting(duration))
		}
	}
	leakAt := v.LastActivity.Add(grace)
	serverClock := bool(why) && createdLast(l, v.LastActivity)
	if serverClock {
		// The holder's own timestamps are older than the object: its clock is behind, or the
		// lease was restored or copied. Either way the object is only as old as its creation.
		renewed += fmt.Sprintf("; created %s ago by the API server, later than its holder's timestamps (holder clock behind?), so idle time counts from creation",
			Elapsed(now.Sub(v.LastActivity)))
	}
	if now.Before(leakAt) {
		v.Class = Zombie
		v.RecheckAt = leakAt
		state := "a kubelet is renewing it without its Node"
		switch {
		case serverClock:
			state = "created recently"
		case v.Expired:
			state = "its kubelet stopped recently"
		}
		if why {
			v.Reason = fmt.Sprintf("no Node named %s and no owner; %s; %s; leaked at %s unless renewed%s",
				l.Name, renewed, state, leakAt.UTC().Format(time.RFC3339), graceNote)
		}
		return v
	}
	v.Class = Leaked
	if why {
		v.Reason = fmt.Sprintf("no Node named %s and no owner; idle for %s, longer than the grace period %s%s; %s",
			l.Name, Elapsed(now.Sub(v.LastActivity)), Setting(grace), graceNote, renewed)
	}
	return v
}

// createdLast reports whether the creation time is the lease's last activity and later than a
// renewTime or acquireTime by more than the second creationTimestamp is rounded to: the server's
// clock, not the holder's, is what keeps the lease from being leaked.
func createdLast(l *coordinationv1.Lease, last time.Time) bool {
	if !l.CreationTimestamp.Time.Equal(last) {
		return false
	}
	for _, mt := range []*metav1.MicroTime{l.Spec.RenewTime, l.Spec.AcquireTime} {
		if mt != nil && mt.Time.Add(time.Second).After(last) {
			return false
		}
	}
	return true
}

// classifyOwned handles a node lease that has at least one Node ownerReference named like the lease.
// first is the first Node ownerReference named like the lease; it allocates nothing, as ClassOf
// must not.
func classifyOwned(l *coordinationv1.Lease, node *NodeRef, first *metav1.OwnerReference, v Verdict, deadline time.Time, renewed string, why explainer) Verdict {
	extra := ""
	if len(l.OwnerReferences) > 1 {
		if why {
			extra = fmt.Sprintf("; %d ownerReferences", len(l.OwnerReferences))
		}
	}
	if node == nil {
		v.Class = OwnerMissing
		if why {
			v.Reason = fmt.Sprintf("owner Node %s (uid %s) no longer exists; pending upstream garbage collection; %s%s",
				first.Name, first.UID, renewed, extra)
		}
		return v
	}
	for i := range l.OwnerReferences {
		if r := &l.OwnerReferences[i]; isNodeOwner(l, r) && r.UID == node.UID {
			if v.Expired {
				v.Class = Stale
				if why {
					v.Reason = fmt.Sprintf("Node %s exists; %s%s", node.Name, renewed, extra)
				}
				return v
			}
			v.Class = Healthy
			v.RecheckAt = deadline
			if why {
				v.Reason = fmt.Sprintf("owned by Node %s (uid %s); %s%s", node.Name, node.UID, renewed, extra)
			}
			return v
		}
	}
	v.Class = StaleOwner
	if why {
		v.Reason = fmt.Sprintf("owned by Node uid %s but Node %s now has uid %s (re-created); upstream garbage collection removes it%s",
			first.UID, node.Name, node.UID, extra)
	}
	return v
}

// classifyNonNode handles leases outside kube-node-lease.
func classifyNonNode(l *coordinationv1.Lease, now time.Time, v Verdict, why explainer) Verdict {
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 && !v.RenewTime.IsZero() {
		v.Expired = !now.Before(v.RenewTime.Add(time.Duration(*d) * time.Second))
	} else if v.RenewTime.IsZero() {
		v.Expired = true
	}
	holder := "<none>"
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		holder = *l.Spec.HolderIdentity
	}
	transitions := int32(0)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	switch {
	case l.Namespace == metav1.NamespaceSystem && l.Labels[APIServerIdentityLabel] == "kube-apiserver":
		v.Class = APIServerIdentity
		if why {
			v.Reason = fmt.Sprintf("kube-apiserver identity held by %s; %s", holder, describeRenew(v, now))
		}
	case l.Spec.HolderIdentity != nil || l.Spec.AcquireTime != nil || l.Spec.LeaseTransitions != nil:
		v.Class = Leader
		if why {
			v.Reason = fmt.Sprintf("leader lock held by %s, %d transitions; %s", holder, transitions, describeRenew(v, now))
		}
	default:
		v.Class = Other
		v.Reason = why.s("no holder, acquireTime or transitions: not a leader-election lock nodekeeper recognises")
	}
	return v
}

// splitOwners separates the Node ownerReferences that name this lease's Node from all others.
// The kubelet sets exactly one {v1, Node, <lease name>} reference; anything else is foreign.
func splitOwners(l *coordinationv1.Lease) (nodeRefs, foreign []metav1.OwnerReference) {
	for _, r := range l.OwnerReferences {
		if isNodeOwner(l, &r) {
			nodeRefs = append(nodeRefs, r)
		} else {
			foreign = append(foreign, r)
		}
	}
	return nodeRefs, foreign
}

// NodeOwner returns the lease's first ownerReference to the Node of its own name, or nil. The
// pointer is into l's own slice.
func NodeOwner(l *coordinationv1.Lease) *metav1.OwnerReference {
	for i := range l.OwnerReferences {
		if r := &l.OwnerReferences[i]; isNodeOwner(l, r) {
			return r
		}
	}
	return nil
}

func isNodeOwner(l *coordinationv1.Lease, r *metav1.OwnerReference) bool {
	return r.APIVersion == "v1" && r.Kind == "Node" && r.Name == l.Name
}

func describeRefs(refs []metav1.OwnerReference) string {
	s := ""
	for i, r := range refs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %s/%s", r.APIVersion, r.Kind, r.Name)
	}
	return s
}

func describeRenew(v Verdict, now time.Time) string {
	switch {
	case v.RenewTime.IsZero():
		return "never renewed"
	case v.RenewAge < 0:
		return fmt.Sprintf("renewTime is %s in the future (clock skew?)", Elapsed(-v.RenewAge))
	case v.Expired:
		return fmt.Sprintf("last renewed %s ago, expired", Elapsed(v.RenewAge))
	default:
		return fmt.Sprintf("renewed %s ago", Elapsed(v.RenewAge))
	}
}

// latest returns the latest of renewTime, acquireTime and creationTimestamp (see LastActivity).
func latest(renew, acquire *metav1.MicroTime, created *metav1.Time) time.Time {
	var out time.Time
	for _, mt := range []*metav1.MicroTime{renew, acquire} {
		if mt != nil && mt.After(out) {
			out = mt.Time
		}
	}
	if created != nil && created.After(out) {
		out = created.Time
	}
	return out
}

// Elapsed prints how long ago something happened as kubectl prints AGE ("6h", "2m30s", "3d4h";
// apimachinery's duration.HumanDuration), never Go's "6h0m45s".
func Elapsed(d time.Duration) string { return duration.HumanDuration(d) }

// Setting prints a configured duration (a grace period, a lease duration) the way a flag takes
// it, without Go's zero units: "1h", "1h30m", "40s", not "1h0m0s".
func Setting(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
