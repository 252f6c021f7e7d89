package analyze

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

// renewals plays kubelet node's lease updates every 10 s from from to to (seconds), skipping
// those in [gapFrom, gapTo), where each is answered 429 instead.
func renewals(node string, from, to, gapFrom, gapTo float64) []ev {
	var evs []ev
	for t := from; t < to; t += 10 {
		code := 200
		if t >= gapFrom && t < gapTo {
			code = 429
		}
		evs = append(evs, ev{at: t, verb: "update", user: "system:node:" + node, res: "leases", name: node, code: code})
	}
	return evs
}

// tail is an event by someone else at t: the log goes on.
func tail(t float64) ev {
	return ev{at: t, verb: "get", user: admin, res: "nodes", name: "other", code: 200}
}

func TestHeartbeats(t *testing.T) {
	const nodeB = "ip-10-0-0-2.ec2.internal"
	type want struct {
		status         string
		maxGap         time.Duration
		near, over     int64
		throttled      int64
		throttledInGap int64
		open           bool
		pls            []PriorityLevelCount
	}
	nodeHigh := func(n int64) []PriorityLevelCount {
		return []PriorityLevelCount{{PriorityLevel: "node-high", FlowSchema: "system-node-high", Throttled: n}}
	}
	for _, tc := range []struct {
		name               string
		opts               Options
		evs                []ev
		nodes              map[string]want // the nodes named; every other kubelet must not be
		silences, unjudged int64
	}{
		{name: "a healthy fleet names nobody", evs: append(renewals(nodeA, 0, 300, -1, -1), renewals(nodeB, 3, 300, -1, -1)...)},
		{name: "three renewals refused with 429: a 40 s gap, within a renewal of the grace period",
			evs:   renewals(nodeA, 0, 300, 100, 130),
			nodes: map[string]want{nodeA: {status: "near-grace", maxGap: 40 * time.Second, near: 1, throttled: 3, throttledInGap: 3, pls: nodeHigh(3)}}},
		{name: "four refused: a 50 s gap reaches the grace period",
			evs:   renewals(nodeA, 0, 300, 100, 140),
			nodes: map[string]want{nodeA: {status: "over-grace", maxGap: 50 * time.Second, near: 1, over: 1, throttled: 4, throttledInGap: 4, pls: nodeHigh(4)}}},
		{name: "two refused: a 30 s gap is only throttled",
			evs:   renewals(nodeA, 0, 300, 100, 120),
			nodes: map[string]want{nodeA: {status: "throttled", maxGap: 30 * time.Second, throttled: 2, throttledInGap: 2, pls: nodeHigh(2)}}},
		{name: "a longer grace period: the 50 s gap is only near", opts: Options{NodeMonitorGracePeriod: 60 * time.Second},
			evs:   renewals(nodeA, 0, 300, 100, 140),
			nodes: map[string]want{nodeA: {status: "near-grace", maxGap: 50 * time.Second, near: 1, throttled: 4, throttledInGap: 4, pls: nodeHigh(4)}}},
		{name: "a 429 on another resource is the system priority level",
			evs: append(renewals(nodeA, 0, 100, -1, -1), ev{at: 55, verb: "list", user: userA, res: "", code: 429}),
			nodes: map[string]want{nodeA: {status: "throttled", maxGap: 10 * time.Second, throttled: 1,
				pls: []PriorityLevelCount{{PriorityLevel: "system", FlowSchema: "system-nodes", Throttled: 1}}}}},
		{name: "a kubelet silent to the end of the log, its Node still there",
			evs:   append(renewals(nodeA, 0, 100, -1, -1), renewals(nodeB, 3, 210, -1, -1)...),
			nodes: map[string]want{nodeA: {status: "over-grace", maxGap: 113 * time.Second, near: 1, over: 1, open: true, pls: []PriorityLevelCount{}}}},
		{name: "a kubelet silent after its Node was deleted is the zombie table's",
			evs: append(append(renewals(nodeA, 0, 100, -1, -1), ev{at: 95, verb: "delete", user: admin, res: "nodes", name: nodeA, code: 200}),
				renewals(nodeB, 3, 210, -1, -1)...)},
		{name: "a silence of the whole log is no node's gap", silences: 1, unjudged: 2,
			evs: append(append(renewals(nodeA, 0, 100, -1, -1), renewals(nodeB, 3, 100, -1, -1)...),
				append(renewals(nodeA, 160, 300, -1, -1), renewals(nodeB, 163, 300, -1, -1)...)...)},
		{name: "the log's last event long after the rest: no open gap is judged", silences: 1,
			evs: append(renewals(nodeA, 0, 100, -1, -1), tail(200))},
		{name: "a Node deleted and its name reused later: no gap across the two kubelets",
			evs: append(append(append(renewals(nodeA, 0, 100, -1, -1), ev{at: 95, verb: "delete", user: admin, res: "nodes", name: nodeA, code: 200},
				ev{at: 300, verb: "create", user: userA, res: "nodes", name: nodeA, code: 201}), renewals(nodeA, 305, 400, -1, -1)...),
				renewals(nodeB, 3, 400, -1, -1)...)},
		{name: "--node lists a healthy kubelet too", opts: Options{Node: nodeB},
			evs:   append(renewals(nodeA, 0, 300, 100, 140), renewals(nodeB, 3, 300, -1, -1)...),
			nodes: map[string]want{nodeB: {status: "healthy", maxGap: 10 * time.Second, pls: []PriorityLevelCount{}}}},
		{name: "--user of a kubelet lists it", opts: Options{User: userA},
			evs:   append(renewals(nodeA, 0, 300, -1, -1), renewals(nodeB, 3, 300, 103, 133)...),
			nodes: map[string]want{nodeA: {status: "healthy", maxGap: 10 * time.Second, pls: []PriorityLevelCount{}}}},
		{name: "--node keeps that node", opts: Options{Node: nodeB},
			evs:   append(renewals(nodeA, 0, 300, 100, 140), renewals(nodeB, 3, 300, 103, 133)...),
			nodes: map[string]want{nodeB: {status: "near-grace", maxGap: 40 * time.Second, near: 1, throttled: 3, throttledInGap: 3, pls: nodeHigh(3)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In time order, as a log is: the cases list each kubelet's events in turn.
			slices.SortStableFunc(tc.evs, func(x, y ev) int { return cmp.Compare(x.at, y.at) })
			r := analyzeEvents(t, tc.opts, tc.evs...)
			h := r.Heartbeats
			if h.Kubelets == 0 || h.Renewals == 0 || h.IntervalP50 != 11*time.Second {
				t.Errorf("fleet: %d kubelets, %d renewals, p50 ≤ %s; want renewals every 10 s (p50 ≤ 11s)", h.Kubelets, h.Renewals, h.IntervalP50)
			}
			if h.LogSilences != tc.silences || h.Unjudged != tc.unjudged {
				t.Errorf("log silences %d, unjudged intervals %d; want %d, %d", h.LogSilences, h.Unjudged, tc.silences, tc.unjudged)
			}
			got := map[string]NodeHeartbeat{}
			for _, n := range h.Nodes {
				got[n.Node] = n
			}
			if len(got) != len(tc.nodes) {
				t.Errorf("named %+v, want %v", h.Nodes, tc.nodes)
			}
			var over, near int
			for node, w := range tc.nodes {
				n, ok := got[node]
				if !ok {
					t.Errorf("%s not named", node)
					continue
				}
				if n.Status != w.status || n.MaxGap != w.maxGap || n.NearGraceGaps != w.near || n.OverGraceGaps != w.over ||
					n.Throttled != w.throttled || n.ThrottledInGap != w.throttledInGap || n.MaxGapOpen != w.open ||
					n.MaxGapTo.Sub(n.MaxGapFrom) != w.maxGap || len(n.PriorityLevels) != len(w.pls) {
					t.Errorf("%s: %+v, want %+v", node, n, w)
				}
				for i := range w.pls {
					if i < len(n.PriorityLevels) && n.PriorityLevels[i] != w.pls[i] {
						t.Errorf("%s priority levels %+v, want %+v", node, n.PriorityLevels, w.pls)
					}
				}
				switch w.status {
				case "over-grace":
					over++
				case "near-grace":
					near++
				}
			}
			if h.OverGrace != over || h.NearGrace != near {
				t.Errorf("fleet counts %d over, %d near; want %d, %d", h.OverGrace, h.NearGrace, over, near)
			}
		})
	}
}

func TestHeartbeatOptionsRefused(t *testing.T) {
	_, err := AnalyzeReader("x", nil, Options{NodeMonitorGracePeriod: 10 * time.Second, LeaseRenewInterval: 10 * time.Second})
	if err == nil {
		t.Fatal("a renew interval as long as the grace period was accepted")
	}
}
