// Package leasesview is `nodekeeper leases`: it lists every Lease of a cluster (page by page),
// classifies each one with package lease — the single place that decides what a lease is — and
// presents the result as kubectl-like tables, a versioned JSON/YAML report, or a stream of class
// changes (--watch).
//
// The package only presents: it never decides a class itself. What it adds is the join the
// classification needs (the Node named like each kube-node-lease lease, from a metadata-only
// paginated LIST), aggregates (counts by class, live and stale kube-apiserver identities) and the
// formatting. Memory stays proportional to the compact per-lease rows: each LIST page is turned
// into rows and dropped before the next page arrives, so a 100,000-lease response is never held
// whole, let alone twice.
package leasesview

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/typemeta"
)

// APIVersion and the kinds below identify nodekeeper's own report objects in -o json|yaml so that
// scripts can check what they read. They are not served by any API server.
const (
	APIVersion      = typemeta.APIVersion
	ReportKind      = "LeaseReport"
	ChangeKind      = "LeaseChange"
	hostnameLabel   = "kubernetes.io/hostname"
	apiserverTarget = "kube-apiserver"
)

// Report is the result of one listing: every lease that matched the filters, classified, plus a
// summary over every lease that was listed (the summary ignores --class so the counts always
// describe the whole namespace selection).
type Report struct {
	metav1.TypeMeta `json:",inline"`
	// GeneratedAt is the clock reading every lease was classified against.
	GeneratedAt metav1.Time `json:"generatedAt"`
	// Namespace is the namespace listed; empty means all namespaces.
	Namespace string `json:"namespace,omitempty"`
	// GracePeriod is the classification's grace period (zombie → leaked).
	GracePeriod metav1.Duration `json:"gracePeriod"`
	// ClassFilter lists the --class values; empty means every class.
	ClassFilter []lease.Class `json:"classFilter,omitempty"`
	Summary     Summary       `json:"summary"`
	Items       []Item        `json:"items"`
	// LeaseCandidateAPI is the group/version LeaseCandidates were read from; empty when the
	// cluster does not serve that API (it is beta and off by default).
	LeaseCandidateAPI string      `json:"leaseCandidateAPI,omitempty"`
	LeaseCandidates   []Candidate `json:"leaseCandidates,omitempty"`
}

// Summary aggregates a listing.
type Summary struct {
	// Total is the number of leases listed (before --class filtering).
	Total int `json:"total"`
	// Shown is the number of items in the report (after --class filtering).
	Shown int `json:"shown"`
	// Counts has one entry per class in summary order: leaked and zombie first, then the others
	// in the taxonomy's order. Classes with no lease are included with a zero count.
	Counts []ClassCount `json:"counts"`
	// APIServers describes the kube-apiserver identity leases, when any were listed.
	APIServers *APIServers `json:"apiServers,omitempty"`
}

// ClassCount is the number of leases of one class.
type ClassCount struct {
	Class lease.Class `json:"class"`
	Count int         `json:"count"`
	// Explanation is set for classes that need an operator's attention and occur at least once.
	Explanation string `json:"explanation,omitempty"`
}

// APIServers counts kube-apiserver identity leases: a live one is renewed within its duration, a
// stale one belongs to an API server that stopped (kube-apiserver deletes those itself, hourly).
type APIServers struct {
	Live            int      `json:"live"`
	Stale           int      `json:"stale"`
	StaleIdentities []string `json:"staleIdentities,omitempty"`
}

// Item is one classified lease. It keeps only what the outputs show, so that a listing of a large
// cluster costs a few hundred bytes per lease rather than the whole object.
type Item struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
	// Class and Reason come straight from lease.Classify.
	Class   lease.Class `json:"class"`
	Reason  string      `json:"reason"`
	Expired bool        `json:"expired"`
	// RecheckAt is when the class changes by the passage of time alone, if it does.
	RecheckAt         *metav1.Time      `json:"recheckAt,omitempty"`
	Holder            *string           `json:"holderIdentity,omitempty"`
	DurationSeconds   *int32            `json:"leaseDurationSeconds,omitempty"`
	AcquireTime       *metav1.MicroTime `json:"acquireTime,omitempty"`
	RenewTime         *metav1.MicroTime `json:"renewTime,omitempty"`
	Transitions       *int32            `json:"leaseTransitions,omitempty"`
	Strategy          string            `json:"strategy,omitempty"`
	PreferredHolder   string            `json:"preferredHolder,omitempty"`
	CreationTimestamp metav1.Time       `json:"creationTimestamp"`
	Owners            []Owner           `json:"owners,omitempty"`
	// Node is the Node named like a kube-node-lease lease, when one exists.
	Node *Node `json:"node,omitempty"`
	// Hostname is the kubernetes.io/hostname label of a kube-apiserver identity lease.
	Hostname string `json:"hostname,omitempty"`
	// Instance is the EC2 instance named like a zombie or leaked node lease (leases --aws).
	Instance *Instance `json:"instance,omitempty"`
}

// Owner is one ownerReference of a lease.
type Owner struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

// Node is the Node a node lease was joined with.
type Node struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// Candidate is one coordination.k8s.io LeaseCandidate (coordinated leader election).
type Candidate struct {
	Namespace         string            `json:"namespace"`
	Name              string            `json:"name"`
	LeaseName         string            `json:"leaseName"`
	BinaryVersion     string            `json:"binaryVersion,omitempty"`
	EmulationVersion  string            `json:"emulationVersion,omitempty"`
	Strategy          string            `json:"strategy,omitempty"`
	RenewTime         *metav1.MicroTime `json:"renewTime,omitempty"`
	PingTime          *metav1.MicroTime `json:"pingTime,omitempty"`
	CreationTimestamp metav1.Time       `json:"creationTimestamp"`
}

// Change is one line of --watch output: a lease appeared, disappeared, or changed class, holder
// or expiry. Plain renewals are not changes.
type Change struct {
	metav1.TypeMeta `json:",inline"`
	// Type is ADDED, MODIFIED or DELETED (the watch event that caused it, or MODIFIED when only
	// the clock moved: healthy → stale, zombie → leaked).
	Type string      `json:"type"`
	Time metav1.Time `json:"time"`
	// From is the previous class; empty for ADDED.
	From lease.Class `json:"from,omitempty"`
	Item Item        `json:"item"`
}

// Watch event types used in Change.Type.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
)

// NewItem builds the row for a lease from its verdict. node is the Node the lease was classified
// against (nil for none); it is recorded only for kube-node-lease leases, where it matters.
func NewItem(l *coordinationv1.Lease, node *lease.NodeRef, v lease.Verdict) Item {
	it := Item{
		Namespace:         l.Namespace,
		Name:              l.Name,
		UID:               l.UID,
		Class:             v.Class,
		Reason:            v.Reason,
		Expired:           v.Expired,
		Holder:            l.Spec.HolderIdentity,
		DurationSeconds:   l.Spec.LeaseDurationSeconds,
		AcquireTime:       l.Spec.AcquireTime,
		RenewTime:         l.Spec.RenewTime,
		Transitions:       l.Spec.LeaseTransitions,
		CreationTimestamp: l.CreationTimestamp,
	}
	if !v.RecheckAt.IsZero() {
		t := metav1.NewTime(v.RecheckAt)
		it.RecheckAt = &t
	}
	if l.Spec.Strategy != nil {
		it.Strategy = string(*l.Spec.Strategy)
	}
	if l.Spec.PreferredHolder != nil {
		it.PreferredHolder = *l.Spec.PreferredHolder
	}
	for _, r := range l.OwnerReferences {
		it.Owners = append(it.Owners, Owner{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID})
	}
	if node != nil && l.Namespace == lease.NodeLeaseNamespace {
		it.Node = &Node{Name: node.Name, UID: node.UID}
	}
	if v.Class == lease.APIServerIdentity {
		it.Hostname = l.Labels[hostnameLabel]
	}
	return it
}

// summaryOrder is the order of Summary.Counts and of the table sort: the two classes an operator
// looks for first (leaked: to delete; zombie: a kubelet without its Node), then the taxonomy's
// own order.
func summaryOrder() []lease.Class {
	out := []lease.Class{lease.Leaked, lease.Zombie}
	for _, c := range lease.Classes() {
		if c != lease.Leaked && c != lease.Zombie {
			out = append(out, c)
		}
	}
	return out
}

// classRank maps each class to its position in summaryOrder; unknown classes sort last.
var classRank = func() map[lease.Class]int {
	m := map[lease.Class]int{}
	for i, c := range summaryOrder() {
		m[c] = i
	}
	return m
}()

func rank(c lease.Class) int {
	if r, ok := classRank[c]; ok {
		return r
	}
	return len(classRank)
}

// needsExplanation reports whether the summary explains a class. Healthy heartbeats, leader locks
// and API server identities are the normal state of a cluster; everything else is worth a line.
func needsExplanation(c lease.Class) bool {
	switch c {
	case lease.Healthy, lease.Leader, lease.APIServerIdentity:
		return false
	}
	return true
}

// Count returns the count of class c in s.
func (s Summary) Count(c lease.Class) int {
	for _, cc := range s.Counts {
		if cc.Class == c {
			return cc.Count
		}
	}
	return 0
}

// ParseClasses validates --class values (repeatable and comma-separated both work).
func ParseClasses(values []string) ([]lease.Class, error) {
	var out []lease.Class
	seen := map[lease.Class]bool{}
	for _, v := range values {
		c, err := lease.ParseClass(v)
		if err != nil {
			return nil, err
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// ClassNames lists every class name, for shell completion and help text.
func ClassNames() []string {
	var out []string
	for _, c := range summaryOrder() {
		out = append(out, string(c))
	}
	return out
}

// GetObjectKind, DeepCopyObject: Report and Change are runtime.Objects so that cli-runtime's JSON
// and YAML printers (the same ones kubectl uses) print them.

var (
	_ runtime.Object = &Report{}
	_ runtime.Object = &Change{}
)

func newTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: APIVersion, Kind: kind}
}

// DeepCopyObject implements runtime.Object.
func (r *Report) DeepCopyObject() runtime.Object { return r.DeepCopy() }

// DeepCopy returns a copy of r that shares no memory with it.
func (r *Report) DeepCopy() *Report {
	if r == nil {
		return nil
	}
	out := *r
	out.GeneratedAt = *r.GeneratedAt.DeepCopy()
	out.ClassFilter = append([]lease.Class(nil), r.ClassFilter...)
	out.Summary.Counts = append([]ClassCount(nil), r.Summary.Counts...)
	if r.Summary.APIServers != nil {
		a := *r.Summary.APIServers
		a.StaleIdentities = append([]string(nil), a.StaleIdentities...)
		out.Summary.APIServers = &a
	}
	if r.Items != nil {
		out.Items = make([]Item, len(r.Items))
		for i := range r.Items {
			out.Items[i] = *r.Items[i].DeepCopy()
		}
	}
	if r.LeaseCandidates != nil {
		out.LeaseCandidates = make([]Candidate, len(r.LeaseCandidates))
		for i := range r.LeaseCandidates {
			out.LeaseCandidates[i] = *r.LeaseCandidates[i].DeepCopy()
		}
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (c *Change) DeepCopyObject() runtime.Object {
	if c == nil {
		return nil
	}
	out := *c
	out.Time = *c.Time.DeepCopy()
	out.Item = *c.Item.DeepCopy()
	return &out
}

// DeepCopy returns a copy of it that shares no memory with it.
func (it *Item) DeepCopy() *Item {
	out := *it
	out.RecheckAt = it.RecheckAt.DeepCopy()
	out.Holder = copyPtr(it.Holder)
	out.DurationSeconds = copyPtr(it.DurationSeconds)
	out.Transitions = copyPtr(it.Transitions)
	out.AcquireTime = it.AcquireTime.DeepCopy()
	out.RenewTime = it.RenewTime.DeepCopy()
	out.CreationTimestamp = *it.CreationTimestamp.DeepCopy()
	out.Owners = append([]Owner(nil), it.Owners...)
	out.Node = copyPtr(it.Node)
	return &out
}

// DeepCopy returns a copy of c that shares no memory with it.
func (c *Candidate) DeepCopy() *Candidate {
	out := *c
	out.RenewTime = c.RenewTime.DeepCopy()
	out.PingTime = c.PingTime.DeepCopy()
	out.CreationTimestamp = *c.CreationTimestamp.DeepCopy()
	return &out
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// holder returns the holder identity for display.
func (it *Item) holder() string {
	if it.Holder == nil || *it.Holder == "" {
		return none
	}
	return *it.Holder
}

// renewAge is the time since the last renewal at now; ok is false when never renewed.
func (it *Item) renewAge(now time.Time) (time.Duration, bool) {
	if it.RenewTime == nil {
		return 0, false
	}
	return now.Sub(it.RenewTime.Time), true
}

// key identifies a lease in maps and watch state.
func key(namespace, name string) string { return namespace + "/" + name }

func (it *Item) String() string { return fmt.Sprintf("%s/%s (%s)", it.Namespace, it.Name, it.Class) }
