package analyze

import (
	"sort"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// Lease churn: an actor deletes a node lease and the lease is created again within a minute,
// over and over. The seed's cleanup one-liner (kubectl get lease … | jq … | xargs kubectl
// delete lease) run from a CronJob does it, and so did Karpenter's lease garbage collector
// (v0.30–v1.0): both delete ownerless leases, and a kubelet older than 1.29 whose Node is gone
// creates its lease again at its next renewal. Each round costs etcd two writes (the delete and
// the re-creation) and solves nothing.

// ChurnWindow is how soon after its deletion a node lease must be created again for the
// deletion to count as churn.
const ChurnWindow = time.Minute

// DefaultChurnThreshold is how many churns an actor may cause before it is named: more than
// that many. A one-off manual delete, or a garbage collector cleaning after a few deleted
// Nodes, stays under it; a loop or a schedule does not.
const DefaultChurnThreshold = 5

// MaxChurnActors bounds the actors whose churn is counted. An actor is counted from its first
// churn on; churns of actors first seen once the table is full are counted in the totals and as
// untracked. Churn is seen only on the leases the lease table follows: once that table is full,
// a deleted node lease past it may come back unseen, so every churn count is then a lower bound
// (LeaseChurn.Partial, with the deletes not followed).
const MaxChurnActors = 10000

// maxChurnersPerLease bounds the actors a lease remembers, to count each actor's distinct
// leases; past it a lease counts as new for every further actor (reported in Bounds).
const maxChurnersPerLease = 8

// ChurnWritesPer is the etcd writes one churn costs: the delete and the re-creation.
const ChurnWritesPer = 2

// pendingDelete is the latest successful deletion of a node lease, waiting to see whether the
// lease comes back within ChurnWindow.
type pendingDelete struct {
	user, ua, ip uint32
	done         int64 // stageTimestamp of the delete
}

type churnStat struct {
	churns, leases, byKubelet int64
	first, last               int64
	ua, ip                    uint32 // of the latest churn
}

type churnTable struct {
	actors    map[uint32]*churnStat
	churns    int64 // every churn seen (after the report filters): all of them unless notFollowed
	untracked int64 // churns of actors not tracked
	// notFollowed counts the successful deletes of node leases past the lease table, whose
	// re-creation (a churn) could not be seen.
	notFollowed int64
	limit       int
}

// deleted remembers a successful delete of node lease ls.
func (c *churnTable) deleted(ls *leaseState, r *read.Record) {
	ls.pendDel = &pendingDelete{user: r.User, ua: r.UA, ip: r.IP, done: r.Done}
}

// created counts a churn when ls was deleted less than ChurnWindow before r created it again.
// It reports whether a lease's actor list overflowed.
func (c *churnTable) created(ls *leaseState, r *read.Record) (overflow bool) {
	d := ls.pendDel
	ls.pendDel = nil
	if d == nil || r.Recv-d.done > int64(ChurnWindow) {
		return false
	}
	c.churns++
	st := c.actors[d.user]
	if st == nil {
		if c.actors == nil {
			c.actors = map[uint32]*churnStat{}
		}
		if len(c.actors) >= c.limit {
			c.untracked++
			return false
		}
		st = &churnStat{first: d.done}
		c.actors[d.user] = st
	}
	st.churns++
	st.last = d.done
	st.ua, st.ip = d.ua, d.ip
	if r.NodeOf == ls.name {
		st.byKubelet++
	}
	known := false
	for _, u := range ls.churners {
		if u == d.user {
			known = true
			break
		}
	}
	if !known {
		st.leases++
		if len(ls.churners) < maxChurnersPerLease {
			ls.churners = append(ls.churners, d.user)
		} else {
			overflow = true
		}
	}
	return overflow
}

// build lists the actors with more than threshold churns, most first.
func (c *churnTable) build(s func(uint32) string, threshold int) LeaseChurn {
	out := LeaseChurn{Threshold: threshold, Window: ChurnWindow, Churns: c.churns,
		ExtraWrites: c.churns * ChurnWritesPer, Untracked: c.untracked, Actors: []ChurnActor{},
		Partial: c.notFollowed > 0, DeletesNotFollowed: c.notFollowed}
	for u, st := range c.actors {
		if st.churns <= int64(threshold) {
			out.OthersActors++
			out.OthersChurns += st.churns
			continue
		}
		out.Actors = append(out.Actors, ChurnActor{User: s(u), UserAgent: s(st.ua), SourceIP: s(st.ip),
			Churns: st.churns, ExtraWrites: st.churns * ChurnWritesPer, Leases: st.leases,
			RecreatedByKubelet: st.byKubelet, First: ts(st.first), Last: ts(st.last)})
	}
	sort.Slice(out.Actors, func(i, j int) bool {
		a, b := &out.Actors[i], &out.Actors[j]
		if a.Churns != b.Churns {
			return a.Churns > b.Churns
		}
		return a.User < b.User
	})
	return out
}

// LeaseChurn names the actors that delete node leases which come back within Window, more than
// Threshold times each.
type LeaseChurn struct {
	Threshold int           `json:"threshold"`
	Window    time.Duration `json:"window"`
	// Churns counts every deletion of a kube-node-lease lease that was created again within
	// Window, by anyone; ExtraWrites the etcd writes they cost (the delete and the re-creation).
	Churns      int64 `json:"churns"`
	ExtraWrites int64 `json:"extraEtcdWrites"`
	// Actors are the actors with more than Threshold churns, most first.
	Actors []ChurnActor `json:"actors"`
	// OthersActors and OthersChurns sum the actors at or under the threshold.
	OthersActors int   `json:"othersActors"`
	OthersChurns int64 `json:"othersChurns"`
	// Untracked counts churns of actors first seen after MaxChurnActors were tracked (in Churns,
	// not in Actors).
	Untracked int64 `json:"untracked,omitempty"`
	// Partial is true when churn could not be seen on every node lease: DeletesNotFollowed
	// successful deletes were of leases past the lease table (Bounds.LeaseEventsNotTracked),
	// whose re-creation was not followed. Churns, ExtraWrites and every actor's counts are then
	// lower bounds; the true number of churns is at most Churns + DeletesNotFollowed.
	Partial            bool  `json:"partial,omitempty"`
	DeletesNotFollowed int64 `json:"deletesNotFollowed,omitempty"`
}

// ChurnActor is one actor whose lease deletions were undone within the window.
type ChurnActor struct {
	User      string `json:"user"`
	UserAgent string `json:"userAgent,omitempty"` // of the latest churn
	SourceIP  string `json:"sourceIP,omitempty"`  // of the latest churn
	// Churns counts its deletions of a node lease that was created again within the window.
	Churns int64 `json:"churns"`
	// ExtraWrites is the etcd writes those cost: Churns × 2.
	ExtraWrites int64 `json:"extraEtcdWrites"`
	// Leases counts the distinct leases: a few leases churned many times is a loop, many leases
	// churned once each a sweep.
	Leases int64 `json:"leases"`
	// RecreatedByKubelet counts the re-creations made by the lease's own kubelet
	// (system:node:<name>).
	RecreatedByKubelet int64     `json:"recreatedByKubelet"`
	First              time.Time `json:"first"` // the first churning delete
	Last               time.Time `json:"last"`
}
