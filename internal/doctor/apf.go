package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

const rejectedMetric = "apiserver_flowcontrol_rejected_requests_total"

// CheckAPF reports the requests APF rejected, per priority level, from the API server's metrics.
// It returns the number of priority levels seen (the section's checked count).
func CheckAPF(samples []clusterread.Sample) ([]findings.Finding, int) {
	levels := map[string]bool{}
	type agg struct {
		total   float64
		reasons map[string]float64
		flows   map[string]float64
	}
	rejected := map[string]*agg{}
	for _, s := range samples {
		pl := s.Labels["priority_level"]
		if pl == "" {
			continue
		}
		levels[pl] = true
		if s.Name != rejectedMetric || s.Value <= 0 {
			continue
		}
		a := rejected[pl]
		if a == nil {
			a = &agg{reasons: map[string]float64{}, flows: map[string]float64{}}
			rejected[pl] = a
		}
		a.total += s.Value
		a.reasons[s.Labels["reason"]] += s.Value
		a.flows[s.Labels["flow_schema"]] += s.Value
	}
	var out []findings.Finding
	for _, pl := range slices.Sorted(maps.Keys(rejected)) {
		a := rejected[pl]
		out = append(out, RuleAPFRejected.New("prioritylevelconfiguration/"+pl,
			"%.0f requests rejected since the API server started (%s) from flow schemas %s",
			a.total, topCounts(a.reasons, 0), topCounts(a.flows, 5)))
	}
	return out, len(levels)
}

// topCounts formats "a 10, b 3" sorted by count, at most limit entries (0 = all).
func topCounts(m map[string]float64, limit int) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range m {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].v != list[j].v {
			return list[i].v > list[j].v
		}
		return list[i].k < list[j].k
	})
	var parts []string
	for i, e := range list {
		if limit > 0 && i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-limit))
			break
		}
		k := e.k
		if k == "" {
			k = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", k, e.v))
	}
	return strings.Join(parts, ", ")
}
