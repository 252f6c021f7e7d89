package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
)

// writeChurn prints the actors whose deletions of node leases were undone within the window.
func writeChurn(t *textWriter, c analyze.LeaseChurn) {
	t.table()
	p := t.p
	atLeast := ""
	if c.Partial {
		atLeast = "at least "
	}
	p("\nLEASE CHURN (%d)  node leases deleted and created again within %s: %s%d, costing %s%d etcd writes; actors with more than %d are named\n",
		len(c.Actors), fmtDur(c.Window), atLeast, c.Churns, atLeast, c.ExtraWrites, c.Threshold)
	if c.Partial {
		p("  PARTIAL: %d deletes of node leases past the lease table were not followed: their churn is not counted, so every count here is a lower bound (at most %d churns in all)\n",
			c.DeletesNotFollowed, c.Churns+c.DeletesNotFollowed)
	}
	if len(c.Actors) == 0 {
		p("  none\n")
	} else {
		p("  ACTOR\tUSER AGENT\tSOURCE IP\tCHURNS\tLEASES\tEXTRA ETCD WRITES\tRE-CREATED BY ITS KUBELET\tFIRST\tLAST\n")
		for _, a := range c.Actors {
			p("  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", esc(a.User), clip(a.UserAgent, 48), orDash(a.SourceIP), a.Churns, a.Leases,
				a.ExtraWrites, a.RecreatedByKubelet, fmtTime(a.First), fmtTime(a.Last))
		}
	}
	if c.OthersActors > 0 {
		p("  %d more actors at or under the threshold: %d churns\n", c.OthersActors, c.OthersChurns)
	}
	if c.Untracked > 0 {
		p("  %d churns by actors not tracked (over %d actors): in the totals only\n", c.Untracked, analyze.MaxChurnActors)
	}
}

// writeHeartbeats prints the fleet's lease renewals and the nodes that came near NotReady.
func writeHeartbeats(t *textWriter, h analyze.Heartbeats) {
	t.table()
	p := t.p
	intervals := "no interval measured"
	if h.Intervals > 0 {
		intervals = fmt.Sprintf("interval p50 ≤ %s, p99 ≤ %s, max %s", fmtDur(h.IntervalP50), fmtDur(h.IntervalP99), fmtDur(h.IntervalMax))
	}
	kubelets, times := fmt.Sprintf("%d kubelets renewed their lease", h.Kubelets), fmt.Sprintf("%d times", h.Renewals)
	if h.Kubelets == 1 {
		kubelets = "1 kubelet renewed its lease"
	}
	if h.Renewals == 1 {
		times = "once"
	}
	p("\nHEARTBEATS  %s %s; %s; node-monitor-grace-period %s, renew interval %s\n",
		kubelets, times, intervals, fmtDur(h.GracePeriod), fmtDur(h.RenewInterval))
	p("  %d kubelet requests answered 429", h.Throttled)
	if len(h.PriorityLevels) > 0 {
		p(", by priority level: %s (%s)", plText(h.PriorityLevels), analyze.PriorityLevelSource)
	}
	p("\n")
	if h.LogSilences > 0 {
		p("  the log itself was silent for %s or more %d times: %d renewal intervals across those are not judged (a file not given, or the API server down)\n",
			fmtDur(h.GracePeriod-h.RenewInterval), h.LogSilences, h.Unjudged)
	}
	p("  nodes without a renewal for the grace period or more (marked NotReady): %d; within one renewal of it (%s or more): %d; only throttled: %d\n",
		h.OverGrace, fmtDur(h.GracePeriod-h.RenewInterval), h.NearGrace, h.ThrottledOnly)
	if len(h.Nodes) == 0 {
		return
	}
	t.table()
	p("  NODE\tSTATUS\tLONGEST GAP\tFROM\tTO\tNEAR-GRACE GAPS\tOVER-GRACE GAPS\tRENEWALS\tMEAN INTERVAL\t429S\t429S IN GAP\tPRIORITY LEVEL\tLEASE ERRORS\tAPF WAIT MAX\n")
	for _, n := range h.Nodes {
		to := fmtTime(n.MaxGapTo)
		if n.MaxGapOpen {
			to += " (end of log)"
		}
		p("  %s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%d\t%s\n", esc(n.Node), n.Status, fmtDur(n.MaxGap), fmtTime(n.MaxGapFrom), to,
			n.NearGraceGaps, n.OverGraceGaps, n.Renewals, fmtDur(n.MeanInterval), n.Throttled, n.ThrottledInGap,
			dashIfEmpty(plShort(n.PriorityLevels)), n.LeaseErrors, durOrDash(n.APFWaitMax))
	}
	shown := 0
	for _, n := range h.Nodes {
		if n.Status == analyze.HeartbeatThrottled {
			shown++
		}
	}
	if shown < h.ThrottledOnly {
		p("  … %d more throttled nodes, raise --top to see them\n", h.ThrottledOnly-shown)
	}
}

// plShort lists priority levels with their 429 counts.
func plShort(pls []analyze.PriorityLevelCount) string {
	var parts []string
	for _, pl := range pls {
		parts = append(parts, fmt.Sprintf("%s %d", pl.PriorityLevel, pl.Throttled))
	}
	return strings.Join(parts, ", ")
}

// durOrDash prints a duration, or "-" for none.
func durOrDash(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmtDur(d)
}

// plText lists priority levels with their flow schemas and 429 counts.
func plText(pls []analyze.PriorityLevelCount) string {
	var parts []string
	for _, pl := range pls {
		parts = append(parts, fmt.Sprintf("%s (flow schema %s) %d", pl.PriorityLevel, pl.FlowSchema, pl.Throttled))
	}
	return strings.Join(parts, ", ")
}
