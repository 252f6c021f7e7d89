package analyze

import (
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// NotKeptName is what a name looked up past the string table shows as (Bounds.NamesNotKept
// counts those lookups); render prints it from here, not from read.
const NotKeptName = read.NotKeptName

// Report is everything `nodekeeper audit` found. Its JSON form is the -o json output.
type Report struct {
	From    time.Time          `json:"from,omitzero"` // earliest requestReceivedTimestamp counted (watches aside)
	To      time.Time          `json:"to,omitzero"`   // latest
	Filters Filters            `json:"filters"`
	Inputs  []read.SourceStats `json:"inputs"`
	Totals  Totals             `json:"totals"`
	// NodeDeletions lists every Node deletion in the window and what followed it.
	NodeDeletions []NodeDeletion `json:"nodeDeletions"`
	// NodeCreations are the creations of the Node named by Options.Node (empty without that
	// filter; at most 64, the first ones), for `nodekeeper explain`'s timeline. audit's own
	// report does not print them, so they are not in its JSON either.
	NodeCreations []Event `json:"-"`
	// Leases lists the lifecycle of every lease that was created, deleted, or created by an
	// update in the window.
	Leases []LeaseLifecycle `json:"leases"`
	// Leaks lists leases created while their Node was gone or without an ownerReference.
	Leaks []Leak `json:"leaks"`
	// Zombies lists kubelets that kept calling the API server after their Node was deleted.
	Zombies    []Zombie   `json:"zombies"`
	Throttling Throttling `json:"throttling"`
	// LeaseChurn names the actors whose deletions of node leases were undone within a minute,
	// again and again.
	LeaseChurn LeaseChurn `json:"leaseChurn"`
	// Heartbeats is the kubelets' lease renewals against the node monitor grace period.
	Heartbeats Heartbeats `json:"heartbeats"`
	// AccessDenied lists who was denied what (401 and 403 responses).
	AccessDenied AccessDenied `json:"accessDenied"`
	// TopByRequests and TopByLatency rank (user, user agent, verb, resource) by request count
	// and by the summed latency of requests that are not watches.
	TopByRequests []Talker `json:"topByRequests"`
	TopByLatency  []Talker `json:"topByLatency"`
	Timeline      Timeline `json:"timeline"`
	// Bounds says where the analysis reached its memory bounds; all zero means every number
	// in the report is exact.
	Bounds Bounds   `json:"bounds"`
	Errors []string `json:"errors,omitempty"`
}

// Bounds tells which numbers are approximate. Memory is bounded whatever the number of distinct
// leases, nodes and users in a log; past each bound the totals stay exact and what is left out
// is counted here.
type Bounds struct {
	// NamesNotKept counts lookups of names first seen once the string table was full; such
	// names print as "(not kept: too many distinct names)".
	NamesNotKept int64 `json:"namesNotKept,omitempty"`
	// LeaseEventsNotTracked counts lifecycle events of leases first seen once the lease table
	// was full: they are in Totals, not in Leases or Leaks.
	LeaseEventsNotTracked int64 `json:"leaseEventsNotTracked,omitempty"`
	// NodeEventsNotTracked counts events of nodes first seen once the node table was full: they
	// are in Totals, not in NodeDeletions or Zombies.
	NodeEventsNotTracked int64 `json:"nodeEventsNotTracked,omitempty"`
	// LeaksNotListed counts leaks found once the leak list was full.
	LeaksNotListed int64 `json:"leaksNotListed,omitempty"`
	// TalkerEvictions counts request-table entries that gave their place to a new key. When it
	// is not 0 a talker's Requests is an upper bound and Requests-RequestsError a lower bound
	// (the other columns count from the moment the entry was taken), and Throttling.ByUser
	// sums such entries.
	TalkerEvictions int64 `json:"talkerEvictions,omitempty"`
	// ChurnLeaseActorsNotKept counts churns whose actor a lease could not remember (more than
	// eight actors churned it): that actor's Leases may count the lease twice.
	ChurnLeaseActorsNotKept int64 `json:"churnLeaseActorsNotKept,omitempty"`
}

// Exact reports whether no bound was reached.
func (b Bounds) Exact() bool { return b == Bounds{} }

// Filters echoes the report filters.
type Filters struct {
	Node  string    `json:"node,omitempty"`
	Lease string    `json:"lease,omitempty"`
	User  string    `json:"user,omitempty"`
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Totals counts the whole input (before the report filters).
type Totals struct {
	Lines          int64 `json:"lines"`
	Events         int64 `json:"events"`        // counted events (stage ResponseComplete or Panic)
	SkippedStages  int64 `json:"skippedStages"` // RequestReceived, ResponseStarted
	OutsideWindow  int64 `json:"outsideWindow,omitempty"`
	Bad            int64 `json:"bad"` // malformed, non-audit, no timestamp, too long, truncated
	Salvaged       int64 `json:"salvagedTruncated,omitempty"`
	Duplicates     int64 `json:"duplicates,omitempty"`
	OutOfOrder     int64 `json:"outOfOrder,omitempty"` // arrived later than the reorder window
	Throttled      int64 `json:"throttled"`            // 429 responses
	NodeRequests   int64 `json:"nodeRequests"`         // requests by system:node:* users
	LeaseRenewals  int64 `json:"leaseRenewals"`        // successful lease updates
	NodeDeletions  int64 `json:"nodeDeletions"`
	LeaseCreations int64 `json:"leaseCreations"`
	LeaseDeletions int64 `json:"leaseDeletions"`
}

// Actor is who made a request.
type Actor struct {
	User      string `json:"user"`
	UserAgent string `json:"userAgent,omitempty"`
	SourceIP  string `json:"sourceIP,omitempty"`
	// Identity is the instance identity from user.extra (the EC2 instance ID on EKS).
	Identity string `json:"identity,omitempty"`
	// ImpersonatedBy is the authenticated user when User was impersonated.
	ImpersonatedBy string `json:"impersonatedBy,omitempty"`
}

// Event is one lifecycle event of a lease or a node.
type Event struct {
	Time   time.Time `json:"time"`
	Action string    `json:"action"` // create, delete, update-created, patch-created
	Code   int       `json:"code"`
	Actor  Actor     `json:"actor"`
	// Owners lists ownerReferences ("Node/name") when the audit level shows the object;
	// OwnersKnown tells whether it did.
	Owners      string `json:"owners,omitempty"`
	OwnersKnown bool   `json:"ownersKnown,omitempty"`
	AuditID     string `json:"auditID,omitempty"`
	Where       string `json:"where"` // input:line
	Salvaged    bool   `json:"salvaged,omitempty"`
}

// FollowUp is something that happened after a Node deletion.
type FollowUp struct {
	Time  time.Time     `json:"time"`
	After time.Duration `json:"after"` // since the deletion
	Actor Actor         `json:"actor"`
	Code  int           `json:"code,omitempty"`
	How   string        `json:"how,omitempty"`
}

// NodeDeletion is one DELETE of a Node and what followed until the Node came back.
type NodeDeletion struct {
	Node  string `json:"node"`
	Event Event  `json:"event"`
	// LeaseDeleted is the first deletion of kube-node-lease/<node> afterwards (normally the
	// garbage collector's, within a second).
	LeaseDeleted *FollowUp `json:"leaseDeleted,omitempty"`
	// RequestsAfter counts the node's own requests (system:node:<node>) after the deletion.
	RequestsAfter  int64      `json:"requestsAfter"`
	FirstRequest   *time.Time `json:"firstRequestAfter,omitempty"`
	LastRequest    *time.Time `json:"lastRequestAfter,omitempty"`
	LeaseRecreated *FollowUp  `json:"leaseRecreated,omitempty"`
	NodeRecreated  *FollowUp  `json:"nodeRecreated,omitempty"`
}

// LeaseLifecycle is the create/delete history of one lease.
type LeaseLifecycle struct {
	Namespace     string  `json:"namespace"`
	Name          string  `json:"name"`
	Creates       int64   `json:"creates"`
	Deletes       int64   `json:"deletes"`
	UpdateCreates int64   `json:"updateCreates"` // updates or patches answered 201
	Events        []Event `json:"events"`
	// Omitted counts events left out of Events (the first and last ones are kept).
	Omitted int64 `json:"omitted,omitempty"`
}

// Leak statuses.
const (
	LeakLeaked        = "leaked"         // still ownerless and without its Node at the end of the log
	LeakDeleted       = "deleted"        // someone deleted the lease afterwards
	LeakAdopted       = "adopted"        // a later write showed an ownerReference
	LeakNodeRecreated = "node-recreated" // the Node came back; its kubelet adopts the lease
)

// Leak causes.
const (
	CauseAfterNodeDeletion = "created-after-node-deletion"
	CauseNodeMissing       = "created-while-node-missing"
	CauseNoOwner           = "created-without-owner"
)

// Leak is a lease (re)created in kube-node-lease while its Node was gone, or without an
// ownerReference, and what became of it.
type Leak struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Cause     string `json:"cause"`
	Created   Event  `json:"created"`
	// NodeDeletion is the deletion of the Node that preceded the creation, when seen.
	NodeDeletion *Event    `json:"nodeDeletion,omitempty"`
	Status       string    `json:"status"`
	StatusEvent  *FollowUp `json:"statusEvent,omitempty"`
}

// Zombie is a kubelet that kept calling the API server after its Node was deleted: a machine
// still running, and billed, outside the cluster.
type Zombie struct {
	Node string `json:"node"`
	// Deletion is the Node deletion the kubelet outlived; nil when it happened before the
	// log starts (the kubelet's own GET of its Node answered 404).
	Deletion   *Event        `json:"deletion,omitempty"`
	FirstSeen  time.Time     `json:"firstSeen"`
	LastSeen   time.Time     `json:"lastSeen"`
	Duration   time.Duration `json:"duration"`
	Requests   int64         `json:"requests"`
	PerMinute  float64       `json:"requestsPerMinute"`
	SourceIPs  []string      `json:"sourceIPs"`
	Identities []string      `json:"identities,omitempty"`
	UserAgents []string      `json:"userAgents"`
	Calls      []CallCount   `json:"calls"`
	// LeaseRecreations counts lease creations by this kubelet during the episode (a kubelet
	// older than 1.29 re-creates its lease; a newer one only polls).
	LeaseRecreations int64     `json:"leaseRecreations"`
	Status           string    `json:"status"` // running (at the end of the log) or ended
	Ended            *FollowUp `json:"ended,omitempty"`
}

// CallCount counts the requests of one kind a zombie made.
type CallCount struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Code     int    `json:"code"`
	Count    int64  `json:"count"`
}

// Talker aggregates requests of one (user, user agent, verb, resource).
type Talker struct {
	User      string `json:"user"`
	UserAgent string `json:"userAgent"`
	Verb      string `json:"verb"`
	Resource  string `json:"resource"`
	Requests  int64  `json:"requests"`
	// RequestsError is how much Requests may overcount (see Bounds.TalkerEvictions).
	RequestsError int64         `json:"requestsError,omitempty"`
	Throttled     int64         `json:"throttled"`
	ServerErrors  int64         `json:"serverErrors"`
	LatencyTotal  time.Duration `json:"latencyTotal"`
	LatencyP99    time.Duration `json:"latencyP99"` // upper bound of the p99 bucket
	LatencyMax    time.Duration `json:"latencyMax"`
	APFWaited     int64         `json:"apfWaited,omitempty"` // requests with an apf-queue-wait annotation
	APFWaitTotal  time.Duration `json:"apfWaitTotal,omitempty"`
	APFWaitMax    time.Duration `json:"apfWaitMax,omitempty"`
}

// Throttling summarises 429 answers and APF queueing.
type Throttling struct {
	Throttled int64    `json:"throttled"`
	APFWaited int64    `json:"apfWaited"`
	ByKey     []Talker `json:"byKey"` // by throttled count
	ByUser    []Talker `json:"byUser"`
}

// Timeline is the whole window in equal buckets, for charts.
type Timeline struct {
	Start     time.Time     `json:"start"`
	Step      time.Duration `json:"step"`
	Requests  []int64       `json:"requests"`
	Throttled []int64       `json:"throttled"`
	APFWaitMS []float64     `json:"apfWaitMs"` // mean queue wait of requests that waited
	// ThrottledUsers splits Throttled by the users throttled most.
	ThrottledUsers []UserSeries `json:"throttledUsers,omitempty"`
}

// UserSeries is one user's 429 count per Timeline bucket.
type UserSeries struct {
	User      string  `json:"user"`
	Throttled []int64 `json:"throttled"`
}
