package analyze

import (
	"sort"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// Heartbeat health: the kubelet renews kube-node-lease/<node> every renew interval (10 s, a
// quarter of nodeLeaseDurationSeconds), and kube-controller-manager's node lifecycle controller
// marks the node Unknown (NotReady) once its lease was not renewed for node-monitor-grace-period
// (50 s since Kubernetes 1.32, 40 s before). The audit log shows each renewal and each renewal
// refused with 429, so it shows how close each node came; kube-state-metrics, which sees only
// the lease's current renewTime every scrape, cannot.

// Defaults of the heartbeat analysis.
const (
	DefaultNodeMonitorGracePeriod = 50 * time.Second
	DefaultLeaseRenewInterval     = 10 * time.Second
)

// Heartbeat statuses, worst first.
const (
	HeartbeatOverGrace = "over-grace" // a gap reached the grace period: the node was marked NotReady
	HeartbeatNearGrace = "near-grace" // a gap came within one renewal of it
	HeartbeatThrottled = "throttled"  // requests answered 429, no gap near the grace period
	HeartbeatHealthy   = "healthy"    // listed only when --node or --user asks for one kubelet
)

// Priority levels and flow schemas of kubelet requests. Audit events do not name the APF
// priority level or flow schema (only the queue wait, apiserver.latency.k8s.io/apf-queue-wait;
// the classification is in the X-Kubernetes-PF-PriorityLevel-UID and -FlowSchema-UID response
// headers and the API server's own log, not the audit log: kubernetes/kubernetes issue 113473),
// so it is inferred from Kubernetes' suggested FlowSchemas (k8s.io/apiserver
// pkg/apis/flowcontrol/bootstrap/default.go): group system:nodes on nodes, nodes/status and
// leases goes to system-node-high → node-high, the rest of system:nodes to system-nodes → system.
const (
	PriorityLevelNodeHigh = "node-high"
	FlowSchemaNodeHigh    = "system-node-high"
	PriorityLevelSystem   = "system"
	FlowSchemaSystemNodes = "system-nodes"
	// PriorityLevelSource says where the priority levels in the report come from.
	PriorityLevelSource = "inferred from Kubernetes' suggested FlowSchemas: audit events do not name the priority level"
)

// intervalBuckets is the fleet's renewal interval histogram: one bucket per second, the last
// for 2 minutes and more.
const intervalBuckets = 121

// heartbeat is one kubelet's lease renewals.
type heartbeat struct {
	last                   int64 // requestReceivedTimestamp of the latest renewal; 0 for none yet
	renewals, intervals    int64
	intervalSum            int64
	maxGap, maxGapFrom     int64
	maxGap429              int64 // lease requests answered 429 during the longest gap
	pending429             int64 // since the latest renewal
	near, over             int64 // gaps of at least grace − renew interval, of at least grace
	nodeHigh429, system429 int64
	leaseErrors            int64 // lease writes answered with another failure
	apfWaitMax             int64 // µs, of its lease requests
}

type heartbeats struct {
	grace, renew int64
	hist         [intervalBuckets]int64
	intervals    int64
	maxInterval  int64
	// A gap is judged only where the log itself has events: a silence of the whole log of
	// grace − renew interval or more is a file not given, a rotated one missing, or hand-picked
	// events (or an API server down, when no node can be blamed); lastRecv and holeEnd find
	// them.
	lastRecv, holeEnd int64
	holes, unjudged   int64
}

// see follows the log's own silences: r is any record but a watch.
func (h *heartbeats) see(r *read.Record) {
	if h.lastRecv != 0 && r.Recv-h.lastRecv >= h.grace-h.renew {
		h.holes++
		h.holeEnd = r.Recv
	}
	h.lastRecv = max(h.lastRecv, r.Recv)
}

// heartbeat follows the lease renewals and the 429s of kubelet r.NodeOf, whose state is n.
func (a *analyzer) heartbeat(r *read.Record, n *nodeState) {
	own := r.Flags&read.FlagLease != 0 && r.Name == r.NodeOf && r.NS == a.idNodeLeaseNS
	if (!own && r.Code != 429) || n.deleted || !a.nodeMatch(r.NodeOf) || (a.fUserSet && r.User != a.fUser) {
		return // a kubelet without its Node is the zombie table's
	}
	hb := n.hb
	if hb == nil {
		hb = &heartbeat{}
		n.hb = hb
	}
	if r.Code == 429 {
		if r.Res == a.idLeasesRes || r.Res == a.idNodesRes || r.Res == a.idNodesStatusRes {
			hb.nodeHigh429++
		} else {
			hb.system429++
		}
		if own {
			hb.pending429++
		}
		return
	}
	hb.apfWaitMax = max(hb.apfWaitMax, int64(r.APFWaitUS))
	switch r.Verb {
	case read.VerbUpdate, read.VerbPatch, read.VerbCreate:
	default:
		return // the GETs of a lease before its update are no renewal
	}
	if !is2xx(r.Code) {
		hb.leaseErrors++
		return
	}
	if hb.last != 0 && a.hb.holeEnd > hb.last {
		a.hb.unjudged++
	} else if hb.last != 0 {
		gap := max(0, r.Recv-hb.last)
		hb.intervals++
		hb.intervalSum += gap
		h := &a.hb
		h.hist[min(gap/int64(time.Second), intervalBuckets-1)]++
		h.intervals++
		h.maxInterval = max(h.maxInterval, gap)
		if gap > hb.maxGap {
			hb.maxGap, hb.maxGapFrom, hb.maxGap429 = gap, hb.last, hb.pending429
		}
		if gap >= h.grace-h.renew {
			hb.near++
		}
		if gap >= h.grace {
			hb.over++
		}
	}
	hb.last = max(hb.last, r.Recv)
	hb.renewals++
	hb.pending429 = 0
}

// heartbeatGone forgets the latest renewal of a node whose Node was deleted: the next kubelet
// of that name starts afresh.
func (n *nodeState) heartbeatGone() {
	if n.hb != nil {
		n.hb.last, n.hb.pending429 = 0, 0
	}
}

// quantile returns the upper bound of the histogram bucket holding quantile q.
func (h *heartbeats) quantile(q float64) time.Duration {
	if h.intervals == 0 {
		return 0
	}
	need := int64(q*float64(h.intervals) + 0.999999)
	var acc int64
	for k, c := range h.hist {
		acc += c
		if acc >= need {
			return time.Duration(k+1) * time.Second
		}
	}
	return time.Duration(intervalBuckets) * time.Second
}

// buildHeartbeats lists the nodes that came near the grace period (all of them) and those only
// throttled (top of them), and sums the fleet.
func (a *analyzer) buildHeartbeats(s func(uint32) string) Heartbeats {
	h := &a.hb
	out := Heartbeats{GracePeriod: time.Duration(h.grace), RenewInterval: time.Duration(h.renew),
		IntervalP50: h.quantile(0.5), IntervalP99: h.quantile(0.99), IntervalMax: time.Duration(h.maxInterval),
		Intervals: h.intervals, LogSilences: h.holes, Unjudged: h.unjudged, PriorityLevelSource: PriorityLevelSource, Nodes: []NodeHeartbeat{}}
	var nodeHigh, system int64
	var throttledOnly []NodeHeartbeat
	for _, n := range a.nodes {
		hb := n.hb
		if hb == nil {
			continue
		}
		if hb.renewals > 0 {
			out.Kubelets++
			out.Renewals += hb.renewals
		}
		nodeHigh += hb.nodeHigh429
		system += hb.system429
		nh := NodeHeartbeat{Node: s(n.name), Renewals: hb.renewals, MaxGap: time.Duration(hb.maxGap),
			NearGraceGaps: hb.near, OverGraceGaps: hb.over, Throttled: hb.nodeHigh429 + hb.system429,
			ThrottledInGap: hb.maxGap429, LeaseErrors: hb.leaseErrors, APFWaitMax: time.Duration(hb.apfWaitMax) * time.Microsecond,
			PriorityLevels: priorityLevels(hb.nodeHigh429, hb.system429)}
		if hb.intervals > 0 {
			nh.MeanInterval = time.Duration(hb.intervalSum / hb.intervals)
		}
		if hb.maxGap > 0 {
			nh.MaxGapFrom, nh.MaxGapTo = ts(hb.maxGapFrom), ts(hb.maxGapFrom+hb.maxGap)
		}
		// A kubelet silent to the end of the log, its Node still there, is a gap still open.
		if open := a.to - hb.last; hb.last != 0 && !n.deleted && h.holeEnd <= hb.last && open > hb.maxGap && open >= h.grace-h.renew {
			nh.MaxGap, nh.MaxGapFrom, nh.MaxGapTo, nh.MaxGapOpen = time.Duration(open), ts(hb.last), ts(a.to), true
			nh.ThrottledInGap = hb.pending429
			nh.NearGraceGaps++
			if open >= h.grace {
				nh.OverGraceGaps++
			}
		}
		switch {
		case nh.OverGraceGaps > 0:
			nh.Status = HeartbeatOverGrace
		case nh.NearGraceGaps > 0:
			nh.Status = HeartbeatNearGrace
		case nh.Throttled > 0:
			nh.Status = HeartbeatThrottled
			throttledOnly = append(throttledOnly, nh)
			continue
		case a.fNodeSet || a.fUserSet:
			nh.Status = HeartbeatHealthy // asked for by name: shown even when nothing is wrong
		default:
			continue
		}
		out.Nodes = append(out.Nodes, nh)
	}
	out.Throttled = nodeHigh + system
	out.PriorityLevels = priorityLevels(nodeHigh, system)
	rank := map[string]int{HeartbeatOverGrace: 0, HeartbeatNearGrace: 1, HeartbeatThrottled: 2, HeartbeatHealthy: 3}
	order := func(ns []NodeHeartbeat) {
		sort.Slice(ns, func(i, j int) bool {
			x, y := &ns[i], &ns[j]
			if rank[x.Status] != rank[y.Status] {
				return rank[x.Status] < rank[y.Status]
			}
			if x.MaxGap != y.MaxGap {
				return x.MaxGap > y.MaxGap
			}
			if x.Throttled != y.Throttled {
				return x.Throttled > y.Throttled
			}
			return x.Node < y.Node
		})
	}
	order(out.Nodes)
	for _, nh := range out.Nodes {
		switch nh.Status {
		case HeartbeatOverGrace:
			out.OverGrace++
		case HeartbeatNearGrace:
			out.NearGrace++
		}
	}
	order(throttledOnly)
	out.ThrottledOnly = len(throttledOnly)
	if len(throttledOnly) > a.opts.Top {
		throttledOnly = throttledOnly[:a.opts.Top]
	}
	out.Nodes = append(out.Nodes, throttledOnly...)
	return out
}

func priorityLevels(nodeHigh, system int64) []PriorityLevelCount {
	out := []PriorityLevelCount{}
	if nodeHigh > 0 {
		out = append(out, PriorityLevelCount{PriorityLevel: PriorityLevelNodeHigh, FlowSchema: FlowSchemaNodeHigh, Throttled: nodeHigh})
	}
	if system > 0 {
		out = append(out, PriorityLevelCount{PriorityLevel: PriorityLevelSystem, FlowSchema: FlowSchemaSystemNodes, Throttled: system})
	}
	return out
}

// Heartbeats is the health of the kubelets' lease renewals against the node monitor grace
// period.
type Heartbeats struct {
	GracePeriod   time.Duration `json:"nodeMonitorGracePeriod"`
	RenewInterval time.Duration `json:"leaseRenewInterval"`
	Kubelets      int64         `json:"kubelets"` // kubelets that renewed their lease at least once
	Renewals      int64         `json:"renewals"`
	// Intervals counts the intervals between two renewals of one kubelet; IntervalP50 and
	// IntervalP99 are the upper bounds of their 1 s buckets.
	Intervals   int64         `json:"intervals"`
	IntervalP50 time.Duration `json:"intervalP50"`
	IntervalP99 time.Duration `json:"intervalP99"`
	IntervalMax time.Duration `json:"intervalMax"`
	// LogSilences counts the times the whole log had no event for grace − renew interval or
	// more; Unjudged the renewal intervals across such a silence, which are not judged: the
	// log does not show what happened then.
	LogSilences int64 `json:"logSilences"`
	Unjudged    int64 `json:"unjudged"`
	// Throttled counts kubelet requests answered 429 (kubelets whose Node exists), split by
	// priority level in PriorityLevels.
	Throttled           int64                `json:"throttled"`
	PriorityLevels      []PriorityLevelCount `json:"priorityLevels"`
	PriorityLevelSource string               `json:"priorityLevelSource"`
	// OverGrace and NearGrace count the nodes named: a gap of at least the grace period, or
	// within one renew interval of it.
	OverGrace int `json:"overGrace"`
	NearGrace int `json:"nearGrace"`
	// ThrottledOnly counts the nodes throttled with no gap near the grace period; --top of
	// them are listed after the named ones.
	ThrottledOnly int             `json:"throttledOnly"`
	Nodes         []NodeHeartbeat `json:"nodes"`
}

// PriorityLevelCount is the 429s of one APF priority level.
type PriorityLevelCount struct {
	PriorityLevel string `json:"priorityLevel"`
	FlowSchema    string `json:"flowSchema"`
	Throttled     int64  `json:"throttled"`
}

// NodeHeartbeat is one kubelet's lease renewals.
type NodeHeartbeat struct {
	Node         string        `json:"node"`
	Status       string        `json:"status"` // over-grace, near-grace, throttled, or healthy (--node, --user)
	Renewals     int64         `json:"renewals"`
	MeanInterval time.Duration `json:"meanInterval"`
	// MaxGap is the longest time without a renewal, from MaxGapFrom (a renewal) to MaxGapTo (the
	// next one, or the end of the log when MaxGapOpen).
	MaxGap     time.Duration `json:"maxGap"`
	MaxGapFrom time.Time     `json:"maxGapFrom,omitzero"`
	MaxGapTo   time.Time     `json:"maxGapTo,omitzero"`
	MaxGapOpen bool          `json:"maxGapOpen,omitempty"`
	// NearGraceGaps counts gaps of at least grace − renew interval, OverGraceGaps those of at
	// least the grace period.
	NearGraceGaps int64 `json:"nearGraceGaps"`
	OverGraceGaps int64 `json:"overGraceGaps"`
	// Throttled counts its requests answered 429; ThrottledInGap its lease requests answered 429
	// during the longest gap.
	Throttled      int64                `json:"throttled"`
	ThrottledInGap int64                `json:"throttledInGap"`
	PriorityLevels []PriorityLevelCount `json:"priorityLevels"`
	// LeaseErrors counts lease writes that failed otherwise (conflicts, timeouts, 5xx).
	LeaseErrors int64         `json:"leaseErrors"`
	APFWaitMax  time.Duration `json:"apfWaitMax,omitempty"` // longest APF queue wait of its lease requests
}
